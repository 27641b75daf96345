"""Caller governance, as Envoy Gateway and Envoy AI Gateway enforce it.

Who may call: caller identities are key names of caller-key Secrets, and a
group is such a Secret in the system namespace, read as its key names only.

How much: each limit becomes one rule (or several, for a long list of
callers) of an Envoy Gateway ``BackendTrafficPolicy.rateLimit.global``, with a
bucket per caller (a ``Distinct`` match on the caller header the gateway's
authentication sets). Requests count one each; tokens and cost are counted
after each response from the metadata AI Gateway writes (``cost.response``
from ``Metadata``, api/v1alpha1/ratelimit_types.go:146-190 at v1.8.3), with a
request cost of 0 so a caller over its budget is refused before the next call
reaches a backend.

What it cost: a route's endpoints' prices become a CEL cost AI Gateway
evaluates per response with the backend that answered (internal/llmcostcel/
cel.go:19-45, internal/extproc/processor_impl.go:849-895 at v1.1.0).
"""

from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_FLOOR, Decimal
from typing import Any, Final, NamedTuple

from fleetgate.core import envoypatch
from fleetgate.core.constants import (
    AI_GATEWAY_METADATA_NAMESPACE,
    CALLER_HEADER,
    CALLER_METADATA_KEY,
    COST_KEY,
    COST_MILLI_KEY,
    SYSTEM_NAMESPACE,
    TOTAL_TOKENS_KEY,
)
from fleetgate.core.kinds.governance import (
    COST_SCALES,
    LIMIT_AMOUNT_MAX,
    RATE_LIMIT_RULES_MAX,
    RESOLVED_CALLERS_MAX,
    Allowance,
    CallerLimit,
    Pricing,
    ResolvedLimit,
)
from fleetgate.core.names import resource_key
from fleetgate.core.observed import Observed, patch_applied
from fleetgate.core.reconcile import Reconcile, Selector
from fleetgate.core.secrets import SecretKeys
from fleetgate.core.verdict import Verdict

# The metadata key of each cost counter, finest first (see COST_SCALES).
COST_KEYS: Final = dict(zip(COST_SCALES, (COST_KEY, COST_MILLI_KEY), strict=True))
# Envoy Gateway takes a header match value of at most 1024 characters
# (HeaderMatch.Value, api/v1alpha1/ratelimit_types.go:336-341, v1.8.3).
MATCH_VALUE_MAX: Final = 1024
PER_MILLION: Final = Decimal(1_000_000)


def group_key(group: str) -> str:
    """The requirement name of a group's Secret."""
    return resource_key("group-", group)


def require_groups(rec: Reconcile, groups: Iterable[str]) -> dict[str, list[SecretKeys] | None]:
    """Each caller group's Secret in the system namespace, by group: its key names, [] when
    it does not exist, None until Crossplane has looked it up."""
    return {
        group: rec.require_secrets(
            group_key(group), Selector("v1", "Secret", name=group, namespace=SYSTEM_NAMESPACE)
        )
        for group in groups
    }


class Problem(NamedTuple):
    """Why some of a field could not be taken as written, naming the field."""

    # CallersMissing: a group's Secret does not exist; TooManyCallers: more
    # callers than RESOLVED_CALLERS_MAX.
    reason: str
    message: str


class Callers(NamedTuple):
    """Caller identities resolved from names and groups, and what could not be read."""

    callers: list[str]
    problems: list[Problem]


def resolve_callers(
    field: str,
    named: Sequence[str],
    groups: Sequence[str],
    found: Mapping[str, Sequence[SecretKeys]],
) -> Callers:
    """``named`` and every key of each group's Secret, sorted, however many.

    ``found`` holds, per group name, the Secrets Crossplane found by that name
    (none when it does not exist). A missing group adds nobody: it never opens
    anything. Sorted, so a policy never changes with Crossplane's listing order.
    What to do with more than RESOLVED_CALLERS_MAX is the caller's to decide:
    an allow-list is cut (the rest are denied), a limit widened (``resolve_limits``).
    """
    callers = set(named)
    problems = []
    for i, group in enumerate(groups):
        secrets = found.get(group) or ()
        if not secrets:
            problems.append(
                Problem(
                    "CallersMissing",
                    f"{field}.groups[{i}]: Secret {SYSTEM_NAMESPACE}/{group} not found; "
                    "its callers are left out",
                )
            )
        for secret in secrets:
            callers.update(secret.keys)
    return Callers(sorted(callers), problems)


