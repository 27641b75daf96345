"""The ModelDeployment XR."""

import re
from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from fleetgate.core.models import (
    NAME_MAX,
    Composite,
    EndpointLabels,
    EngineType,
    GPUType,
    LabelSelector,
    Model,
    ServingProvider,
)


class EnvVar(Model):
    name: Annotated[
        str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
    ]
    """Variable name."""
    value: Annotated[str, Field(max_length=32768)] = ""
    """Variable value. Defaults to the empty string."""


class ModelRef(Model):
    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
    """Model identifier, e.g. Qwen/Qwen3-8B."""
    source: Annotated[str, Field(min_length=1, max_length=2048)] | None = None
    """Where to load the weights from, e.g. hf://Qwen/Qwen3-8B. Optional."""


class EngineSpec(Model):
    type: EngineType | None = None
    """Engine: vllm, sglang, trtllm or llamacpp. Unset, Fleetgate picks the first the candidate
    providers support for this GPU/CPU and serving mode, in the order vllm, sglang, trtllm,
    llamacpp, and records why in status.engine."""
    image: Annotated[str, Field(min_length=1, max_length=1024)] | None = None
    """Container image of the engine. Unset, the provider's default for the engine."""
    args: list[Annotated[str, Field(max_length=4096)]] = Field(default_factory=list, max_length=128)
    """Engine arguments (at most 128)."""
    env: list[EnvVar] = Field(
        default_factory=list,
        max_length=128,
        json_schema_extra={
            "x-kubernetes-list-map-keys": [
                "name",
            ],
            "x-kubernetes-list-type": "map",
        },
    )
    """Extra environment variables of the engine (at most 128, unique names). An entry named
    FLEETGATE_SERVED_MODEL_NAME is dropped: Fleetgate sets it."""


class ProviderSpec(Model):
    name: ServingProvider | None = None
    """Direct, LLMD, KAITO, Dynamo or KubeRay. Unset, Fleetgate selects one by the selection
    rules (CEL over this spec, with priorities) of the provider catalog in the ModelDeployment
    Composition, among the providers installed on a candidate cluster that run the engine for
    this GPU/CPU need and serving mode. The bundled rules: no GPU: KAITO; trtllm or sglang:
    Dynamo; llamacpp: KAITO; Disaggregated: Dynamo; vllm on more than one GPU: KubeRay; vllm
    on one GPU: Dynamo. Direct and LLMD are used only when named here. The choice is recorded
    in status.provider and kept once made. Dynamo is experimental: its DynamoGraphDeployment
    (nvidia.com/v1beta1) is written to the shape of Dynamo 1.6.1's own templates and is not
    validated against a pinned upstream CRD."""
    overrides: Annotated[dict[str, Any], Field(max_length=32)] | None = None
    """Fields merged into the provider's upstream object (at most 32 top-level keys). Checked by
    Fleetgate, not here: security-sensitive and sizing fields (hostPath, privileged,
    hostNetwork, securityContext, serviceAccountName, replicas, resources, ...) are refused at
    any depth, only the provider's allowed top-level keys are accepted, and a misspelt
    provider field is an error, never dropped. A refused override composes nothing and a
    condition names the offending path."""


class GPURequest(Model):
    count: Annotated[int, Field(ge=0, le=64)] | None = None
    """GPUs per replica, 0 to 64. 0 or unset means CPU only."""
    type: GPUType | None = None
    """GPU model required, e.g. nvidia-h100 (matched against clusters' capacity.gpuType)."""


class ResourceRequest(Model):
    gpu: GPURequest = Field(default_factory=GPURequest)
    """GPUs per replica. Absent or count 0 means the model runs on CPU."""


class DeploymentPlacement(Model):
    cluster_selector: LabelSelector = Field(default_factory=LabelSelector)
    """Selects InferenceClusters by label. Absent or empty selects every schedulable cluster that
    has the provider and the GPUs."""


class TemplateMetadata(Model):
    labels: EndpointLabels = Field(default_factory=dict)
    """Labels (at most 16) put on every published ModelEndpoint so ModelServices can select them.
    On a key collision the cluster's placement labels win, and Fleetgate's managed labels
    (fleetgate.dev/deployment, fleetgate.dev/cluster) win over both; keys under fleetgate.dev/
    are therefore refused here."""


