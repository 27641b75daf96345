"""The InferenceGateway XR."""

from typing import Annotated, Self

from pydantic import Field, model_validator

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


class GatewayTLS(Model):
    certificate_refs: Annotated[list[ObjectRef], Field(min_length=1, max_length=8)]


class GatewayAuth(Model):
    secret_selector: NonEmptySelector
    # Per caller, across every model the gateway serves.
    limits: CallerLimits = Field(default_factory=list)


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


class Monitoring(Model):
    # A PrometheusRule per ModelService routed to more than one tier.
    prometheus_rules: bool = False


class InferenceGatewaySpec(Model):
    cluster_name: ObjectName
    hostname: Annotated[str, Field(min_length=1, max_length=253)] | None = None
    tls: GatewayTLS | None = None
    auth: GatewayAuth | None = None
    service_selector: LabelSelector | None = None
    failover: Failover = Field(default_factory=Failover)
    limits: Limits = Field(default_factory=Limits)
    monitoring: Monitoring = Field(default_factory=Monitoring)

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
    reachable_clusters: list[Name] = Field(default_factory=list, max_length=1024)
    conditions: list[Condition] = Field(default_factory=list)


class InferenceGateway(Composite):
    spec: InferenceGatewaySpec
    status: InferenceGatewayStatus = Field(default_factory=InferenceGatewayStatus)
