"""The HTTPRoute on a cluster gateway that reaches one deployment's engine."""

from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.names import CLUSTER_GATEWAY
from fleetgate.model_deployment.providers.base import Manifest, Workload

GATEWAY_LISTENER = "https"


def path_prefix(namespace: str, name: str) -> str:
    return f"/{namespace}/{name}/"


def http_route(workload: Workload, *, namespace: str, name: str, backend: Manifest) -> Manifest:
    """``PathPrefix /<namespace>/<name>/`` rewritten to ``/``, to ``backend``.

    The engine serves its API at the root (``/v1/...``); the prefix only
    tells deployments apart on the shared cluster gateway.
    """
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": workload.name,
            "namespace": workload.namespace,
            "labels": dict(workload.labels),
        },
        "spec": {
            "parentRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "namespace": SYSTEM_NAMESPACE,
                    "name": CLUSTER_GATEWAY,
                    "sectionName": GATEWAY_LISTENER,
                }
            ],
            "rules": [
                {
                    "matches": [
                        {"path": {"type": "PathPrefix", "value": path_prefix(namespace, name)}}
                    ],
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {
                                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}
                            },
                        }
                    ],
                    "backendRefs": [backend],
                    # Envoy's default 15s route timeout would cut long generations and
                    # token streams; the fleet gateway in front owns the request timeout.
                    "timeouts": {"request": "0s"},
                }
            ],
        },
    }