def limit_groups(limits: Sequence[CallerLimit]) -> list[str]:
    """Every group the limits narrow to, once each."""
    return sorted({group for limit in limits for group in limit.groups})


def resolve_limits(
    field: str, limits: Sequence[CallerLimit], found: Mapping[str, Sequence[SecretKeys]]
) -> tuple[list[ResolvedLimit], list[Problem]]:
    """Each limit with its narrowing resolved to callers (None: every caller), and problems.

    A limit narrowed to more than RESOLVED_CALLERS_MAX callers applies to every
    caller: stricter than written, never looser. Cut to the first ones instead,
    the rest would escape it.
    """
    resolved, problems = [], []
    for i, limit in enumerate(limits):
        amount = limit.model_dump(include={"requests", "tokens", "cost", "per"})
        callers: list[str] | None = None
        if limit.narrowed:
            where = f"{field}[{i}]"
            callers, missing = resolve_callers(where, limit.callers, limit.groups, found)
            problems += missing
            if len(callers) > RESOLVED_CALLERS_MAX:
                problems.append(too_many_callers(where, len(callers), "it applies to every caller"))
                callers = None
        resolved.append(ResolvedLimit(**amount, callers=callers))
    return resolved, problems


def too_many_callers(field: str, count: int, outcome: str) -> Problem:
    return Problem(
        "TooManyCallers",
        f"{field} resolves to {count} callers, more than {RESOLVED_CALLERS_MAX}: {outcome}",
    )


# --- rate limits -----------------------------------------------------------------


class Counter(NamedTuple):
    """What a limit counts: its amount per period, and the metadata key each response costs."""

    amount: int
    # None: each request counts one.
    metadata_key: str | None


def counter(limit: Allowance) -> Counter:
    if limit.requests is not None:
        return Counter(limit.requests, None)
    if limit.tokens is not None:
        return Counter(limit.tokens, TOTAL_TOKENS_KEY)
    cost = Decimal(str(limit.cost))
    for scale, key in COST_KEYS.items():
        amount = int((cost * scale).to_integral_value(rounding=ROUND_FLOOR))
        if amount <= LIMIT_AMOUNT_MAX:
            return Counter(max(amount, 1), key)
    raise ValueError(f"cost {cost} exceeds every counter")  # the model refuses it first


def _caller_chunks(callers: Sequence[str]) -> list[list[str]]:
    """``callers`` in runs whose ``caller_pattern`` fits in MATCH_VALUE_MAX characters."""
    chunks: list[list[str]] = []
    chunk: list[str] = []
    for caller in callers:
        if chunk and len(caller_pattern([*chunk, caller])) > MATCH_VALUE_MAX:
            chunks.append(chunk)
            chunk = []
        chunk.append(caller)
    if chunk:
        chunks.append(chunk)
    return chunks


def caller_pattern(callers: Sequence[str]) -> str:
    """An anchored RE2 alternation matching exactly ``callers``."""
    # A caller name is [-._a-zA-Z0-9]: only the dot means anything to RE2.
    escaped = [caller.replace(".", r"\.") for caller in callers]
    return f"^({'|'.join(escaped)})$"


def rate_limit_rules(limits: Sequence[ResolvedLimit], *, shared: bool) -> list[dict[str, Any]]:
    """Envoy Gateway global rate-limit rules: one bucket per caller for each limit.

    ``shared``: one bucket per caller across every route the policy reaches
    (a Gateway's policy); otherwise each route counts apart. A limit narrowed
    to no caller (its groups all missing) limits nobody and has no rule.
    """
    return [rule for limit in limits for rule in _limit_rules(limit, shared=shared)]


def _narrowings(limit: ResolvedLimit) -> list[list[str] | None]:
    """The callers of each of a limit's rules: None for a limit on everyone (one rule)."""
    return [None] if limit.callers is None else list(_caller_chunks(limit.callers))


