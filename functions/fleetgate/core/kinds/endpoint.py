"""The ModelEndpoint XR."""

from typing import Annotated, Literal

from pydantic import Field

from fleetgate.core.kinds.governance import Pricing
from fleetgate.core.models import LONG_NAME_MAX, Composite, Model, SecretKey, SecretKeyRef


class EndpointAPI(Model):
    schema_: Literal["OpenAI", "Anthropic"] = Field("OpenAI", alias="schema")
    prefix: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)] = "/v1"


class CredentialRef(SecretKeyRef):
    key: SecretKey = "apiKey"


class ModelEndpointSpec(Model):
    # https:// and a 253-character host with a port: what the XRD allows.
    origin: Annotated[str, Field(min_length=1, max_length=267)]
    api: EndpointAPI = Field(default_factory=EndpointAPI)
    model: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)] | None = None
    credential_ref: CredentialRef | None = None
    pricing: Pricing | None = None


class ModelEndpoint(Composite):
    spec: ModelEndpointSpec
