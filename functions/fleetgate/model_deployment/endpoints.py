"""The ModelEndpoint XR published for each cluster a deployment serves from."""

from collections.abc import Mapping

from fleetgate.core import names
from fleetgate.core.constants import API_VERSION, LABEL_CLUSTER, LABEL_DEPLOYMENT, LABEL_PREFIX
from fleetgate.model_deployment import naming
from fleetgate.model_deployment.providers.base import Manifest


def api_prefix(namespace: str, name: str) -> str:
    """The path of the engine's OpenAI API behind a cluster gateway."""
    return f"/{namespace}/{name}/v1"


def endpoint_labels(
    template: Mapping[str, str], placement: Mapping[str, str], deployment: str, cluster: str
) -> dict[str, str]:
    """Template labels, then the cluster's placement labels, then the managed labels.

    Later sources win a key collision. Keys under ``fleetgate.dev/`` are
    Fleetgate's own: the XRDs refuse them in both sources, and any that slip
    through are dropped rather than trusted.
    """
    labels = {k: v for k, v in template.items() if not k.startswith(LABEL_PREFIX)}
    labels.update({k: v for k, v in placement.items() if not k.startswith(LABEL_PREFIX)})
    labels[LABEL_DEPLOYMENT] = names.label_value(deployment)
    labels[LABEL_CLUSTER] = names.label_value(cluster)
    return dict(sorted(labels.items()))


def model_endpoint(
    *,
    namespace: str,
    deployment: str,
    cluster: str,
    hostname: str,
    served_model: str,
    labels: Mapping[str, str],
) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelEndpoint",
        "metadata": {
            "name": naming.endpoint(deployment, cluster),
            "namespace": namespace,
            "labels": dict(labels),
        },
        "spec": {
            "origin": f"https://{hostname}",
            "api": {"schema": "OpenAI", "prefix": api_prefix(namespace, deployment)},
            "model": served_model,
        },
    }