def _limit_rules(limit: ResolvedLimit, *, shared: bool) -> list[dict[str, Any]]:
    """One limit's rules: one, or one per MATCH_VALUE_MAX of its callers' names."""
    amount, metadata_key = counter(limit)
    distinct = {"name": CALLER_HEADER, "type": "Distinct"}
    rules = []
    for callers in _narrowings(limit):
        narrowing = []
        if callers is not None:
            pattern = caller_pattern(callers)
            narrowing = [{"name": CALLER_HEADER, "type": "RegularExpression", "value": pattern}]
        rule: dict[str, Any] = {
            "clientSelectors": [{"headers": [*narrowing, distinct]}],
            "limit": {"requests": amount, "unit": limit.per},
        }
        if metadata_key is not None:
            rule["cost"] = {
                # Checked, not counted, as the request arrives: a caller
                # already over its budget is refused.
                "request": {"from": "Number", "number": 0},
                "response": {
                    "from": "Metadata",
                    "metadata": {
                        "namespace": AI_GATEWAY_METADATA_NAMESPACE,
                        "key": metadata_key,
                    },
                },
            }
        if shared:
            rule["shared"] = True
        rules.append(rule)
    return rules


# --- counting answers ------------------------------------------------------------
#
# Envoy Gateway counts a response's cost with a second rate-limit entry that
# Envoy evaluates once the response is done, built from the same actions as the
# request's entry: the caller comes from x-fleetgate-caller again
# (internal/xds/translator/ratelimit.go:340-354, 378-427 at v1.8.3). By then a
# third party's header mutation (AIServiceBackend) has removed that header: an
# upstream filter edits the very header map the downstream filters read, so
# the entry yields no descriptor and the answer is never counted. AI Gateway
# copied the caller into its dynamic metadata when the request arrived
# (logRequestHeaderAttributes), before any backend was picked; the entry
# reads it there instead.

# Envoy's CEL descriptor: a value computed from the request's attributes
# (source/extensions/rate_limit_descriptors/expr/config.cc, Envoy 1.38).
EXPRESSION_DESCRIPTOR: Final = "envoy.rate_limit_descriptors.expr"
EXPRESSION_DESCRIPTOR_TYPE: Final = (
    "type.googleapis.com/envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor"
)
# The value a caller outside a narrowed limit sends instead of the rule's own:
# the rate-limit service has no descriptor for it, so nothing is counted.
NOT_NARROWED: Final = "not-narrowed"
_CALLER_METADATA: Final = {
    "key": AI_GATEWAY_METADATA_NAMESPACE,
    "path": [{"key": CALLER_METADATA_KEY}],
}


class AnswerRead(NamedTuple):
    """An action of a rule's after-the-answer entry that reads the caller header
    (``kind``: ``request_headers`` or ``header_value_match``), and the action that
    reads the caller from AI Gateway's metadata in its place."""

    kind: str
    descriptor_key: str
    replacement: dict[str, Any]


def _descriptor_key(rule: int, match: int) -> str:
    """Envoy Gateway's descriptor key of a rule's header match (ratelimit.go:1007-1009),
    ``rule`` counted among the rules of the policy's domain (ratelimit.go:801-816)."""
    return f"rule-{rule}-match-{match}"


def answer_reads(limits: Sequence[ResolvedLimit]) -> list[AnswerRead]:
    """For the rules ``rate_limit_rules`` makes of ``limits`` (all shared, or none),
    each caller-header read of the entries counting answers, and its replacement."""
    reads = []
    rule = 0
    for limit in limits:
        counted = counter(limit).metadata_key is not None
        for callers in _narrowings(limit):
            if counted:
                distinct = _descriptor_key(rule, 0 if callers is None else 1)
                if callers is not None:
                    reads.append(_narrowed(_descriptor_key(rule, 0), callers))
                reads.append(
                    AnswerRead(
                        "request_headers",
                        distinct,
                        {
                            "metadata": {
                                "descriptor_key": distinct,
                                "metadata_key": _CALLER_METADATA,
                                "source": "DYNAMIC",
                            }
                        },
                    )
                )
            rule += 1
    return reads


