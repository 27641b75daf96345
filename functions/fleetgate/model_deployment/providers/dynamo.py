"""Dynamo (experimental): an ``nvidia.com/v1alpha1`` DynamoGraphDeployment.

Experimental because the DynamoGraphDeployment CRD is not in the pinned CRD
set (the Go module proxy refuses the Dynamo module): the object is written
from the operator's Go API types (``deploy/cloud/operator/api/v1alpha1``)
and validated against a schema built from them, not against a pinned CRD.

The graph is a ``Frontend`` (Dynamo's OpenAI server; the operator serves it
as the Service ``<graph>-frontend`` on port 8000, which the route targets)
and the engine workers it routes to:

* **Aggregated**: one ``Worker`` service, a replica per placed replica;
* **Disaggregated**: a ``PrefillWorker`` and a ``DecodeWorker`` service, one
  of each per placed replica (so a replica takes twice its GPU count; placement
  counts it that way). The frontend sends prompts to prefill workers, which
  hand the KV cache to decode workers.

Workers start ``python3 -m dynamo.<engine>`` with the model and the served
model name (``$(FLEETGATE_SERVED_MODEL_NAME)``, the first variable of every
worker) unless the user's args give them.

Overrides: ``spec`` (the graph's environment, and per service its pod
metadata and scheduling) is merged into the object; ``routerMode`` (how the
frontend picks a worker) and ``epp`` are Fleetgate's and never written as
such. ``epp`` puts a Gateway API Inference Extension pool and endpoint
picker (the LLMD provider's, image ``epp.image``) in front of one frontend
per replica, so the cluster gateway balances over frontends by load.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from fleetgate.core.models import EngineType, ServingProvider
from fleetgate.core.observed import ABSENT, Observed
from fleetgate.model_deployment import engine as engines
from fleetgate.model_deployment import naming
from fleetgate.model_deployment.overrides import (
    Envs,
    LabelValue,
    PodMetadata,
    Scheduling,
    Strict,
    Text,
    merge,
    not_ours,
    upstream,
)
from fleetgate.model_deployment.providers import llmd, pods
from fleetgate.model_deployment.providers.base import (
    Manifest,
    RemotePart,
    Rendered,
    Renderer,
    ServingMode,
    Workload,
)

# Deprecated by Dynamo 1.6 for nvidia.com/v1beta1, which the operator stores and
# converts v1alpha1 to. Still v1alpha1 here: no release's v1beta1 CRD or Go types
# could be had to check against (the Go module proxy answers 403 "not available"
# for github.com/ai-dynamo/dynamo, .../deploy/operator and .../deploy/cloud/operator,
# listing and versions alike), and v1beta1 reshapes the spec (``services`` map ->
# ``components`` list), so it is not written from a guess.
API_VERSION = "nvidia.com/v1alpha1"
DYNAMO_VERSION = "0.6.1"
IMAGES: dict[EngineType, str] = {
    "vllm": f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{DYNAMO_VERSION}",
    "sglang": f"nvcr.io/nvidia/ai-dynamo/sglang-runtime:{DYNAMO_VERSION}",
    "trtllm": f"nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:{DYNAMO_VERSION}",
}
FRONTEND = "Frontend"
FRONTEND_PORT = 8000
PART = "graph"
READY_STATE = "successful"
READY_QUERY = (
    f"has(object.status) && has(object.status.state) && object.status.state == '{READY_STATE}'"
)
# The operator names each component's Deployment and Service <graph>-<service>,
# lowercased; the longest here is "-prefillworker".
NAME_MAX = 63 - len("-prefillworker")
PROVIDER_ONLY = frozenset({"routerMode", "epp"})


def services(mode: ServingMode) -> tuple[str, ...]:
    workers = ("PrefillWorker", "DecodeWorker") if mode == "Disaggregated" else ("Worker",)
    return (FRONTEND, *workers)


def graph_name(workload: Workload) -> str:
    return naming.fitted(workload.name, NAME_MAX)


def _disaggregation_args(engine: EngineType, role: str) -> tuple[str, ...]:
    """What tells a worker its half of the work."""
    if engine == "vllm":
        return ("--is-prefill-worker",) if role == "prefill" else ()
    return ("--disaggregation-mode", role)


def worker(workload: Workload, role: str | None) -> dict[str, Any]:
    run = workload.engine
    args = engines.launch_args(run.type, run.args, workload.model)
    if role is not None:
        args += tuple(a for a in _disaggregation_args(run.type, role) if a not in args)
    gpus = str(workload.gpus)
    service: dict[str, Any] = {"componentType": "worker"}
    if role is not None:
        service["subComponentType"] = role
    service |= {
        "replicas": workload.replicas,
        "resources": {"requests": {"gpu": gpus}, "limits": {"gpu": gpus}},
        "envs": [{"name": k, "value": v} for k, v in run.env],
        "extraPodMetadata": {"labels": dict(workload.labels)},
        "extraPodSpec": {
            "mainContainer": {
                "image": run.image,
                "command": ["python3", "-m", f"dynamo.{run.type}"],
                "args": list(args),
            }
        },
    }
    return service


def _options(workload: Workload) -> "DynamoOverrides":
    decoded = workload.overrides
    return decoded if isinstance(decoded, DynamoOverrides) else DynamoOverrides()


def frontend(workload: Workload) -> dict[str, Any]:
    options = _options(workload)
    labels = dict(workload.labels)
    if options.epp is not None:
        labels |= workload.selector  # what the pool selects: the frontends
    service: dict[str, Any] = {
        "componentType": "frontend",
        # Behind a picker, one frontend per replica gives it something to choose from.
        "replicas": workload.replicas if options.epp is not None else 1,
        "extraPodMetadata": {"labels": labels},
        "extraPodSpec": {"mainContainer": {"image": workload.engine.image}},
    }
    if options.router_mode is not None:
        service["envs"] = [{"name": "DYN_ROUTER_MODE", "value": options.router_mode}]
    return service


def graph(workload: Workload) -> Manifest:
    roles: tuple[str | None, ...] = (
        ("prefill", "decode") if workload.mode == "Disaggregated" else (None,)
    )
    names = services(workload.mode)
    base: Manifest = {
        "apiVersion": API_VERSION,
        "kind": "DynamoGraphDeployment",
        "metadata": pods.metadata(workload, graph_name(workload)),
        "spec": {
            "backendFramework": workload.engine.type,
            "services": {
                FRONTEND: frontend(workload),
                **{
                    name: worker(workload, role)
                    for name, role in zip(names[1:], roles, strict=True)
                },
            },
        },
    }
    return merge(base, upstream(workload.overrides, exclude=PROVIDER_ONLY))


# --- overrides --------------------------------------------------------------------


class ServiceOverride(Strict):
    annotations: Annotated[dict[str, Text], Field(max_length=32)] | None = None
    labels: Annotated[dict[str, LabelValue], Field(max_length=32)] | None = None
    extra_pod_metadata: PodMetadata | None = None
    extra_pod_spec: Scheduling | None = None

    @field_validator("labels")
    @classmethod
    def _labels_not_ours(cls, labels: dict[str, str] | None) -> dict[str, str] | None:
        return not_ours(labels)


class GraphSpecOverride(Strict):
    envs: Envs | None = None  # for every service; the workers' own come first
    services: Annotated[dict[str, ServiceOverride], Field(max_length=8)] | None = None

    @field_validator("services")
    @classmethod
    def _rendered_services(
        cls, value: dict[str, ServiceOverride] | None, info: ValidationInfo
    ) -> dict[str, ServiceOverride] | None:
        known = services((info.context or {}).get("mode", "Aggregated"))
        unknown = sorted(set(value or {}) - set(known))
        if unknown:
            # A misspelt service would become a new, empty component of the graph.
            raise ValueError(
                f"no service {', '.join(unknown)} in this graph (services: {', '.join(known)})"
            )
        return value


class EndpointPicker(Strict):
    image: Annotated[str, Field(min_length=1, max_length=1024)] | None = None


class DynamoOverrides(Strict):
    spec: GraphSpecOverride | None = None
    router_mode: Literal["round-robin", "random", "kv"] | None = None
    epp: EndpointPicker | None = None


class Dynamo(Renderer):
    name: ServingProvider = "Dynamo"
    overrides: type[BaseModel] = DynamoOverrides

    def default_image(self, engine: EngineType) -> str | None:
        return IMAGES.get(engine)

    def render(self, workload: Workload) -> Rendered:
        parts = [RemotePart(PART, graph(workload), READY_QUERY)]
        backend: Manifest = {
            "group": "",
            "kind": "Service",
            "name": f"{graph_name(workload)}-frontend",
            "port": FRONTEND_PORT,
        }
        picker = _options(workload).epp
        if picker is not None:
            frontends = workload._replace(engine=workload.engine._replace(port=FRONTEND_PORT))
            parts += llmd.pool_parts(frontends, picker.image or llmd.PICKER_IMAGE)
            backend = llmd.pool_backend(frontends)
        return Rendered(parts=tuple(parts), backend_ref=backend)

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        state = observed.get(PART, ABSENT).remote.get("status", "state")
        return replicas if state == READY_STATE else 0
