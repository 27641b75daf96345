"""The ModelDeployment XR."""

from typing import Annotated, Any, Literal

from pydantic import Field

from fleetgate.core.models import (
    NAME_MAX,
    Composite,
    EngineType,
    GPUType,
    LabelKey,
    LabelSelector,
    LabelValue,
    Model,
    ServingProvider,
)


class EnvVar(Model):
    name: Annotated[
        str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
    ]
    value: Annotated[str, Field(max_length=32768)] = ""


class ModelRef(Model):
    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
    source: Annotated[str, Field(min_length=1, max_length=2048)] | None = None


class EngineSpec(Model):
    type: EngineType | None = None
    image: Annotated[str, Field(min_length=1, max_length=1024)] | None = None
    args: list[Annotated[str, Field(max_length=4096)]] = Field(default_factory=list, max_length=128)
    env: list[EnvVar] = Field(default_factory=list, max_length=128)


class ProviderSpec(Model):
    name: ServingProvider | None = None
    overrides: Annotated[dict[str, Any], Field(max_length=32)] | None = None


class GPURequest(Model):
    count: Annotated[int, Field(ge=0, le=64)] | None = None
    type: GPUType | None = None


class ResourceRequest(Model):
    gpu: GPURequest = Field(default_factory=GPURequest)


class DeploymentPlacement(Model):
    cluster_selector: LabelSelector = Field(default_factory=LabelSelector)


class TemplateMetadata(Model):
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=16)


class EndpointTemplate(Model):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)


class ModelDeploymentSpec(Model):
    model: ModelRef
    engine: EngineSpec = Field(default_factory=EngineSpec)
    provider: ProviderSpec = Field(default_factory=ProviderSpec)
    resources: ResourceRequest = Field(default_factory=ResourceRequest)
    serving_mode: Literal["Aggregated", "Disaggregated"] = "Aggregated"
    replicas: Annotated[int, Field(ge=0, le=1024)] = 1
    placement: DeploymentPlacement = Field(default_factory=DeploymentPlacement)
    template: EndpointTemplate = Field(default_factory=EndpointTemplate)


class ModelDeployment(Composite):
    spec: ModelDeploymentSpec
