"""The ModelRoute (internal: composed by ModelService, one per serving gateway) XR."""

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from fleetgate.core.kinds.governance import (
    LIMITS_MAX,
    RESOLVED_CALLERS_MAX,
    Pricing,
    ResolvedCallers,
    ResolvedLimit,
)
from fleetgate.core.kinds.service import AlertDuration, FailoverAlert, Share
from fleetgate.core.models import (
    LONG_NAME_MAX,
    Composite,
    Duration,
    Model,
    Name,
    SecretKeyRef,
)

# AI Gateway v1.1.0 copies an AIGatewayRoute rule's backendRefs into one rule of
# the HTTPRoute it generates (internal/controller/ai_gateway_route.go:253-324), and a
# Gateway API HTTPRoute rule holds at most 16 backendRefs (the pinned CRD), so a
# rule of more is refused there although the AIGatewayRoute takes up to 128.
ROUTE_BACKENDS_MAX = 16
DNSLabel = Annotated[
    str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]
# A lowercase DNS name; the function refuses IP literals on top of this.
Hostname = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
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
    pricing: Pricing | None = None

    @model_validator(mode="after")
    def _cluster_with_mutual_tls(self) -> Self:
        # The cluster names the CA ConfigMap and marks the endpoint fleet-hosted
        # (caller header kept): it means nothing without mutual TLS, and mutual
        # TLS means nothing without it.
        if (self.tls == "Mutual") != (self.cluster is not None):
            raise ValueError("cluster is set exactly when tls is Mutual")
        return self


ROUTE_CALLERS_MAX = RESOLVED_CALLERS_MAX


class RouteFailoverAlert(FailoverAlert):
    """The service's alert, resolved: the ModelService writes both values."""

    threshold: Share
    for_: AlertDuration = Field(alias="for")


class RouteAccess(Model):
    """The callers allowed on this route, resolved by the ModelService; empty, nobody."""

    callers: ResolvedCallers = Field(default_factory=list)
    limits: Annotated[list[ResolvedLimit], Field(max_length=LIMITS_MAX)] = Field(
        default_factory=list
    )


class ModelRouteSpec(Model):
    model: Annotated[str, Field(min_length=3, max_length=LONG_NAME_MAX)]
    gateway: RouteGateway
    backends: Annotated[list[RouteBackend], Field(min_length=1, max_length=ROUTE_BACKENDS_MAX)]
    # Absent: every caller the gateway authenticates.
    access: RouteAccess | None = None
    # Set when the gateway composes PrometheusRules (spec.monitoring).
    failover_alert: RouteFailoverAlert | None = None

    @model_validator(mode="after")
    def _one_backend_per_endpoint(self) -> Self:
        # Remote names derive from the endpoint: two entries would compose one object twice.
        endpoints = [b.endpoint for b in self.backends]
        if len(set(endpoints)) != len(endpoints):
            raise ValueError("backends[].endpoint must be unique")
        return self


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
