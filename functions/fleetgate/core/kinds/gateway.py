"""The InferenceGateway XR."""

from typing import Annotated, Self

from pydantic import ConfigDict, Field, model_validator

from fleetgate.core.kinds.cluster_status import PEM
from fleetgate.core.kinds.governance import CallerLimits
from fleetgate.core.models import (
    Composite,
    Condition,
    Duration,
    LabelSelector,
    Model,
    Name,
    NonEmptySelector,
    ObjectName,
)


class ObjectRef(Model):
    name: ObjectName
    """Name of a kubernetes.io/tls Secret in fleetgate-system."""


class GatewayTLS(Model):
    certificate_refs: Annotated[list[ObjectRef], Field(min_length=1, max_length=8)] = Field(
        json_schema_extra={
            "x-kubernetes-list-map-keys": [
                "name",
            ],
            "x-kubernetes-list-type": "map",
        }
    )
    """1 to 8 kubernetes.io/tls Secrets in the control plane's fleetgate-system namespace.
    Fleetgate copies them onto the gateway's cluster with provider-kubernetes patchesFrom, so
    no key appears in desired state."""


class GatewayAuth(Model):
    secret_selector: NonEmptySelector
    """Selects caller-key Secrets in the control plane's fleetgate-system namespace. Each key of
    a selected Secret is one caller: the key name is the caller's identity and the value its
    API key. Keys are accepted from "Authorization: Bearer <key>" and from "x-api-key"; the
    identity is passed on as the x-fleetgate-caller header. An empty selector is refused: it
    would turn every Secret in fleetgate-system, kubeconfigs included, into caller keys."""
    limits: CallerLimits = Field(default_factory=list)
    """How much each caller may use across every model this gateway serves: one counter per
    caller and limit on this gateway (shared by all its routes). Over a limit, requests get
    429 until the period turns. Up to 16, taking at most 256 rate-limit rules in all (one per
    limit, and one per 1024 characters of a narrowing's caller names): more are refused,
    reason TooManyRateLimitRules: the gateway keeps the limits it had, or is not served."""


class RetryOn(Model):
    http_status_codes: Annotated[
        list[Annotated[int, Field(ge=100, le=599)]], Field(max_length=16)
    ] = Field(
        [503],
        json_schema_extra={
            "x-kubernetes-list-type": "set",
        },
    )
    """HTTP status codes that trigger a retry (besides connection failures, resets and refused
    streams, which always do). Defaults to [503]."""


class OutlierDetection(Model):
    consecutive5xx_errors: Annotated[int, Field(ge=1, le=1000)] = Field(
        5, alias="consecutive5xxErrors"
    )
    """Consecutive 5xx answers after which a backend is ejected. Defaults to 5."""
    base_ejection_time: Duration = "30s"
    """Base time an ejected backend stays out, as a Gateway API duration. Defaults to 30s."""


class Failover(Model):
    retries: Annotated[int, Field(ge=0, le=16)] = 3
    """Retries per request, 0 to 16, each to another host. A failed attempt is retried on the
    next priority tier first (numAttemptsPerPriority 1: tier 0, then 1, then 2, …; once every
    tier was tried the tiers are tried again from the preferred one), whether or not the
    failed tier still has healthy endpoints. Triggered by connection failures, resets, refused
    streams and retryOn.httpStatusCodes. Defaults to 3."""
    retry_on: RetryOn = Field(default_factory=RetryOn)
    """Which upstream answers are retried."""
    request_timeout: Duration = "300s"
    """Overall deadline of a request, including streamed chunks and retries, as a Gateway API
    duration (e.g. 300s, 5m, 1m30s). Defaults to 300s."""
    stream_idle_timeout: Duration = "60s"
    """How long a backend may stay silent, e.g. stall before the first token, before its stream
    is reset so the next priority is tried; a Gateway API duration. Defaults to 60s."""
    outlier_detection: OutlierDetection = Field(default_factory=OutlierDetection)
    """Passive health checking that ejects failing backends for a while."""


# Envoy Gateway's connection buffer (32 KiB by default) caps what AI Gateway,
# which buffers whole bodies, can take or give: 1-511 MiB, in Mi. Envoy hands a
# buffered body to AI Gateway's external processor in one gRPC message, which that
# processor takes up to 512 MiB (Envoy AI Gateway v1.1.0 cmd/controller/main.go:229-233,
# passed on at internal/controller/extproc_builder.go:296; its chart sets no other
# value), so one MiB is left for the message around the body.
BufferLimit = Annotated[
    str, Field(max_length=6, pattern=r"^([1-9][0-9]?|[1-4][0-9]{2}|50[0-9]|51[01])Mi$")
]


class Limits(Model):
    buffer_limit: BufferLimit = "50Mi"
    """Connection buffer of every listener and backend connection, in Mi (1Mi to 511Mi). Envoy AI
    Gateway buffers whole request bodies and non-streamed responses, so a body larger than
    this is refused (413 for a request); its external processor takes at most 512 MiB in one
    message, hence the ceiling. Envoy Gateway's own default is 32 KiB, too small for long
    prompts; defaults to 50Mi, as AI Gateway's examples set."""