def _narrowed(key: str, callers: Sequence[str]) -> AnswerRead:
    """The rule's own value for its callers, NOT_NARROWED for anyone else."""
    caller = f"metadata.filter_metadata['{AI_GATEWAY_METADATA_NAMESPACE}']['{CALLER_METADATA_KEY}']"
    # Caller names are [-._a-zA-Z0-9]: nothing to escape in a CEL string.
    members = ", ".join(f"'{c}'" for c in callers)
    expression = f"{caller} in [{members}] ? '{key}' : '{NOT_NARROWED}'"
    return AnswerRead(
        "header_value_match",
        key,
        {
            "extension": {
                "name": EXPRESSION_DESCRIPTOR,
                "typed_config": {
                    "@type": EXPRESSION_DESCRIPTOR_TYPE,
                    "descriptor_key": key,
                    "text": expression,
                },
            }
        },
    )


# The condition saying whether a gateway's or route's answers are all counted.
ANSWERS_COUNTED: Final = "AnswersCounted"


def answers_counted(policy: Observed | None, field: str) -> Verdict:
    """AnswersCounted from the patch (``policy`` as observed; None: none needed, as the
    limits at ``field`` count no tokens or cost)."""
    if policy is None:
        return Verdict("True", "NoSpendLimits", f"{field} limit no tokens or cost")
    return patch_applied(
        policy,
        "counting answers against the callers' token and cost limits",
        "every answer counts against the callers' token and cost limits",
    )


RATE_LIMIT_FILTER: Final = "envoy.filters.http.ratelimit"


def answer_patches(
    route_configuration: str, filter_name: str, reads: Sequence[AnswerRead], routes: str = "*"
) -> list[dict[str, Any]]:
    """EnvoyPatchPolicy JSON patches putting ``reads``' replacements in place, in each
    route (``routes``: a JSONPath selector of them) of ``route_configuration``, in the
    rate-limit configuration of the filter named ``filter_name``.

    A JSONPath that selects nothing is refused (core/envoypatch.py): each patch
    names only an action its policy's own rules make.
    """
    return [
        envoypatch.patch(
            envoypatch.ROUTE_CONFIGURATION,
            route_configuration,
            op="replace",
            jsonPath=(
                f"$.virtual_hosts[*].routes[{routes}]"
                f".typed_per_filter_config['{filter_name}']"
                ".rate_limits[?(@.apply_on_stream_done == true)]"
                f".actions[?(@.{read.kind}.descriptor_key == '{read.descriptor_key}')]"
            ),
            value=read.replacement,
        )
        for read in reads
    ]


TOO_MANY_RULES: Final = "TooManyRateLimitRules"


def too_many_rules(field: str, limits: Sequence[ResolvedLimit]) -> str | None:
    """Why the limits would not fit one BackendTrafficPolicy, naming the field and the
    counts; None when they fit.

    Their rules are the policy's whole rateLimit.global.rules: a gateway's
    policy holds only spec.auth.limits, a route's only its service's
    spec.access.limits. The API server validates each object on its own;
    Envoy Gateway merges a route's rules with its gateway's in the translator
    and counts them nowhere (internal/gatewayapi/backendtrafficpolicy.go:
    845-890, 1038-1052 at v1.8.3), so only each list's own length is bounded.
    """
    counts = [len(_limit_rules(limit, shared=False)) for limit in limits]
    if sum(counts) <= RATE_LIMIT_RULES_MAX:
        return None
    each = ", ".join(f"[{i}]: {n}" for i, n in enumerate(counts))
    return (
        f"{field} take {sum(counts)} rate-limit rules ({each}), more than the "
        f"{RATE_LIMIT_RULES_MAX} Envoy Gateway takes in one BackendTrafficPolicy (a limit "
        f"narrowed to callers takes one rule per {MATCH_VALUE_MAX} characters of their names): "
        "narrow to fewer callers, or to none"
    )


class Held(NamedTuple):
    """Limits refused for their rule count: what the condition says, and whether the policy
    composed before was kept."""

    verdict: Verdict
    kept: bool


