"""The ModelService XR."""

from typing import Annotated

from pydantic import Field

from fleetgate.core.models import Composite, LabelSelector, Model, Name

# A caller's identity is the name of its key in a caller-key Secret, so it
# has a Secret key's syntax.
CallerName = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
ACCESS_CALLERS_MAX = 256
ACCESS_GROUPS_MAX = 64


class ServiceEndpointEntry(Model):
    selector: LabelSelector
    weight: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    priority: Annotated[int, Field(ge=0, le=63)] = 0


class ServiceAccess(Model):
    """Who may call the model; present but empty, nobody."""

    callers: Annotated[list[CallerName], Field(max_length=ACCESS_CALLERS_MAX)] = Field(
        default_factory=list
    )
    # Caller-key Secrets in the system namespace: every key of each may call.
    groups: Annotated[list[Name], Field(max_length=ACCESS_GROUPS_MAX)] = Field(default_factory=list)


class ModelServiceSpec(Model):
    endpoints: Annotated[list[ServiceEndpointEntry], Field(min_length=1, max_length=32)]
    access: ServiceAccess | None = None


class ModelService(Composite):
    spec: ModelServiceSpec