class Monitoring(Model):
    prometheus_rules: bool = False
    """Compose a PrometheusRule (monitoring.coreos.com/v1) onto this gateway's cluster for every
    ModelService it routes to more than one priority tier or to a priced endpoint: the share
    of requests a fallback tier served and of requests that failed, the alerts
    FleetgateFailoverActive and FleetgateAllTiersFailing, and the service's spend per second
    (fleetgate:modelservice_cost:rate5m). Needs the Prometheus Operator's CRDs there. Defaults
    to false."""


class InferenceGatewaySpec(Model):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.tls) || has(self.hostname)",
                    "message": (
                        "spec.hostname is required when spec.tls is set (the https listener "
                        "and its certificates serve that name)"
                    ),
                },
            ],
        }
    )
    cluster_name: ObjectName = Field(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self == oldSelf",
                    "message": (
                        "spec.clusterName cannot change: the gateway's caller keys, TLS key "
                        "and objects would stay behind on the old cluster; create an "
                        "InferenceGateway on the new cluster, then delete this one"
                    ),
                },
            ],
        }
    )
    """Name of the InferenceCluster the gateway runs on; cannot change once set (re-pointed,
    the same Objects would leave the caller keys and TLS key on the old cluster). Several
    InferenceGateways may share a cluster; every object composed there is named after the
    gateway."""
    hostname: Annotated[str, Field(min_length=1, max_length=253)] | None = Field(
        None,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": (
                        "self.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?[.])*[a-z0"
                        "-9]([-a-z0-9]{0,61}[a-z0-9])?$')"
                    ),
                    "message": (
                        "spec.hostname must be a bare lowercase DNS name (labels of 1-63 "
                        "characters [a-z0-9-], no scheme, port, path, wildcard or trailing dot)"
                    ),
                },
                {
                    "rule": "!self.matches('(^|[.])(0x[0-9a-f]*|[0-9]+)$')",
                    "message": (
                        "spec.hostname must be a DNS name, not an IP address (its last label "
                        "must not be numeric)"
                    ),
                },
            ],
        },
    )
    """DNS name callers use for this gateway, e.g. ai.example.com: lowercase, no scheme, port,
    path or trailing dot, and not an IP address. Required when tls is set. Without it the
    gateway answers plain HTTP on port 80 only."""
    tls: GatewayTLS | None = None
    """Serve HTTPS on port 443 for hostname. Requires hostname. Plain HTTP on port 80 stays
    available for health checks by address."""
    auth: GatewayAuth | None = None
    """Caller authentication by API key. Without auth the gateway serves anyone who reaches it."""
    service_selector: LabelSelector | None = None
    """Which ModelServices this gateway serves, by their labels. Absent (or empty matchLabels)
    serves every ModelService."""
    failover: Failover = Field(default_factory=Failover)
    """Retry, timeout and outlier-detection policy applied to every model this gateway routes.
    Every field has a default."""
    limits: Limits = Field(default_factory=Limits)
    """Sizes the gateway accepts. Every field has a default."""
    monitoring: Monitoring = Field(default_factory=Monitoring)
    """What the gateway gives a platform's Prometheus. Every field has a default."""

    @model_validator(mode="after")
    def _hostname_with_tls(self) -> Self:
        if self.tls is not None and not self.hostname:
            raise ValueError("hostname is required when tls is set")
        return self


# A base URL as a status publishes it.
URL = Annotated[str, Field(max_length=2048)]


class GatewayEndpoints(Model):
    open_ai: URL | None = Field(None, alias="openAI")
    """OpenAI-compatible base URL: https://<hostname>/v1 with tls, else http://<hostname or
    address>/v1."""
    anthropic: URL | None = None
    """Anthropic Messages base URL on the same host, under the /anthropic/v1 prefix."""


class InferenceGatewayStatus(Model):
    address: Annotated[str, Field(max_length=253)] | None = None
    """First address of the gateway's load balancer (IP or DNS name)."""
    client_ca_certificate: PEM | None = Field(None, alias="clientCACertificate")
    """PEM of the CA that issues this gateway's client certificate; clusters trust it for mutual
    TLS. Read from the ConfigMap trust-manager syncs, never from a Secret."""
    reachable_clusters: Annotated[list[Name], Field(max_length=1024)] = Field(
        default_factory=list, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """InferenceClusters this gateway reaches over mutual TLS now: its copy of the cluster's CA and
    its client certificate both exist on its cluster. A ModelService routes a fleet-hosted
    endpoint through this gateway only when its cluster is listed (a Backend missing either is
    unresolved, and Envoy Gateway then answers part of the route's traffic with 500)."""
    endpoints: GatewayEndpoints = Field(default_factory=GatewayEndpoints)
    """Base URLs callers use."""
    conditions: list[Condition] = Field(default_factory=list)


class InferenceGateway(Composite):
    spec: InferenceGatewaySpec
    """Desired state of the InferenceGateway."""
    status: InferenceGatewayStatus = Field(default_factory=InferenceGatewayStatus)
    """Observed state of the InferenceGateway."""
