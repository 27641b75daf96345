"""The engine pods every pod-based provider runs: a Deployment, and a Service in front.

Direct puts the Service behind the route; LLMD puts an InferencePool over
the same pods. Part of the contract with both: pods carry the workload
selector label, and the engine listens on the container port named ``http``.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from fleetgate.core.observed import ABSENT, Observed
from fleetgate.model_deployment.overrides import (
    NodeSelector,
    PodMetadata,
    Strict,
    Tolerations,
    merge,
    upstream,
)
from fleetgate.model_deployment.providers.base import (
    Manifest,
    RemotePart,
    Rendered,
    Renderer,
    Workload,
)

GPU_RESOURCE = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
SHM_VOLUME = "dshm"
ENGINE_PART = "engine"

# Ready while at least one engine pod serves. A Deployment's own Available
# condition turns False while it scales up (e.g. 1 → 2 replicas needs both),
# which would withdraw a cluster's endpoint exactly when it is adding capacity.
# Scaled to zero by its scaler (spec.scaling), it is as asked: Ready too.
SERVING_QUERY = (
    "(has(object.spec) && has(object.spec.replicas) && object.spec.replicas < 1) || "
    "(has(object.status) && has(object.status.availableReplicas) && "
    "object.status.availableReplicas > 0)"
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
    return with_gpus(workload, container)


def with_gpus(workload: Workload, container: dict[str, Any]) -> dict[str, Any]:
    """``container`` asking for the workload's GPUs (none on CPU), /dev/shm mounted."""
    if workload.gpus > 0:
        count = str(workload.gpus)
        container["resources"] = {
            "requests": {GPU_RESOURCE: count},
            "limits": {GPU_RESOURCE: count},
        }
        # Tensor-parallel engines share tensors through /dev/shm, which
        # defaults to 64Mi in a container.
        container["volumeMounts"] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    return container


def gpu_pod(workload: Workload, pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` with what a GPU engine needs: the GPU taint tolerated, a RAM-backed /dev/shm."""
    if workload.gpus > 0:
        pod["tolerations"] = [dict(GPU_TOLERATION)]
        pod["volumes"] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}]
    return pod


def pod_spec(workload: Workload) -> dict[str, Any]:
    """The engine's pod: one engine container, room to finish in-flight generations."""
    return gpu_pod(
        workload,
        {
            "containers": [engine_container(workload)],
            # Room for in-flight generations to finish when a replica is removed.
            "terminationGracePeriodSeconds": 130,
        },
    )


def engine_deployment(workload: Workload) -> Manifest:
    """The engine Deployment, with the team's accepted ``spec`` override merged in."""
    labels = {**workload.labels, **workload.selector}
    pod = pod_spec(workload)
    base: Manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(workload, workload.name),
        "spec": {
            "replicas": workload.replicas,
            "selector": {"matchLabels": dict(workload.selector)},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    return merge(base, upstream(workload.overrides))


def engine_part(workload: Workload) -> RemotePart:
    """The engine Deployment, Ready while it serves (``SERVING_QUERY``)."""
    return RemotePart(ENGINE_PART, engine_deployment(workload), SERVING_QUERY, scaled=True)


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


def ready_engine_replicas(observed: Mapping[str, Observed]) -> int:
    """Ready replicas of the engine Deployment, as the cluster last reported them."""
    ready = observed.get(ENGINE_PART, ABSENT).remote.get("status", "readyReplicas")
    # Numbers arrive as floats: a protobuf Struct has no integers.
    if isinstance(ready, bool) or not isinstance(ready, int | float) or ready < 0:
        return 0
    return int(ready)


def all_or_none(observed: Mapping[str, Observed], part: str, condition: str, n: int) -> int:
    """``n`` once the remote object ``part`` reports ``condition`` True, else 0.

    For upstream kinds that report readiness for the whole workload, not per replica.
    """
    return n if observed.get(part, ABSENT).remote.has_condition(condition) else 0


# --- what a team may override on the engine Deployment (Direct, LLMD) -------------
# Scheduling and rollout, nothing that changes what runs or how much of it:
# the container, its command and its resources stay Fleetgate's.


class PodSpecOverride(Strict):
    node_selector: NodeSelector | None = None
    tolerations: Tolerations | None = None
    termination_grace_period_seconds: Annotated[int, Field(ge=0, le=3600)] | None = None


class PodTemplateOverride(Strict):
    metadata: PodMetadata | None = None
    spec: PodSpecOverride | None = None


IntOrPercent = Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]{1,3}%$")]


class RollingUpdate(Strict):
    max_surge: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None


class Strategy(Strict):
    type: Literal["RollingUpdate", "Recreate"] | None = None
    rolling_update: RollingUpdate | None = None


class DeploymentSpecOverride(Strict):
    strategy: Strategy | None = None
    min_ready_seconds: Annotated[int, Field(ge=0, le=3600)] | None = None
    progress_deadline_seconds: Annotated[int, Field(ge=1, le=86400)] | None = None
    revision_history_limit: Annotated[int, Field(ge=0, le=100)] | None = None
    template: PodTemplateOverride | None = None


class DeploymentOverrides(Strict):
    """``spec``: merged into the engine Deployment's spec."""

    spec: DeploymentSpecOverride | None = None


class CommandEngine(Renderer):
    """A provider that runs the user's command line as written, in the engine Deployment
    (``engine_part``), with what routes to it in front: Direct, LLMD."""

    # Applied to the engine Deployment.
    overrides: type[BaseModel] = DeploymentOverrides
    starts_engine: bool = False
    scales: bool = True

    def front(self, workload: Workload) -> tuple[tuple[RemotePart, ...], Manifest]:
        """The parts in front of the engine, and the backend the route targets."""
        raise NotImplementedError

    def render(self, workload: Workload) -> Rendered:
        parts, backend = self.front(workload)
        return Rendered(parts=(engine_part(workload), *parts), backend_ref=backend)

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        return ready_engine_replicas(observed)
