"""The ModelService XR."""

from typing import Annotated

from pydantic import ConfigDict, Field

from fleetgate.core.kinds.governance import (
    ACCESS_CALLERS_MAX,
    ACCESS_GROUPS_MAX,
    CallerLimits,
    CallerName,
)
from fleetgate.core.models import Composite, Model, NonEmptySelector, ObjectName


class ServiceEndpointEntry(Model):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.weight) || (self.weight >= 1 && self.weight <= 1000000)",
                    "message": (
                        "spec.endpoints[].weight must be from 1 to 1000000 (weight 0 would "
                        "drop the backend instead of parking it; use priority to hold it in "
                        "reserve)"
                    ),
                },
                {
                    "rule": "!has(self.priority) || (self.priority >= 0 && self.priority <= 63)",
                    "message": "spec.endpoints[].priority must be from 0 to 63",
                },
            ],
        }
    )
    selector: NonEmptySelector
    """Which ModelEndpoints in this namespace the entry covers. Fleet-hosted endpoints carry
    fleetgate.dev/deployment and fleetgate.dev/cluster besides their template and cluster
    placement labels."""
    weight: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    """Share of traffic relative to the other endpoints of the same priority tier, from 1 to
    1000000. Spread over the endpoints the entry matches. Defaults to 1."""
    priority: Annotated[int, Field(ge=0, le=63)] = 0
    """Failover tier from 0 to 63, lower preferred. A tier takes traffic only when no endpoint of
    any lower tier is healthy, strictly: each route's Envoy cluster has its overprovisioning
    factor raised (an EnvoyPatchPolicy), so a partly healthy tier keeps all its traffic
    (Envoy's default would shed a share once a tier is under ~72% healthy). An endpoint is
    unhealthy while the gateway's outlier detection has ejected it
    (failover.outlierDetection); there is no active health check. A failed attempt is retried
    on the next tier first (see the InferenceGateway's failover.retries). Tiers are renumbered
    0..N-1 over those with routable endpoints. Defaults to 0."""


class ServiceAccess(Model):
    """Who may call the model; present but empty, nobody."""

    callers: Annotated[list[CallerName], Field(max_length=ACCESS_CALLERS_MAX)] = Field(
        default_factory=list,
        json_schema_extra={
            "x-kubernetes-list-type": "set",
        },
    )
    """Caller identities allowed: key names in the caller-key Secrets the gateways authenticate
    with. At most 256."""
    groups: Annotated[list[ObjectName], Field(max_length=ACCESS_GROUPS_MAX)] = Field(
        default_factory=list,
        json_schema_extra={
            "x-kubernetes-list-type": "set",
        },
    )
    """Names of caller-key Secrets in fleetgate-system: every key of each is allowed, as the
    Secret holds it now (a key added is allowed, a key removed or the Secret deleted is not).
    At most 64. With callers, at most 4096 callers are allowed: the first by name, the rest
    denied (AccessResolved says so, reason TooManyCallers)."""
    limits: CallerLimits = Field(default_factory=list)
    """How much each allowed caller may use of this model, on each gateway serving it: each
    caller has its own counter per limit and gateway. Over a limit, requests get 429 until the
    period turns. Up to 16, taking at most 256 rate-limit rules in all (one per limit, and one
    per 1024 characters of a narrowing's caller names): more are refused, reason
    TooManyRateLimitRules: each gateway's route keeps the limits it had, or is not served."""


# A share from 0 to below 1, as the XRD spells it; the PromQL takes it verbatim.
Share = Annotated[str, Field(max_length=8, pattern=r"^0(\.[0-9]{1,6})?$")]
# A Prometheus duration of hours, minutes and seconds (a subset of what a
# PrometheusRule's ``for`` takes).
AlertDuration = Annotated[
    str, Field(min_length=2, max_length=15, pattern=r"^([0-9]{1,4}h)?([0-9]{1,4}m)?([0-9]{1,4}s)?$")
]


class FailoverAlert(Model):
    """When FleetgateFailoverActive fires: the fallback share, held for ``for``."""

    threshold: Share = "0.05"
    """Share of the service's requests, over 5 minutes, served by a fallback tier (priority above
    the lowest routed one) above which FleetgateFailoverActive fires: a decimal from 0 (any
    failover) to below 1, up to six places. Defaults to "0.05"."""
    for_: AlertDuration = Field("10m", alias="for")
    """How long the share must stay above the threshold before the alert fires, as a Prometheus
    duration of hours, minutes and seconds (e.g. 10m, 1h30m). Defaults to 10m."""


class ModelServiceSpec(Model):
    endpoints: Annotated[list[ServiceEndpointEntry], Field(min_length=1, max_length=32)]
    """1 to 32 entries, each selecting ModelEndpoints in this namespace by label and giving them
    a weight and a priority. An endpoint matched by two entries belongs to the first."""
    access: ServiceAccess | None = None
    """Who may call this model. Absent: every caller a serving gateway authenticates. Present:
    only the callers listed and the keys of the groups listed; with neither, nobody. A gateway
    without spec.auth never serves a service with access (RoutingReady names it). Enforced on
    each serving gateway after authentication: others get 403."""
    failover_alert: FailoverAlert = Field(default_factory=FailoverAlert)
    """When the FleetgateFailoverActive alert fires for this service, on every gateway whose
    spec.monitoring.prometheusRules is true (see docs/failover.md). Every field
    has a default."""


class ModelService(Composite):
    spec: ModelServiceSpec
    """Desired state of the ModelService."""
