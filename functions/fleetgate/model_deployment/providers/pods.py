"""The engine pods every pod-based provider runs: a Deployment, and a Service in front.

Direct puts the Service behind the route; LLMD puts an InferencePool over
the same pods. Part of the contract with both: pods carry the workload
selector label, and the engine listens on the container port named ``http``.
"""

from collections.abc import Mapping
from typing import Any

from fleetgate.core.observed import remote_manifest
from fleetgate.model_deployment.providers.base import Manifest, Workload

GPU_RESOURCE = "nvidia.com/gpu"
ENGINE_PART = "engine"

# Ready while at least one engine pod serves. A Deployment's own Available
# condition turns False while it scales up (e.g. 1 → 2 replicas needs both),
# which would withdraw a cluster's endpoint exactly when it is adding capacity.
SERVING_QUERY = (
    "has(object.status) && has(object.status.availableReplicas) && "
    "object.status.availableReplicas > 0"
)


def metadata(workload: Workload, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": workload.namespace, "labels": dict(workload.labels)}


def _probe(workload: Workload, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": workload.engine.health_path, "port": "http"},
        "periodSeconds": period,
        "failureThreshold": failures,
    }


def engine_container(workload: Workload) -> dict[str, Any]:
    engine = workload.engine
    container: dict[str, Any] = {"name": "engine", "image": engine.image}
    if engine.command:
        container["command"] = list(engine.command)
    if engine.args:
        container["args"] = list(engine.args)
    container["env"] = [{"name": k, "value": v} for k, v in engine.env]
    container["ports"] = [{"name": "http", "containerPort": engine.port, "protocol": "TCP"}]
    # Loading weights can take many minutes: the startup probe allows 30 of
    # them before liveness (which restarts a wedged engine) takes over.
    container["startupProbe"] = _probe(workload, period=10, failures=180)
    container["readinessProbe"] = _probe(workload, period=5, failures=3)
    container["livenessProbe"] = _probe(workload, period=10, failures=6)
    if workload.gpus > 0:
        count = str(workload.gpus)
        container["resources"] = {
            "requests": {GPU_RESOURCE: count},
            "limits": {GPU_RESOURCE: count},
        }
        # Tensor-parallel engines share tensors through /dev/shm, which
        # defaults to 64Mi in a container.
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return container


def engine_deployment(workload: Workload) -> Manifest:
    labels = {**workload.labels, **workload.selector}
    pod: dict[str, Any] = {
        "containers": [engine_container(workload)],
        # Room for in-flight generations to finish when a replica is removed.
        "terminationGracePeriodSeconds": 130,
    }
    if workload.gpus > 0:
        pod["tolerations"] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
        pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(workload, workload.name),
        "spec": {
            "replicas": workload.replicas,
            "selector": {"matchLabels": dict(workload.selector)},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def engine_service(workload: Workload) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(workload, workload.name),
        "spec": {
            "selector": dict(workload.selector),
            "ports": [
                {
                    "name": "http",
                    "port": workload.engine.port,
                    "targetPort": "http",
                    "protocol": "TCP",
                }
            ],
        },
    }


def ready_engine_replicas(observed: Mapping[str, Manifest | None]) -> int:
    """Ready replicas of the engine Deployment, as the cluster last reported them."""
    status = (remote_manifest(observed.get(ENGINE_PART)) or {}).get("status") or {}
    ready = status.get("readyReplicas")
    # Numbers arrive as floats: a protobuf Struct has no integers.
    if isinstance(ready, bool) or not isinstance(ready, int | float) or ready < 0:
        return 0
    return int(ready)