def hold_rate_limits(
    rec: Reconcile, key: str, field: str, limits: Sequence[ResolvedLimit], what: str
) -> Held | None:
    """None when the limits fit one policy; otherwise the policy composed before under ``key``
    is kept, and the Verdict says so (or, with none to keep, that ``what`` is not served).

    The API server refuses a policy over the count whole: composed anyway, the
    route or gateway would serve without any of its limits, and a gateway
    without its retries, outlier detection and refusal bodies too.
    """
    why = too_many_rules(field, limits)
    if why is None:
        return None
    kept = rec.keep(key)
    outcome = (
        f"{what} keeps the BackendTrafficPolicy composed before until they fit"
        if kept
        else f"{what} is not served until they fit"
    )
    return Held(Verdict("False", TOO_MANY_RULES, f"{why}; {outcome}", warn=True), kept)


# --- cost ------------------------------------------------------------------------


# A price is a decimal of at most six places per 1,000,000 tokens (Decimal6), so
# per token it is a whole number of 10^-12 of the currency: this many make one.
PRICE_UNITS_PER_CURRENCY: Final = 10**12


def _token_terms(pricing: Pricing) -> list[tuple[str, int]]:
    """(CEL uint of a token count, its price in 10^-12 of the currency per token)."""

    def units(price: str) -> int:
        return int(Decimal(price) * PER_MILLION)

    cached_price = pricing.cached_input_tokens or pricing.input_tokens
    # AI Gateway's input tokens include the cached ones (internal/translator/
    # anthropic_helper.go:921-930, openai_completions.go:114-124 at v1.1.0).
    uncached = "(input_tokens > cached_input_tokens ? input_tokens - cached_input_tokens : 0u)"
    return [
        (uncached, units(pricing.input_tokens)),
        ("cached_input_tokens", units(cached_price)),
        ("output_tokens", units(pricing.output_tokens)),
    ]


def _priced_tokens(pricing: Pricing, scale: int) -> str:
    """CEL: one response's cost in 1/scale of the currency at ``pricing``, rounded up, a uint.

    Integers only, so the ceiling is exact: AI Gateway's CEL has no math.ceil
    (its environment enables no extension library, internal/llmcostcel/
    cel.go:32-44 at v1.1.0), and a ceiling of a double would count an exact
    cost whose double lands an ulp above it one unit too many. Each price per
    token is ``whole + part/denominator`` units; the whole units are added as
    they are and the parts once, rounded up, so any cost above 0 counts at
    least 1. Within uint64 for any token counts AI Gateway passes (uint32 each,
    cel.go:71): three counts of below 2^32 times a part below 10^9 sum below
    1.3 x 10^19, and the whole units below 3 x 2^32 x 10^7.
    """
    denominator = PRICE_UNITS_PER_CURRENCY // scale
    whole, parts = [], []
    for tokens, price in _token_terms(pricing):
        units, part = divmod(price, denominator)
        whole += [f"{tokens} * {units}u"] if units else []
        parts += [f"{tokens} * {part}u"] if part else []
    terms = [*whole]
    if parts:
        terms.append(f"({' + '.join(parts)} + {denominator - 1}u) / {denominator}u")
    return " + ".join(terms) or "0u"


def cost_expression(priced: Sequence[tuple[int, Pricing]], scale: int) -> str:
    """CEL AI Gateway evaluates per response: its cost in 1/scale of the currency, rounded up.

    ``priced``: (index among the route rule's backendRefs, pricing). AI Gateway
    names the backend that answered ``<namespace>/<backend>/route/<route>/
    rule/<i>/ref/<j>`` (internal/internalapi/internalapi.go:143-145, v1.1.0);
    the ref index picks its price. Any other backend costs 0.
    """
    expression = "0u"
    for index, pricing in reversed(priced):
        expression = (
            f'backend.endsWith("/ref/{index}") ? {_priced_tokens(pricing, scale)} : {expression}'
        )
    return expression


def llm_request_costs(priced: Sequence[tuple[int, Pricing]]) -> list[dict[str, str]]:
    """The route's cost entries: one per counter scale."""
    return [
        {"metadataKey": key, "type": "CEL", "cel": cost_expression(priced, scale)}
        for scale, key in COST_KEYS.items()
    ]
