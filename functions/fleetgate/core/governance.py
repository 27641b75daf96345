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

import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_FLOOR, Decimal
from typing import Any, Final, NamedTuple

from fleetgate.core.constants import (
    AI_GATEWAY_METADATA_NAMESPACE,
    CALLER_HEADER,
    COST_KEY,
    COST_MILLI_KEY,
    MODEL_HEADER,
    SYSTEM_NAMESPACE,
    TOTAL_TOKENS_KEY,
)
from fleetgate.core.kinds.governance import (
    COST_SCALES,
    LIMIT_AMOUNT_MAX,
    RESOLVED_CALLERS_MAX,
    Allowance,
    CallerLimit,
    Pricing,
    ResolvedLimit,
)
from fleetgate.core.names import resource_key
from fleetgate.core.reconcile import Reconcile, Selector
from fleetgate.core.secrets import SecretKeys

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


class Callers(NamedTuple):
    """Caller identities resolved from names and groups, and what could not be read."""

    callers: list[str]
    # Why some could not be resolved, each naming its field.
    problems: list[str]


def resolve_callers(
    field: str,
    named: Sequence[str],
    groups: Sequence[str],
    found: Mapping[str, Sequence[SecretKeys]],
) -> Callers:
    """``named`` and every key of each group's Secret, sorted, at most RESOLVED_CALLERS_MAX.

    ``found`` holds, per group name, the Secrets Crossplane found by that name
    (none when it does not exist). A missing group adds nobody: it never opens
    anything. Sorted, so a policy never changes with Crossplane's listing order.
    """
    callers = set(named)
    problems = []
    for i, group in enumerate(groups):
        secrets = found.get(group) or ()
        if not secrets:
            problems.append(
                f"{field}.groups[{i}]: Secret {SYSTEM_NAMESPACE}/{group} not found; "
                "its callers are left out"
            )
        for secret in secrets:
            callers.update(secret.keys)
    resolved = sorted(callers)
    if len(resolved) > RESOLVED_CALLERS_MAX:
        problems.append(
            f"{field} resolves to {len(resolved)} callers, more than {RESOLVED_CALLERS_MAX}: "
            f"only the first {RESOLVED_CALLERS_MAX} by name are included"
        )
        resolved = resolved[:RESOLVED_CALLERS_MAX]
    return Callers(resolved, problems)


def limit_groups(limits: Sequence[CallerLimit]) -> list[str]:
    """Every group the limits narrow to, once each."""
    return sorted({group for limit in limits for group in limit.groups})


def resolve_limits(
    field: str, limits: Sequence[CallerLimit], found: Mapping[str, Sequence[SecretKeys]]
) -> tuple[list[ResolvedLimit], list[str]]:
    """Each limit with its narrowing resolved to callers (None: every caller), and problems."""
    resolved, problems = [], []
    for i, limit in enumerate(limits):
        amount = limit.model_dump(include={"requests", "tokens", "cost", "per"})
        callers: list[str] | None = None
        if limit.narrowed:
            callers, missing = resolve_callers(f"{field}[{i}]", limit.callers, limit.groups, found)
            problems += missing
        resolved.append(ResolvedLimit(**amount, callers=callers))
    return resolved, problems


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


def _caller_patterns(callers: Sequence[str]) -> list[str]:
    """Anchored RE2 alternations matching exactly ``callers``, each within MATCH_VALUE_MAX."""
    patterns: list[str] = []
    chunk: list[str] = []

    def pattern(names: list[str]) -> str:
        return f"^({'|'.join(names)})$"

    for caller in callers:
        # A caller name is [-._a-zA-Z0-9]: only the dot means anything to RE2.
        escaped = caller.replace(".", r"\.")
        if chunk and len(pattern([*chunk, escaped])) > MATCH_VALUE_MAX:
            patterns.append(pattern(chunk))
            chunk = []
        chunk.append(escaped)
    if chunk:
        patterns.append(pattern(chunk))
    return patterns


