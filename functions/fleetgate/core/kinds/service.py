"""The ModelService XR."""

from typing import Annotated

from pydantic import Field

from fleetgate.core.models import Composite, LabelSelector, Model


class ServiceEndpointEntry(Model):
    selector: LabelSelector
    weight: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    priority: Annotated[int, Field(ge=0, le=63)] = 0


class ModelServiceSpec(Model):
    endpoints: Annotated[list[ServiceEndpointEntry], Field(min_length=1, max_length=32)]


class ModelService(Composite):
    spec: ModelServiceSpec
