"""The ModelService XR."""

from typing import Annotated

from pydantic import Field

from fleetgate.core.kinds.governance import (
    ACCESS_CALLERS_MAX,
    ACCESS_GROUPS_MAX,
    CallerLimits,
    CallerName,
)
from fleetgate.core.models import Composite, Model, NonEmptySelector, ObjectName


class ServiceEndpointEntry(Model):
    selector: NonEmptySelector
    weight: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    priority: Annotated[int, Field(ge=0, le=63)] = 0


class ServiceAccess(Model):
    """Who may call the model; present but empty, nobody."""

    callers: Annotated[list[CallerName], Field(max_length=ACCESS_CALLERS_MAX)] = Field(
        default_factory=list
    )
    # Caller-key Secrets in the system namespace: every key of each may call.
    groups: Annotated[list[ObjectName], Field(max_length=ACCESS_GROUPS_MAX)] = Field(
        default_factory=list
    )
    # Per caller, for this model on each gateway serving it.
    limits: CallerLimits = Field(default_factory=list)


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
    for_: AlertDuration = Field("10m", alias="for")


class ModelServiceSpec(Model):
    endpoints: Annotated[list[ServiceEndpointEntry], Field(min_length=1, max_length=32)]
    access: ServiceAccess | None = None
    failover_alert: FailoverAlert = Field(default_factory=FailoverAlert)


class ModelService(Composite):
    spec: ModelServiceSpec
