"""What caller governance shares across kinds: caller names, limits and prices.

A caller's identity is the name of its key in a caller-key Secret (the
gateway's API-key authentication stamps it on each request). A limit counts
requests, tokens or cost per caller over a period; a price turns an
endpoint's token counts into cost. See ``fleetgate.core.governance`` for how
they become Envoy Gateway rate-limit rules and AI Gateway costs.
"""

from decimal import Decimal
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from fleetgate.core.models import Model, ObjectName

# A key name of a Secret: the syntax of a caller's identity.
CallerName = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
ACCESS_CALLERS_MAX = 256
ACCESS_GROUPS_MAX = 64
# Rate-limit rules Envoy Gateway takes per policy: 256 (api/v1alpha1/
# ratelimit_types.go:57, v1.8.3); a limit narrowed to many callers may take
# several, so the entries are bounded well below.
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

    requests: Annotated[int, Field(ge=1, le=LIMIT_AMOUNT_MAX)] | None = None
    tokens: Annotated[int, Field(ge=1, le=LIMIT_AMOUNT_MAX)] | None = None
    cost: Decimal6 | None = None
    per: Period

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
        default_factory=list
    )
    # Caller-key Secrets in the system namespace: each of their keys.
    groups: Annotated[list[ObjectName], Field(max_length=ACCESS_GROUPS_MAX)] = Field(
        default_factory=list
    )

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


class Pricing(Model):
    """Price per 1,000,000 tokens; cached input tokens cost as input unless priced."""

    input_tokens: Decimal6 = "0"
    cached_input_tokens: Decimal6 | None = None
    output_tokens: Decimal6 = "0"
