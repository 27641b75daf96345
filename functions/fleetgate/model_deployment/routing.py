"""The HTTPRoute on a cluster gateway that reaches one deployment's engine, and what the
gateway answers there while no engine runs."""

from fleetgate.core import answers
from fleetgate.core.constants import ENVOY_GATEWAY_API, GATEWAY_API, SYSTEM_NAMESPACE
from fleetgate.core.names import CLUSTER_GATEWAY
from fleetgate.model_deployment.providers.base import Manifest, Workload

GATEWAY_LISTENER = "https"
WAKING_PART = "waking"


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
                    "group": GATEWAY_API,
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


def waking_policy(workload: Workload, *, namespace: str, name: str) -> Manifest:
    """What the cluster gateway answers on ``http_route`` while no engine runs: scaled to
    zero, or starting again.

    Envoy's own 503 (no healthy upstream) becomes the fleet's JSON with ``Retry-After``
    (``answers.waking``). It reaches the caller through the fleet gateway as it is,
    a backend's answer there, and passes AI Gateway's upstream processor whole on the
    way: the request counts as the demand that wakes the engine.
    """
    model = f"{namespace}/{name}"
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "BackendTrafficPolicy",
        "metadata": {
            "name": workload.name,
            "namespace": workload.namespace,
            "labels": dict(workload.labels),
        },
        "spec": {
            "targetRefs": [{"group": GATEWAY_API, "kind": "HTTPRoute", "name": workload.name}],
            "responseOverride": [
                answers.waking(
                    model,
                    f"no engine of {model} runs on this cluster right now: scaled to zero "
                    "when idle, it is starting again on requests like this one",
                )
            ],
        },
    }
