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
    """Name of the InferenceGateway. Remote object names, its client certificate and its cluster
    CA ConfigMaps derive from it."""
    gateway_name: DNSLabel
    """Name of the Gateway on the gateway's cluster the route attaches to."""
    provider_config_name: Name
    """provider-kubernetes ClusterProviderConfig of the gateway's cluster, where every object of
    the route is composed."""
    request_timeout: Duration
    """Deadline of a request, from the gateway's spec.failover.requestTimeout (a Gateway API
    duration)."""
    stream_idle_timeout: Duration
    """Idle time after which a stalled backend is reset so the next priority is tried, from the
    gateway's spec.failover.streamIdleTimeout."""
    section_name: DNSLabel | None = None
    """The Gateway listener the route attaches to: `https` when the gateway has TLS, so models
    are never served on its plain-HTTP listener. Unset, the route attaches to every listener
    (a gateway without TLS)."""


class RouteBackend(Model):
    """One backendRef of the route: a ModelEndpoint, resolved to what the gateway dials."""

    endpoint: Name
    """Name of the ModelEndpoint (in this namespace) the backend is; the remote objects' names
    derive from it. Unique within the route."""
    weight: Annotated[int, Field(ge=1, le=1_000_000)]
    """Share of traffic relative to the backends of the same priority."""
    priority: Annotated[int, Field(ge=0, le=63)]
    """Failover level, 0 first; levels are numbered without gaps over the tiers that have
    backends."""
    model_name_override: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)] | None = None
    """The name the backend knows the model by (the endpoint's spec.model); unset, the caller's
    model name passes through."""
    host: Hostname
    """DNS name of the backend (never an IP address)."""
    port: Annotated[int, Field(ge=1, le=65535)]
    """Port of the backend."""
    schema_: Literal["OpenAI", "Anthropic"] = Field(alias="schema")
    """API dialect of the backend."""
    prefix: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)]
    """Path prefix of the backend's API."""
    tls: BackendTLS
    """How the gateway reaches the backend. Mutual: a fleet-hosted endpoint, over mutual TLS to
    its cluster's gateway (that cluster's CA ConfigMap and the gateway's client certificate),
    the caller header kept. System: a third party over TLS against the system trust store.
    Off: a third party over plain HTTP. A third party never sees x-fleetgate-caller."""
    cluster: Name | None = None
    """The InferenceCluster hosting the endpoint; set exactly when tls is Mutual."""
    credential: SecretKeyRef | None = None
    """The endpoint's API key: a Secret in this namespace, copied onto the gateway's cluster by
    provider-kubernetes (no function writes the value into anything it composes)."""
    pricing: Pricing | None = None
    """What the endpoint's tokens cost, per 1,000,000 tokens, as decimal strings in the
    platform's currency. Absent: it costs 0. Each answered request's cost goes into the usage
    record and counts against cost limits."""

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
    """Share of the service's requests, over 5 minutes, served by a fallback tier (priority above
    the lowest routed one) above which FleetgateFailoverActive fires: a decimal from 0 (any
    failover) to below 1, up to six places. The ModelService's spec.failoverAlert.threshold,
    with its default applied."""
    for_: AlertDuration = Field(alias="for")
    """How long the share must stay above the threshold before the alert fires, as a Prometheus
    duration of hours, minutes and seconds (e.g. 10m, 1h30m). The ModelService's
    spec.failoverAlert.for, with its default applied."""


class RouteAccess(Model):
    """The callers allowed on this route, resolved by the ModelService; empty, nobody."""

    callers: ResolvedCallers = Field(default_factory=list)
    """Caller identities (key names in the gateway's caller-key Secrets) allowed; empty, nobody.
    Enforced by a SecurityPolicy on the generated HTTPRoute."""
    limits: Annotated[list[ResolvedLimit], Field(max_length=LIMITS_MAX)] = Field(
        default_factory=list
    )
    """The service's limits for each caller on this gateway, resolved by the ModelService;
    enforced by a BackendTrafficPolicy on the generated HTTPRoute."""


class ModelRouteSpec(Model):
    model: Annotated[str, Field(min_length=3, max_length=LONG_NAME_MAX)]
    """The public model name the route matches exactly in the x-ai-eg-model header:
    <namespace>/<ModelService name>, where namespace is this ModelRoute's."""
    gateway: RouteGateway
    """The InferenceGateway the route is for."""
    backends: Annotated[list[RouteBackend], Field(min_length=1, max_length=ROUTE_BACKENDS_MAX)]
    """The route's backends in order, 1 to 16 (AI Gateway generates one HTTPRoute rule from them,
    which holds at most 16 backendRefs), one per ModelEndpoint."""
    access: RouteAccess | None = None
    """Who may call the model on this gateway, resolved by the ModelService from its spec.access.
    Absent: every caller the gateway authenticates."""
    failover_alert: RouteFailoverAlert | None = None
    """The ModelService's spec.failoverAlert, set when the gateway composes PrometheusRules (its
    spec.monitoring.prometheusRules); the route composes one when it has more than one tier or
    a priced endpoint."""
    withdraw: bool = False
    """Set by the ModelService once the gateway no longer serves it: the route leaves the
    gateway's cluster at once, each backend in stages (route, then Backend and
    AIServiceBackend, then credential), and status.withdrawn says when nothing is left, so the
    ModelService deletes this ModelRoute only then."""

    @model_validator(mode="after")
    def _one_backend_per_endpoint(self) -> Self:
        # Remote names derive from the endpoint: two entries would compose one object twice.
        endpoints = [b.endpoint for b in self.backends]
        if len(set(endpoints)) != len(endpoints):
            raise ValueError("backends[].endpoint must be unique")
        return self


class ModelRoute(Composite):
    spec: ModelRouteSpec
    """One gateway's route for one ModelService, as the ModelService resolved it."""

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
