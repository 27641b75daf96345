"""What caller governance shares across kinds: caller names, limits and prices.

A caller's identity is the name of its key in a caller-key Secret (the
gateway's API-key authentication stamps it on each request). A limit counts
requests, tokens or cost per caller over a period; a price turns an
endpoint's token counts into cost. See ``fleetgate.core.governance`` for how
they become Envoy Gateway rate-limit rules and AI Gateway costs.
"""

from decimal import Decimal
from typing import Annotated, Literal, Self

from pydantic import ConfigDict, Field, model_validator

from fleetgate.core.models import Model, ObjectName

# A key name of a Secret: the syntax of a caller's identity.
CallerName = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
ACCESS_CALLERS_MAX = 256
ACCESS_GROUPS_MAX = 64
# Rate-limit rules Envoy Gateway takes per policy (rateLimit.global.rules):
# 256 (api/v1alpha1/ratelimit_types.go:57, v1.8.3; maxItems at charts/
# gateway-helm/charts/crds/crds/generated/gateway.envoyproxy.io_
# backendtrafficpolicies.yaml:1811). A longer list makes the API server refuse
# the whole policy, so fleetgate.core.governance counts them.
RATE_LIMIT_RULES_MAX = 256
# A limit narrowed to many callers may take several rules, so the entries are
# bounded well below.
LIMITS_MAX = 16
# Envoy's rate-limit counters are 32-bit: a limit's amount is at most this
# (RateLimitValue.Requests, api/v1alpha1/ratelimit_types.go:448-453, v1.8.3).
LIMIT_AMOUNT_MAX = 4_294_967_295
Period = Literal["Second", "Minute", "Hour", "Day", "Month"]
# A decimal number, as a string so that no float rounding ever touches money.
Decimal6 = Annotated[str, Field(max_length=14, pattern=r"^[0-9]{1,7}(\.[0-9]{1,6})?$")]
# Cost is counted in fractions of the currency, the finest whose counter holds
# the limit: millionths up to 4,294.967295, thousandths up to 4,294,967.295.
COST_SCALES = (1_000_000, 1_000)
COST_MAX = Decimal(LIMIT_AMOUNT_MAX) / COST_SCALES[-1]


class Allowance(Model):
    """How much a caller may use per period: exactly one of requests, tokens, cost."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": (
                        "(has(self.requests) ? 1 : 0) + (has(self.tokens) ? 1 : 0) + "
                        "(has(self.cost) ? 1 : 0) == 1"
                    ),
                    "message": "{path} needs exactly one of requests, tokens, cost",
                }
            ]
        }
    )

    requests: Annotated[int, Field(ge=1, le=LIMIT_AMOUNT_MAX)] | None = None
    """Requests per period, each counted as it arrives."""
    tokens: Annotated[int, Field(ge=1, le=LIMIT_AMOUNT_MAX)] | None = None
    """Total tokens (input and output) per period, counted as each response ends; a caller over
    it is refused until the period turns."""
    cost: Decimal6 | None = Field(
        None,
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "!self.matches('^0+([.]0+)?$')", "message": "{path} must be more than 0"}
            ]
        },
    )
    """Cost per period, a decimal in the currency of the endpoints' spec.pricing, counted as each
    response ends (in millionths up to 4294.967295, above that in thousandths, each response
    rounded up, so any response that costs anything counts). At most 4294967.295."""
    per: Period
    """The window the amount is for. Windows are fixed, counted from the Unix epoch as Envoy's
    rate-limit service keeps them (src/utils/utilities.go:20-39): a Day starts at 00:00 UTC, a
    Month is 30 days, not a calendar month."""

    @model_validator(mode="after")
    def _one_amount(self) -> Self:
        amounts = [n for n in ("requests", "tokens", "cost") if getattr(self, n) is not None]
        if len(amounts) != 1:
            raise ValueError(
                "exactly one of requests, tokens, cost is required"
                + (f" (has {', '.join(amounts)})" if amounts else "")
            )
        if self.cost is not None and not 0 < Decimal(self.cost) <= COST_MAX:
            raise ValueError(f"cost must be more than 0 and at most {COST_MAX}")
        return self


class CallerLimit(Allowance):
    """An allowance for each caller separately; narrowed, for only the callers named."""

    callers: Annotated[list[CallerName], Field(max_length=ACCESS_CALLERS_MAX)] = Field(
        default_factory=list,
        json_schema_extra={
            "x-kubernetes-list-type": "set",
        },
    )
    """Only these callers (each separately). With groups, the union."""
    groups: Annotated[list[ObjectName], Field(max_length=ACCESS_GROUPS_MAX)] = Field(
        default_factory=list,
        json_schema_extra={
            "x-kubernetes-list-type": "set",
        },
    )
    """Only the keys of these caller-key Secrets in fleetgate-system (each caller separately). A
    Secret that is missing narrows to nobody (the condition says so). Narrowed to more than 4096
    callers with callers, the limit applies to every caller instead (reason TooManyCallers)."""

    @property
    def narrowed(self) -> bool:
        return bool(self.callers or self.groups)


CallerLimits = Annotated[list[CallerLimit], Field(max_length=LIMITS_MAX)]
# Every caller of up to 256 named and 64 Secrets of keys: bounded so a
# policy stays small.
RESOLVED_CALLERS_MAX = 4096
ResolvedCallers = Annotated[list[CallerName], Field(max_length=RESOLVED_CALLERS_MAX)]


class ResolvedLimit(Allowance):
    """A limit with its narrowing resolved to caller identities; None, every caller."""

    callers: ResolvedCallers | None = None
    """The callers it applies to (each separately), resolved; absent, every caller."""


class Pricing(Model):
    """Price per 1,000,000 tokens; cached input tokens cost as input unless priced."""

    input_tokens: Decimal6 = "0"
    """Price of input tokens that were not cached. Defaults to 0."""
    cached_input_tokens: Decimal6 | None = None
    """Price of cached input tokens. Defaults to the inputTokens price."""
    output_tokens: Decimal6 = "0"
    """Price of output tokens. Defaults to 0."""