class EndpointTemplate(Model):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    """Metadata of the published ModelEndpoints."""


# Hours, minutes and seconds (e.g. 15m, 1h30m): KEDA counts its cooldown in seconds.
IdleDuration = Annotated[
    str, Field(min_length=2, max_length=15, pattern=r"^([0-9]{1,4}h)?([0-9]{1,4}m)?([0-9]{1,4}s)?$")
]

SCALING_BOUNDS_RULE = "self.minReplicas <= self.maxReplicas"
SCALING_BOUNDS_MESSAGE = "spec.scaling.minReplicas must not exceed spec.scaling.maxReplicas"


class Scaling(Model):
    min_replicas: Annotated[int, Field(ge=0, le=1024)] = 1
    """Fewest replicas across the fleet, 0 to 1024. 0 lets the deployment sleep when idle: no
    replica (and no GPU) runs until a request for the model arrives, and the ModelServices
    routing to it answer from their next priority tier meanwhile. Defaults to 1."""
    max_replicas: Annotated[int, Field(ge=1, le=1024)]
    """Most replicas across the fleet, 1 to 1024, at least minReplicas. Placement reserves
    capacity for this many."""
    idle_after: IdleDuration = "15m"
    """How long no fleet gateway has seen a request for the model before the deployment goes
    down to minReplicas, in hours, minutes and seconds (e.g. 15m, 1h). Defaults to 15m."""
    target_in_flight: Annotated[int, Field(ge=1, le=100000)] = 8
    """Concurrent requests one replica should carry; more in flight adds replicas, up to
    maxReplicas. Defaults to 8."""

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min_replicas > self.max_replicas:
            raise ValueError(SCALING_BOUNDS_MESSAGE)
        return self

    @property
    def idle_seconds(self) -> int:
        """``idle_after`` in seconds."""
        units = {"h": 3600, "m": 60, "s": 1}
        return sum(int(n) * units[u] for n, u in re.findall(r"([0-9]+)([hms])", self.idle_after))


class ModelDeploymentSpec(Model):
    model: ModelRef
    """The model to serve."""
    engine: EngineSpec = Field(default_factory=EngineSpec)
    """The inference engine. Every container of the engine gets
    FLEETGATE_SERVED_MODEL_NAME=<namespace>/<name> as its first environment variable; args
    should pass $(FLEETGATE_SERVED_MODEL_NAME) as the served model name or routed requests are
    answered 404."""
    provider: ProviderSpec = Field(default_factory=ProviderSpec)
    """The serving provider that renders the engine workload."""
    resources: ResourceRequest = Field(default_factory=ResourceRequest)
    """Accelerators each replica needs."""
    serving_mode: Literal["Aggregated", "Disaggregated"] = "Aggregated"
    """Aggregated (the default) runs prefill and decode together; Disaggregated splits them and
    needs a provider that supports it."""
    replicas: Annotated[int, Field(ge=0, le=1024)] = 1
    """Total replicas across the fleet, 0 to 1024. Existing placements are kept; new replicas
    spread over clusters before they pack. Defaults to 1."""
    scaling: Scaling | None = Field(
        None,
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": SCALING_BOUNDS_RULE, "message": SCALING_BOUNDS_MESSAGE},
            ],
        },
    )
    """Scale with demand instead of running a fixed count: between minReplicas and maxReplicas
    (totals across the fleet), by the requests the fleet gateways see for the model whichever
    tier answered them. replicas, when set too, is the starting count, kept within the bounds.
    Only the providers Direct, LLMD and KAITO scale; minReplicas 0 also needs clusters whose
    spec.stack.metrics.prometheusAddress is set. Absent: replicas is fixed."""
    placement: DeploymentPlacement = Field(default_factory=DeploymentPlacement)
    """Where replicas may go."""
    template: EndpointTemplate = Field(default_factory=EndpointTemplate)
    """Template of the ModelEndpoints published for each placed cluster."""


class ModelDeployment(Composite):
    spec: ModelDeploymentSpec
    """Desired state of the ModelDeployment."""