def rate_limit_rules(limits: Sequence[ResolvedLimit], *, shared: bool) -> list[dict[str, Any]]:
    """Envoy Gateway global rate-limit rules: one bucket per caller for each limit.

    ``shared``: one bucket per caller across every route the policy reaches
    (a Gateway's policy); otherwise each route counts apart. A limit narrowed
    to no caller (its groups all missing) limits nobody and has no rule.
    """
    rules = []
    for limit in limits:
        amount, metadata_key = counter(limit)
        distinct = {"name": CALLER_HEADER, "type": "Distinct"}
        narrowing: list[list[dict[str, Any]]] = (
            [[]]
            if limit.callers is None
            else [
                [{"name": CALLER_HEADER, "type": "RegularExpression", "value": p}]
                for p in _caller_patterns(limit.callers)
            ]
        )
        for headers in narrowing:
            rule: dict[str, Any] = {
                "clientSelectors": [{"headers": [*headers, distinct]}],
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


# --- cost ------------------------------------------------------------------------


def _cel_double(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if "." in text else f"{text}.0"


def _priced_tokens(pricing: Pricing, scale: int) -> str:
    """CEL: one response's cost in 1/scale of the currency, at ``pricing``, as a double."""

    def per_token(price: str) -> str:
        return _cel_double(Decimal(price) * scale / PER_MILLION)

    cached_price = pricing.cached_input_tokens or pricing.input_tokens
    # AI Gateway's input tokens include the cached ones (internal/translator/
    # anthropic_helper.go:921-930, openai_completions.go:114-124 at v1.1.0).
    uncached = "(input_tokens > cached_input_tokens ? input_tokens - cached_input_tokens : 0u)"
    return (
        f"double({uncached}) * {per_token(pricing.input_tokens)}"
        f" + double(cached_input_tokens) * {per_token(cached_price)}"
        f" + double(output_tokens) * {per_token(pricing.output_tokens)}"
    )


def cost_expression(priced: Sequence[tuple[int, Pricing]], scale: int) -> str:
    """CEL AI Gateway evaluates per response: its cost in 1/scale of the currency.

    ``priced``: (index among the route rule's backendRefs, pricing). AI Gateway
    names the backend that answered ``<namespace>/<backend>/route/<route>/
    rule/<i>/ref/<j>`` (internal/internalapi/internalapi.go:143-145, v1.1.0);
    the ref index picks its price. Any other backend costs 0.
    """
    if not priced:
        return "0u"
    expression = "0.0"
    for index, pricing in reversed(priced):
        expression = (
            f'backend.endsWith("/ref/{index}") ? {_priced_tokens(pricing, scale)} : {expression}'
        )
    # To the nearest unit: unbiased over many requests, and exact as a double
    # for any cost a 32-bit counter can hold (a ceiling's "+ 0.999…" is not).
    return f"uint(({expression}) + 0.5)"


def llm_request_costs(priced: Sequence[tuple[int, Pricing]]) -> list[dict[str, str]]:
    """The route's cost entries: one per counter scale."""
    return [
        {"metadataKey": key, "type": "CEL", "cel": cost_expression(priced, scale)}
        for scale, key in COST_KEYS.items()
    ]


# --- refusals ---------------------------------------------------------------------

# What Envoy's rate-limit filter says of the limit it applied, on its 429
# (Envoy Gateway enables the draft-03 headers, internal/xds/translator/
# ratelimit.go:117-171 at v1.8.3): "<quota>, <quota>;w=<window seconds>".
_LIMIT_APPLIED: Final = "%RESP(X-RATELIMIT-LIMIT)%"
_RESETS_IN: Final = "%RESP(X-RATELIMIT-RESET)%"


def _override(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """A response override for Envoy's own replies of ``status`` only (``source: Local``).

    Never for a backend's: a provider's own 403 or 429 reaches the caller as
    the provider sent it (the local-reply predicate, internal/xds/translator/
    custom_response.go:146-160 at v1.8.3).
    """
    return {
        "match": {"statusCodes": [{"type": "Value", "value": status}]},
        "source": "Local",
        "response": {
            "contentType": "application/json",
            "body": {"type": "Inline", "inline": json.dumps({"error": body}, sort_keys=True)},
        },
    }


def refusals(*, model: str | None = None, gateway: str | None = None) -> list[dict[str, Any]]:
    """JSON bodies for the gateway's refusals, OpenAI's error shape, naming the rule's owner.

    For a model's route (``model``): 403, the caller may not call it; 429, a
    limit of the model's or of the gateway's is used up. For a gateway
    (``gateway``): 429 for its own limits. The limit applied and when it resets
    come from Envoy's rate-limit headers; never another caller or a key.

    A gateway's policy covers every route, so the model is filled in when
    Envoy refuses, from ``x-ai-eg-model``. AI Gateway's external processor
    sets it from the request body (internal/extproc/processor_impl.go:282-290
    at v1.1.0), holding the request until then (body mode BUFFERED,
    internal/extensionserver/post_translate_modify.go:800), and goes in
    ahead of Envoy Gateway's ext_proc, RBAC and rate-limit filters
    (post_translate_modify.go:1084-1130; Envoy Gateway v1.8.3 orders those
    100+, 301, 303, internal/xds/translator/httpfilters.go:128-141): the
    header is set when the rate limit refuses. Envoy copies it into the body
    as is (a text format, custom_response.go:466-471, which does not escape),
    and it cannot break the JSON: the limit counts callers by the header API
    key authentication sets, which runs on the model routes alone (/healthz
    has its own policy), and a model route is taken only when that header
    equals its ModelService's ``<namespace>/<name>``, Kubernetes names
    without a quote or a backslash.
    """
    over = {
        "type": "rate_limit_exceeded",
        "code": "caller_limit",
        "limit": _LIMIT_APPLIED,
        "resets_in_seconds": _RESETS_IN,
    }
    if model is None:
        return [
            _override(
                429,
                over
                | {
                    "model": f"%REQ({MODEL_HEADER.upper()})%",
                    "message": f"over a per-caller limit of InferenceGateway {gateway} "
                    "(spec.auth.limits) until the window turns",
                },
            )
        ]
    return [
        _override(
            403,
            {
                "type": "permission_denied",
                "code": "caller_not_allowed",
                "model": model,
                "message": f"this caller may not call {model} (its ModelService's spec.access)",
            },
        ),
        _override(
            429,
            over
            | {
                "model": model,
                "message": f"over a per-caller limit of {model} (its ModelService's "
                "spec.access.limits) or of this gateway (spec.auth.limits) until the window turns",
            },
        ),
    ]
