"""The ModelEndpoint XR."""

from typing import Annotated, Literal

from pydantic import Field

from fleetgate.core.kinds.governance import Pricing
from fleetgate.core.models import LONG_NAME_MAX, Composite, Model, SecretKey, SecretKeyRef


class EndpointAPI(Model):
    schema_: Literal["OpenAI", "Anthropic"] = Field("OpenAI", alias="schema")
    """API dialect of the backend: OpenAI (the default) or Anthropic. The gateway translates
    between the caller's dialect and this one."""
    prefix: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)] = Field(
        "/v1",
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.matches('^/[^?#\\\\s]*$')",
                    "message": (
                        "spec.api.prefix must start with / and contain no query (?), fragment "
                        "(#) or whitespace"
                    ),
                },
            ],
        },
    )
    """Path prefix of the API on the origin, starting with /. Defaults to /v1. Fleet-hosted
    endpoints use /<namespace>/<deployment>/v1."""


class CredentialRef(SecretKeyRef):
    key: SecretKey = "apiKey"
    """Key of the Secret holding the API key. Defaults to apiKey."""


class ModelEndpointSpec(Model):
    # https:// and a 253-character host with a port: what the XRD allows.
    origin: Annotated[str, Field(min_length=1, max_length=267)] = Field(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.startsWith('https://') || self.startsWith('http://')",
                    "message": "spec.origin must start with https:// or http://",
                },
                {
                    "rule": (
                        "!self.matches('^[a-zA-Z][-+.a-zA-Z0-9]*://(\\\\[|([^/?#@:]*[.]"
                        ")?(0[xX][0-9a-fA-F]*|[0-9]+)([:/?#]|$))')"
                    ),
                    "message": (
                        "spec.origin host must be a DNS name, not an IPv4 or IPv6 address "
                        "(Envoy AI Gateway drops model rewriting, credentials and failover for "
                        "address-typed backends)"
                    ),
                },
                {
                    "rule": (
                        "!self.matches(':[0-9]*$') || "
                        "self.matches(':([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}"
                        "|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$')"
                    ),
                    "message": (
                        "spec.origin port must be a number from 1 to 65535 without leading zeros"
                    ),
                },
                {
                    "rule": (
                        "self.matches('^https?://([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?["
                        ".])*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(:[0-9]{1,5})?$')"
                    ),
                    "message": (
                        "spec.origin must be scheme://host[:port] with a lowercase DNS host "
                        "and nothing after it (no path, trailing slash, query, fragment or "
                        "user info), e.g. https://api.openai.com"
                    ),
                },
            ],
        }
    )
    """Where the backend is: https://host[:port] or http://host[:port], with no path and no
    trailing slash (put the path in api.prefix). The host must be a lowercase DNS name: IPv4
    and IPv6 literals are rejected, because Envoy AI Gateway stops applying model rewriting,
    credentials and priority failover to a route with an address-typed backend. The port
    defaults to 443 for https and 80 for http. Examples: https://api.openai.com,
    http://vllm.models.svc:8000."""
    api: EndpointAPI = Field(default_factory=EndpointAPI)
    """The API the backend speaks. Every field has a default."""
    model: Annotated[str, Field(min_length=1, max_length=LONG_NAME_MAX)] | None = None
    """The name this backend knows the model by; the gateway rewrites the caller's model name to
    it. Unset, the caller's model name passes through unchanged."""
    credential_ref: CredentialRef | None = None
    """A Secret in this endpoint's namespace holding the backend's API key. The gateway sends it
    to the backend; callers never see it. Until the Secret and key exist the endpoint is not
    ready (reason CredentialMissing)."""
    pricing: Pricing | None = None
    """What this endpoint's tokens cost, per 1,000,000 tokens, as decimal strings in the
    platform's currency. Absent: it costs 0. Each answered request's cost goes into the usage
    record and counts against cost limits."""


class ModelEndpoint(Composite):
    spec: ModelEndpointSpec
    """Desired state of the ModelEndpoint."""
