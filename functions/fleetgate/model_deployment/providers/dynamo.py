"""Dynamo (experimental): an ``nvidia.com/v1beta1`` DynamoGraphDeployment.

Written to the shape of Dynamo 1.6.1's own v1beta1 templates (the ``ai-dynamo``
1.6.1 wheel's ``vllm``, ``sglang`` and ``trtllm`` ``agg.yaml``/``disagg.yaml``):
``spec.components`` is a list keyed by ``name``, each with its role in
``type``, its ``replicas`` and one ``podTemplate`` whose engine container is
named ``main``. Experimental because the v1beta1 CRD itself could not be
obtained; what is rendered is checked against a schema derived from those
templates, not against the CRD, and the operator's behaviour is not checked.

The graph is a ``Frontend`` (Dynamo's OpenAI server; the operator serves it
as the Service ``<graph>-frontend`` on port 8000, which the route targets)
and the engine workers it routes to:

* **Aggregated**: one ``Worker`` component (type ``worker``), a replica per
  placed replica;
* **Disaggregated**: a ``PrefillWorker`` and a ``DecodeWorker`` (types
  ``prefill`` and ``decode``), one of each per placed replica (so a replica
  takes twice its GPU count; placement counts it that way). The frontend sends
  prompts to prefill workers, which hand the KV cache to decode workers.

Workers start ``python3 -m dynamo.<engine>`` with the model and the served
model name (``$(FLEETGATE_SERVED_MODEL_NAME)``, the first variable of every
worker) unless the user's args give them.

Overrides keep the keys users write (``spec.envs``; per service in
``spec.services``: ``annotations``, ``labels``, ``extraPodMetadata``,
``extraPodSpec``) and are translated to v1beta1: ``spec.envs`` becomes
``spec.env``, and a service's labels, annotations and scheduling land on its
component's ``podTemplate``. ``routerMode`` (how the frontend picks a worker)
and ``epp`` are Fleetgate's and never written as such. ``epp`` puts a Gateway
API Inference Extension pool and endpoint picker (the LLMD provider's, image
``epp.image``) in front of one frontend per replica, so the cluster gateway
balances over frontends by load.
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

# Dynamo 1.6 serves v1beta1 and deprecates v1alpha1; its templates are v1beta1.
API_VERSION = "nvidia.com/v1beta1"
DYNAMO_VERSION = "1.6.1"
# The runtime images Dynamo 1.6.1's templates run, frontend and workers alike.
IMAGES: dict[EngineType, str] = {
    "vllm": f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{DYNAMO_VERSION}",
    "sglang": f"nvcr.io/nvidia/ai-dynamo/sglang-runtime:{DYNAMO_VERSION}",
    "trtllm": f"nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:{DYNAMO_VERSION}",
}
FRONTEND = "Frontend"
FRONTEND_PORT = 8000
MAIN = "main"  # the container v1beta1 treats as the component's own
GPU = "nvidia.com/gpu"
PART = "graph"
READY_STATE = "successful"
READY_QUERY = (
    f"has(object.status) && has(object.status.state) && object.status.state == '{READY_STATE}'"
)
# The operator names each component's Deployment and Service <graph>-<component>,
# lowercased; the longest here is "-prefillworker".
NAME_MAX = 63 - len("-prefillworker")
PROVIDER_ONLY = frozenset({"routerMode", "epp"})
# Component name -> v1beta1 type, by serving mode.
COMPONENTS: dict[ServingMode, dict[str, str]] = {
    "Aggregated": {FRONTEND: "frontend", "Worker": "worker"},
    "Disaggregated": {FRONTEND: "frontend", "PrefillWorker": "prefill", "DecodeWorker": "decode"},
}
# What tells a disaggregated worker its half of the work and how the KV cache
# crosses, as Dynamo 1.6.1's disagg templates pass it: (flag, value) pairs, each
# added unless the user's args set that flag. vLLM's prefill workers name their
# NIXL connector; SGLang's workers pick NIXL and a bootstrap port and listen on
# every interface. TensorRT-LLM is not served disaggregated here.
DISAGGREGATION: dict[EngineType, dict[str, tuple[tuple[str, str], ...]]] = {
    "vllm": {
        "prefill": (
            ("--disaggregation-mode", "prefill"),
            ("--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'),
        ),
        "decode": (("--disaggregation-mode", "decode"),),
    },
    "sglang": {
        role: (
            ("--disaggregation-mode", role),
            ("--disaggregation-transfer-backend", "nixl"),
            ("--disaggregation-bootstrap-port", "12345"),
            ("--host", "0.0.0.0"),  # the bootstrap server is reached from other pods
        )
        for role in ("prefill", "decode")
    },
}


def services(mode: ServingMode) -> tuple[str, ...]:
    return tuple(COMPONENTS[mode])


def graph_name(workload: Workload) -> str:
    return naming.fitted(workload.name, NAME_MAX)


def _disaggregation_args(engine: EngineType, role: str, args: tuple[str, ...]) -> tuple[str, ...]:
    pairs = DISAGGREGATION.get(engine, {}).get(role, ())
    return tuple(
        x for flag, value in pairs if not engines.given(args, (flag,)) for x in (flag, value)
    )


def _main(
    image: str, command: list[str], args: list[str], env: list[dict[str, str]]
) -> dict[str, Any]:
    main: dict[str, Any] = {"name": MAIN, "image": image, "command": command, "args": args}
    if env:
        main["env"] = env
    return main


def _component(
    name: str, type_: str, replicas: int, labels: Mapping[str, str], main: Manifest
) -> Manifest:
    return {
        "name": name,
        "type": type_,
        "replicas": replicas,
        "podTemplate": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [main]}},
    }


def worker(workload: Workload, name: str, type_: str) -> Manifest:
    run = workload.engine
    args = engines.launch_args(run.type, run.args, workload.model)
    args += _disaggregation_args(run.type, type_, args)
    main = _main(
        run.image,
        ["python3", "-m", f"dynamo.{run.type}"],
        list(args),
        [{"name": k, "value": v} for k, v in run.env],
    )
    # A limit alone, as the templates give it: the API server makes an extended
    # resource's request equal to its limit.
    main["resources"] = {"limits": {GPU: str(workload.gpus)}}
    return _component(name, type_, workload.replicas, workload.labels, main)


def _options(workload: Workload) -> "DynamoOverrides":
    decoded = workload.overrides
    return decoded if isinstance(decoded, DynamoOverrides) else DynamoOverrides()


def frontend(workload: Workload) -> Manifest:
    options = _options(workload)
    labels = dict(workload.labels)
    if options.epp is not None:
        labels |= workload.selector  # what the pool selects: the frontends
    env = []
    if options.router_mode is not None:
        env = [{"name": "DYN_ROUTER_MODE", "value": options.router_mode}]
    main = _main(workload.engine.image, ["python3"], ["-m", "dynamo.frontend"], env)
    # Behind a picker, one frontend per replica gives it something to choose from.
    replicas = workload.replicas if options.epp is not None else 1
    return _component(FRONTEND, "frontend", replicas, labels, main)


def _pod_template(service: Mapping[str, Any]) -> dict[str, Any]:
    """A service override (v1alpha1's keys) as the podTemplate patch v1beta1 takes.

    v1beta1 has one podTemplate where v1alpha1 had a component's labels and
    annotations, its pods' extra metadata and its extra pod spec: labels and
    annotations join extraPodMetadata's on the pods (extraPodMetadata's win),
    and extraPodSpec's scheduling fields join the pod spec.
    """
    own = {k: service[k] for k in ("labels", "annotations") if k in service}
    metadata = merge(own, service.get("extraPodMetadata", {}))
    patch: dict[str, Any] = {}
    if metadata:
        patch["metadata"] = metadata
    if "extraPodSpec" in service:
        patch["spec"] = service["extraPodSpec"]
    return patch


def graph(workload: Workload) -> Manifest:
    wanted = upstream(workload.overrides, exclude=PROVIDER_ONLY).get("spec", {})
    patches = wanted.get("services", {})
    components = [
        frontend(workload) if type_ == "frontend" else worker(workload, name, type_)
        for name, type_ in COMPONENTS[workload.mode].items()
    ]
    spec: dict[str, Any] = {
        "components": [
            merge(c, {"podTemplate": _pod_template(patches.get(c["name"], {}))}) for c in components
        ]
    }
    if "envs" in wanted:
        spec["env"] = wanted["envs"]
    return {
        "apiVersion": API_VERSION,
        "kind": "DynamoGraphDeployment",
        "metadata": pods.metadata(workload, graph_name(workload)),
        "spec": spec,
    }


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
