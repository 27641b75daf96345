"""Typed models of the Fleetgate XRs, validated at the function's edge.

The five XRs of api.md, and ModelRoute: the internal XR compose-model-service
composes per serving gateway (one gateway's resolved route).

The XRDs already enforce most of this in the API server; the models repeat
the shape so that a function never trusts a dict, and so that an XR written
through an older XRD (or a hand-made request) gets a fatal result naming the
field instead of an exception deep inside a builder.

Field names are the camelCase names of api.md; Python attributes are
snake_case. Unknown fields are ignored (Crossplane adds its own under
``spec.crossplane``), wrong types and missing required fields are not.
"""

import functools
import re
import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self, TypeVar, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from fleetgate.core.errors import InputError, describe

NAME_MAX = 253
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
# Gateway API Duration: e.g. 300s, 1m30s, 500ms.
Duration = Annotated[str, Field(pattern=r"^([0-9]{1,5}(h|m|s|ms)){1,4}$")]
# Kubernetes label syntax, as the XRDs check it: an optional DNS-subdomain
# prefix and "/", then a name of 1-63 characters; a value of 0-63 characters.
_LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]"
)
LABEL_PREFIX_MAX = 253


def _label_key(key: str) -> str:
    if not _LABEL_KEY.fullmatch(key) or len(key.rpartition("/")[0]) > LABEL_PREFIX_MAX:
        raise ValueError(
            "a label key is an optional DNS subdomain prefix and '/', then a name of 1 to 63 "
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    return key


LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[
    str, Field(max_length=63, pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
]
Labels = Annotated[dict[LabelKey, LabelValue], Field(max_length=64)]


class Model(BaseModel):
    """Base: camelCase on the wire, extra fields ignored, values immutable.

    Validators are built on first use (``defer_build``), not at import: each
    function reads a handful of these models, and building all of them was a
    third of every cold start. Defaults that are models therefore use
    ``default_factory``: a model instance as a default would build it at import.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
        defer_build=True,
    )


class ObjectMeta(Model):
    name: Name
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class LabelSelector(Model):
    match_labels: Labels = {}


class Condition(Model):
    type: str
    status: str
    reason: str = ""
    message: str = ""


# --- ModelEndpoint ---------------------------------------------------------


# A ModelDeployment publishes ``<namespace>/<name>`` as the model and
# ``/<namespace>/<name>/v1`` as the prefix: up to 317 and 320 characters.
LONG_NAME_MAX = 512


class EndpointAPI(Model):
    schema_: Literal["OpenAI", "Anthropic"] = Field("OpenAI", alias="schema")
    prefix: Annotated[str, Field(max_length=LONG_NAME_MAX)] = "/v1"


class SecretKeyRef(Model):
    name: Name
    key: Annotated[str, Field(min_length=1, max_length=253)]


class CredentialRef(SecretKeyRef):
    key: Annotated[str, Field(min_length=1, max_length=253)] = "apiKey"


class ModelEndpointSpec(Model):
    origin: Annotated[str, Field(min_length=1, max_length=2048)]
    api: EndpointAPI = Field(default_factory=EndpointAPI)
    model: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)] | None = None
    credential_ref: CredentialRef | None = None


# --- InferenceCluster ------------------------------------------------------

ServingProvider = Literal["Direct", "LLMD", "KAITO", "Dynamo", "KubeRay"]


class KubeconfigRef(SecretKeyRef):
    key: Annotated[str, Field(min_length=1, max_length=253)] = "kubeconfig"


class ClusterCredentials(Model):
    secret_ref: KubeconfigRef | None = None
    provider_config_name: Name | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.secret_ref is None) == (self.provider_config_name is None):
            raise ValueError("set exactly one of secretRef or providerConfigName")
        return self


class PlacementMetadata(Model):
    labels: Annotated[dict[LabelKey, LabelValue], Field(max_length=16)] = {}


class ClusterPlacement(Model):
    metadata: PlacementMetadata = Field(default_factory=PlacementMetadata)


class Capacity(Model):
    gpus: Annotated[int, Field(ge=0)] = 0
    gpu_type: str | None = None


class ClusterGatewaySpec(Model):
    class_name: Name = "envoy"


class StackSpec(Model):
    install: bool = False


class KaitoSpec(Model):
    """How KAITO runs on the cluster; read by compose-model-deployment for KAITO Workspaces."""

    # KAITO v0.12.0's default (featureGates.disableNodeAutoProvisioning: false).
    node_auto_provisioning: bool = True
    instance_type: Name | None = None


class InferenceClusterSpec(Model):
    credentials: ClusterCredentials
    placement: ClusterPlacement = Field(default_factory=ClusterPlacement)
    capacity: Capacity = Field(default_factory=Capacity)
    providers: Annotated[list[ServingProvider], Field(max_length=5)] = ["Direct"]
    gateway: ClusterGatewaySpec = Field(default_factory=ClusterGatewaySpec)
    stack: StackSpec = Field(default_factory=StackSpec)
    kaito: KaitoSpec = Field(default_factory=KaitoSpec)
    schedulable: bool = True


class ProviderConfigRef(Model):
    name: str | None = None


class ClusterGatewayStatus(Model):
    address: str | None = None
    ca_certificate: str | None = Field(None, alias="caCertificate")
    hostname: str | None = None


class InferenceClusterStatus(Model):
    provider_config_ref: ProviderConfigRef = Field(default_factory=ProviderConfigRef)
    gateway: ClusterGatewayStatus = Field(default_factory=ClusterGatewayStatus)
    conditions: list[Condition] = []


# --- InferenceGateway ------------------------------------------------------


class ObjectRef(Model):
    name: Name


class GatewayTLS(Model):
    certificate_refs: Annotated[list[ObjectRef], Field(min_length=1, max_length=8)]


class GatewayAuth(Model):
    secret_selector: LabelSelector


class RetryOn(Model):
    http_status_codes: Annotated[
        list[Annotated[int, Field(ge=100, le=599)]], Field(max_length=16)
    ] = [503]


class OutlierDetection(Model):
    consecutive5xx_errors: Annotated[int, Field(ge=1, le=1000)] = Field(
        5, alias="consecutive5xxErrors"
    )
    base_ejection_time: Duration = "30s"


class Failover(Model):
    retries: Annotated[int, Field(ge=0, le=16)] = 3
    retry_on: RetryOn = Field(default_factory=RetryOn)
    request_timeout: Duration = "300s"
    stream_idle_timeout: Duration = "60s"
    outlier_detection: OutlierDetection = Field(default_factory=OutlierDetection)


# Envoy Gateway's connection buffer (32 KiB by default) caps what AI Gateway,
# which buffers whole bodies, can take or give: 1-1024 MiB, in Mi.
BufferLimit = Annotated[str, Field(pattern=r"^([1-9][0-9]{0,2}|10[01][0-9]|102[0-4])Mi$")]


class Limits(Model):
    buffer_limit: BufferLimit = "50Mi"


class InferenceGatewaySpec(Model):
    cluster_name: Name
    hostname: Annotated[str, Field(max_length=253)] | None = None
    tls: GatewayTLS | None = None
    auth: GatewayAuth | None = None
    service_selector: LabelSelector | None = None
    failover: Failover = Field(default_factory=Failover)
    limits: Limits = Field(default_factory=Limits)

    @model_validator(mode="after")
    def _hostname_with_tls(self) -> Self:
        if self.tls is not None and not self.hostname:
            raise ValueError("hostname is required when tls is set")
        return self


class GatewayEndpoints(Model):
    open_ai: str | None = Field(None, alias="openAI")
    anthropic: str | None = None


class InferenceGatewayStatus(Model):
    address: str | None = None
    client_ca_certificate: str | None = Field(None, alias="clientCACertificate")
    endpoints: GatewayEndpoints = Field(default_factory=GatewayEndpoints)
    # Clusters this gateway reaches over mutual TLS right now: its copy of the
    # cluster's CA and its own client certificate are both on its cluster.
    reachable_clusters: Annotated[list[Name], Field(max_length=1024)] = []
    conditions: list[Condition] = []


# --- ModelService ----------------------------------------------------------


class ServiceEndpointEntry(Model):
    selector: LabelSelector
    weight: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    priority: Annotated[int, Field(ge=0, le=63)] = 0


class ModelServiceSpec(Model):
    endpoints: Annotated[list[ServiceEndpointEntry], Field(min_length=1, max_length=32)]


# --- ModelRoute (internal: composed by ModelService, one per serving gateway) --

# An AIGatewayRoute rule holds at most 128 backendRefs.
ROUTE_BACKENDS_MAX = 128
DNSLabel = Annotated[
    str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]
# A lowercase DNS name; the function refuses IP literals on top of this.
Hostname = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    ),
]
# How the gateway reaches a backend: mutual TLS to a fleet cluster gateway,
# TLS against the system trust store, or plain HTTP.
BackendTLS = Literal["Mutual", "System", "Off"]


class RouteGateway(Model):
    """The fleet gateway the route is for, resolved by the ModelService."""

    name: Name
    gateway_name: DNSLabel
    provider_config_name: Name
    request_timeout: Duration
    stream_idle_timeout: Duration
    # The listener the route attaches to (the TLS listener when the gateway has
    # TLS); None attaches it to every listener of the Gateway.
    section_name: DNSLabel | None = None


class RouteBackend(Model):
    """One backendRef of the route: a ModelEndpoint, resolved to what the gateway dials."""

    endpoint: Name
    weight: Annotated[int, Field(ge=1, le=1_000_000)]
    priority: Annotated[int, Field(ge=0, le=63)]
    model_name_override: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)] | None = None
    host: Hostname
    port: Annotated[int, Field(ge=1, le=65535)]
    schema_: Literal["OpenAI", "Anthropic"] = Field(alias="schema")
    prefix: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)]
    tls: BackendTLS
    cluster: Name | None = None
    credential: SecretKeyRef | None = None

    @model_validator(mode="after")
    def _cluster_with_mutual_tls(self) -> Self:
        # The cluster names the CA ConfigMap and marks the endpoint fleet-hosted
        # (caller header kept): it means nothing without mutual TLS, and mutual
        # TLS means nothing without it.
        if (self.tls == "Mutual") != (self.cluster is not None):
            raise ValueError("cluster is set exactly when tls is Mutual")
        return self


class ModelRouteSpec(Model):
    model: Annotated[str, Field(min_length=3, max_length=LONG_NAME_MAX)]
    gateway: RouteGateway
    backends: Annotated[list[RouteBackend], Field(min_length=1, max_length=ROUTE_BACKENDS_MAX)]

    @model_validator(mode="after")
    def _one_backend_per_endpoint(self) -> Self:
        # Remote names derive from the endpoint: two entries would compose one object twice.
        endpoints = [b.endpoint for b in self.backends]
        if len(set(endpoints)) != len(endpoints):
            raise ValueError("backends[].endpoint must be unique")
        return self


# --- ModelDeployment -------------------------------------------------------

EngineType = Literal["vllm", "sglang", "trtllm", "llamacpp"]


class EnvVar(Model):
    name: Annotated[str, Field(min_length=1, max_length=253)]
    value: Annotated[str, Field(max_length=32768)] = ""


class ModelRef(Model):
    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
    source: Annotated[str, Field(max_length=2048)] | None = None


class EngineSpec(Model):
    type: EngineType | None = None
    image: Annotated[str, Field(max_length=1024)] | None = None
    args: Annotated[list[Annotated[str, Field(max_length=4096)]], Field(max_length=128)] = []
    env: Annotated[list[EnvVar], Field(max_length=128)] = []


class ProviderSpec(Model):
    name: ServingProvider | None = None
    overrides: dict[str, Any] | None = None


class GPURequest(Model):
    count: Annotated[int, Field(ge=0, le=64)] | None = None
    type: str | None = None


class ResourceRequest(Model):
    gpu: GPURequest = Field(default_factory=GPURequest)


class DeploymentPlacement(Model):
    cluster_selector: LabelSelector = Field(default_factory=LabelSelector)


class TemplateMetadata(Model):
    labels: Annotated[dict[LabelKey, LabelValue], Field(max_length=16)] = {}


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


# --- XRs -------------------------------------------------------------------


class Composite(Model):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta


class ModelEndpoint(Composite):
    spec: ModelEndpointSpec


class InferenceCluster(Composite):
    spec: InferenceClusterSpec
    status: InferenceClusterStatus = Field(default_factory=InferenceClusterStatus)


class InferenceGateway(Composite):
    spec: InferenceGatewaySpec
    status: InferenceGatewayStatus = Field(default_factory=InferenceGatewayStatus)


class ModelService(Composite):
    spec: ModelServiceSpec


class ModelDeployment(Composite):
    spec: ModelDeploymentSpec


class ModelRoute(Composite):
    spec: ModelRouteSpec

    @model_validator(mode="after")
    def _model_of_this_namespace(self) -> Self:
        # A route only ever carries a model name of its own namespace, so a
        # ModelRoute in one namespace can never answer for another's model.
        namespace = self.metadata.namespace
        if not namespace:
            raise ValueError("metadata.namespace is required: a ModelRoute is namespaced")
        service = self.spec.model.removeprefix(f"{namespace}/")
        if service == self.spec.model or not service or "/" in service:
            raise ValueError("spec.model must be <metadata.namespace>/<ModelService name>")
        return self

    @property
    def service(self) -> str:
        """The name of the ModelService this route belongs to."""
        return self.spec.model.removeprefix(f"{self.metadata.namespace}/")


C = TypeVar("C", bound=Model)


Wire = Mapping[str, "Wire | None"]


@functools.cache
def wire_fields(model: type[BaseModel]) -> Wire | None:
    """The keys ``model`` reads, as spelled on the wire and nested; None for all of them.

    Each key maps to the keys of the model it holds, or to None where the
    field takes any value below it (a dict, a list, a scalar). Converting only
    these from a resource's Struct skips what the model would ignore anyway:
    conditions and server metadata are most of a small object, and models
    read neither. A model that refuses unknown fields gets everything, so
    that it still can.
    """
    if model.model_config.get("extra", "ignore") != "ignore":
        return None
    tree: dict[str, Wire | None] = {}
    for name, info in model.model_fields.items():
        inner = _model_of(info.annotation)
        tree[info.alias or name] = None if inner is None else wire_fields(inner)
    return tree


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``M`` or ``M | None``); None for anything else."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        models = [a for a in get_args(annotation) if a is not type(None)]
        if len(models) == 1:
            return _model_of(models[0])
    return None


def parse(model: type[C], data: Any, where: str) -> C:
    """Validate ``data`` as ``model``; raise InputError naming each bad field.

    ``where`` prefixes field paths, e.g. ``InferenceCluster eu-west`` so a
    message about a required resource says which one is malformed.
    """
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise InputError(f"invalid {where}: {describe(err)}") from None
