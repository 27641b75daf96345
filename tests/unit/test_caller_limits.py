"""How much each caller may use: limits per model, per gateway, and what a response costs.

A ModelService's ``spec.access.limits`` reach each ModelRoute resolved (groups to
caller names) and become a BackendTrafficPolicy on the route AI Gateway
generates; an InferenceGateway's ``spec.auth.limits`` become rules of its own
traffic policy, shared by every route; a ModelEndpoint's ``spec.pricing``
becomes the CEL cost AI Gateway computes per response. The CEL is evaluated
here by AI Gateway's own evaluator (oracles/llmcostcel.py); what Envoy Gateway
makes of the policies is checked by its own translator
(tests/e2e/test_translate.py) and the real rate-limit service (make e2e).
"""

import copy
import json
import math
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from fleetgate.core import answers, governance, names
from fleetgate.core.constants import CALLER_HEADER, SYSTEM_NAMESPACE
from fleetgate.core.kinds.governance import (
    COST_MAX,
    RATE_LIMIT_RULES_MAX,
    RESOLVED_CALLERS_MAX,
    CallerLimit,
    Pricing,
    ResolvedLimit,
)
from fleetgate.model_service.ai_gateway import caller_traffic
from fleetgate.model_service.composer import compose
from fleetgate.model_service.naming import is_route_key
from oracles import llmcostcel, ratelimits
from schemas import validate
from tests.support import Outcome, request, run, secret
from tests.support import inference_gateway as gw_support
from tests.support.model_service import (
    CANARY,
    as_observed,
    canary_fleet,
    entry,
    fleet,
    model_routes,
    reconcile_route,
    route_key,
    route_manifest,
    route_of,
    route_policy_spec,
    service,
    third_party,
)

DISTINCT = {"name": CALLER_HEADER, "type": "Distinct"}


def response_cost(key: str) -> dict[str, Any]:
    """A rule's cost: nothing as the request comes, then the response's metadata at ``key``."""
    return {
        "request": {"from": "Number", "number": 0},
        "response": {
            "from": "Metadata",
            "metadata": {"namespace": "io.envoy.ai_gateway", "key": key},
        },
    }


TOKENS_COST = response_cost("llm_total_token")


def limited(limits: list[dict[str, Any]], **access: Any) -> dict[str, Any]:
    xr = copy.deepcopy(CANARY)
    xr["spec"]["access"] = {"callers": ["team-a", "ci"], **access, "limits": limits}
    return xr


def with_group(name: str, keys: list[str]) -> dict[str, list[dict[str, Any]]]:
    required = canary_fleet()
    found = [secret(name, SYSTEM_NAMESPACE, dict.fromkeys(keys, "never-read"))] if keys else []
    required[governance.group_key(name)] = found
    return required


def rules(out: Any, gw: str = "public") -> list[dict[str, Any]]:
    policy = route_manifest(route_of(out, gw), "caller-traffic")
    found: list[dict[str, Any]] = policy["spec"]["rateLimit"]["global"]["rules"]
    return found


# --- the service's limits -------------------------------------------------------------


def test_each_caller_gets_its_own_counter_for_the_model_on_each_gateway() -> None:
    out = run(
        compose, request(limited([{"requests": 60, "per": "Minute"}]), required=canary_fleet())
    )
    assert out.fatal == []
    # Merged into the gateway's traffic policy: retries and outlier detection stay.
    assert route_policy_spec(route_of(out), "caller-traffic", "BackendTrafficPolicy") == {
        "rateLimit": {
            "global": {
                "rules": [
                    {
                        "clientSelectors": [{"headers": [DISTINCT]}],
                        "limit": {"requests": 60, "unit": "Minute"},
                    }
                ]
            }
        },
        "responseOverride": answers.responses("public"),
    }
    assert out.conditions["AccessResolved"] == (
        "True",
        "Resolved",
        "2 callers may call, within 1 limits each",
    )


def test_a_token_limit_counts_each_response_and_checks_each_request() -> None:
    out = run(
        compose, request(limited([{"tokens": 100_000, "per": "Day"}]), required=canary_fleet())
    )
    (rule,) = rules(out)
    assert rule["limit"] == {"requests": 100_000, "unit": "Day"}
    assert rule["cost"] == TOKENS_COST


@pytest.mark.parametrize(
    ("cost", "amount", "key"),
    [
        # Millionths while the counter holds them, thousandths above.
        ("25.5", 25_500_000, "cost"),
        ("4294.967295", 4_294_967_295, "cost"),
        ("4294.967296", 4_294_967, "cost_milli"),
        ("0.000001", 1, "cost"),
        (str(COST_MAX), 4_294_967_295, "cost_milli"),
    ],
)
def test_a_cost_limit_counts_in_the_finest_unit_its_counter_holds(
    cost: str, amount: int, key: str
) -> None:
    assert governance.counter(ResolvedLimit(cost=cost, per="Month")) == (amount, key)


def test_a_narrowed_limit_applies_to_the_named_callers_and_the_group_each_separately() -> None:
    limit = {"tokens": 5000, "per": "Hour", "callers": ["ci"], "groups": ["interns"]}
    xr = limited([limit], groups=["interns"])
    out = run(compose, request(xr, required=with_group("interns", ["bob", "al.ice"])))
    access = model_routes(out)["public"]["spec"]["access"]
    assert access["limits"] == [{"tokens": 5000, "per": "Hour", "callers": ["al.ice", "bob", "ci"]}]
    (rule,) = rules(out)
    pattern = {"name": CALLER_HEADER, "type": "RegularExpression", "value": r"^(al\.ice|bob|ci)$"}
    assert rule["clientSelectors"] == [{"headers": [pattern, DISTINCT]}]
    assert "never-read" not in str(out.rsp)


def test_a_long_narrowing_is_split_over_rules_within_envoy_gateways_match_length() -> None:
    callers = [f"caller-{i:04d}" for i in range(300)]
    (limit,) = governance.resolve_limits(
        "f", [CallerLimit(requests=1, per="Second", callers=callers[:256])], {}
    )[0]
    limit = limit.model_copy(update={"callers": callers})
    found = governance.rate_limit_rules([limit], shared=False)
    values = [r["clientSelectors"][0]["headers"][0]["value"] for r in found]
    assert all(len(v) <= governance.MATCH_VALUE_MAX for v in values)
    covered = [c for v in values for c in v[2:-2].split("|")]
    assert covered == callers


def test_a_limit_narrowed_to_a_missing_group_limits_nobody_and_says_which_field() -> None:
    limit = {"requests": 5, "per": "Minute", "groups": ["gone"]}
    out = run(compose, request(limited([limit]), required=with_group("gone", [])))
    assert out.fatal == []
    status, reason, message = out.conditions["AccessResolved"]
    assert (status, reason) == ("False", "CallersMissing")
    assert "spec.access.limits[0].groups[0]: Secret fleetgate-system/gone not found" in message
    assert "rateLimit" not in route_manifest(route_of(out), "caller-traffic")["spec"]


# A limit for everyone, and one narrowed to the keys of the group "bulk".
BULK_LIMITS = [{"requests": 60, "per": "Minute"}, {"tokens": 10, "per": "Day", "groups": ["bulk"]}]


def bulk_group(count: int, length: int = 12) -> list[str]:
    """``count`` caller names of ``length`` characters."""
    return [f"{i:05d}".ljust(length, "x") for i in range(count)]


def service_with_bulk(keys: list[str]) -> Outcome:
    return run(compose, request(limited(BULK_LIMITS), required=with_group("bulk", keys)))


def widened(field: str, count: int) -> str:
    """What a limit narrowed to ``count`` callers, too many, says of itself."""
    return (
        f"{field} resolves to {count} callers, more than {RESOLVED_CALLERS_MAX}: "
        "it applies to every caller"
    )


def test_a_limit_narrowed_to_more_callers_than_resolve_applies_to_every_caller() -> None:
    keys = bulk_group(RESOLVED_CALLERS_MAX + 1)
    out = service_with_bulk(keys)
    assert out.fatal == []
    _, resolved = model_routes(out)["public"]["spec"]["access"]["limits"]
    assert "callers" not in resolved, "stricter than written: no caller escapes the limit"
    _, rule = rules(out)
    assert rule["clientSelectors"] == [{"headers": [DISTINCT]}]
    status, reason, message = out.conditions["AccessResolved"]
    assert (status, reason) == ("False", "TooManyCallers")
    assert widened("spec.access.limits[1]", len(keys)) in message


# Four names of 250 characters fill one 1024-character match: 4 x 255 of them
# take 255 rules, with the limit for everyone Envoy Gateway's 256.
LONG = 250
FITS = 4 * 255


def too_many_rules(field: str) -> str:
    """What limits taking one rule more than a policy holds say of themselves."""
    return (
        f"{field} take 257 rate-limit rules ([0]: 1, [1]: 256), more than the 256 Envoy "
        "Gateway takes in one BackendTrafficPolicy"
    )


def test_limits_taking_as_many_rules_as_a_policy_holds_are_composed() -> None:
    out = service_with_bulk(bulk_group(FITS, LONG))
    assert out.conditions["AccessResolved"][:2] == ("True", "Resolved")
    assert len(rules(out)) == 256


@pytest.mark.crossplane_cli
def test_envoy_gateways_crd_takes_the_most_rules_composed_and_not_one_more() -> None:
    # The bound is the pinned CRD's, checked by the real validator.
    policy = route_manifest(route_of(service_with_bulk(bulk_group(FITS, LONG))), "caller-traffic")
    found = policy["spec"]["rateLimit"]["global"]["rules"]
    assert len(found) == RATE_LIMIT_RULES_MAX
    assert validate.validate([policy]) == []
    found.append(found[0])
    (error,) = validate.validate([policy])
    assert f"spec.rateLimit.global.rules: Too many: {RATE_LIMIT_RULES_MAX + 1}" in error


def test_limits_taking_more_rules_than_a_policy_holds_never_serve_a_new_route() -> None:
    out = service_with_bulk(bulk_group(FITS + 1, LONG))
    status, reason, message = out.conditions["AccessResolved"]
    assert (status, reason) == ("False", "TooManyRateLimitRules")
    assert too_many_rules("spec.access.limits") in message
    route = route_of(out)
    # The API server would refuse the policy and the route serve without limits.
    assert not [k for k in route.desired if is_route_key(k)], "not served without its limits"
    status, reason, message = route.conditions["RouteAccepted"]
    assert (status, reason) == ("False", "TooManyRateLimitRules")
    assert too_many_rules("spec.access.limits") in message
    assert message.endswith("on InferenceGateway public is not served until they fit")


def test_limits_taking_more_rules_than_a_policy_holds_keep_the_routes_policy() -> None:
    before = route_of(service_with_bulk(bulk_group(FITS, LONG)))
    after = route_of(service_with_bulk(bulk_group(FITS + 1, LONG)), "public", **as_observed(before))
    kept = route_manifest(after, "caller-traffic")
    assert kept == route_manifest(before, "caller-traffic")
    assert len(kept["spec"]["rateLimit"]["global"]["rules"]) == 256
    assert set(after.desired) == set(before.desired), "everything else still composed"
    status, reason, message = after.conditions["RouteAccepted"]
    assert (status, reason) == ("False", "TooManyRateLimitRules")
    assert message.endswith("keeps the BackendTrafficPolicy composed before until they fit")


def test_without_limits_the_route_has_refusal_bodies_and_no_rate_limit() -> None:
    xr = copy.deepcopy(CANARY)
    xr["spec"]["access"] = {"callers": ["ci"]}
    out = run(compose, request(xr, required=canary_fleet()))
    assert "limits" not in model_routes(out)["public"]["spec"]["access"]
    spec = route_manifest(route_of(out), "caller-traffic")["spec"]
    assert "rateLimit" not in spec
    assert [o["match"]["statusCodes"][0]["value"] for o in spec["responseOverride"]] == [
        403,
        429,
        503,
    ]


def test_without_access_the_route_composes_no_traffic_policy() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    assert not [k for k in route_of(out).desired if k.startswith("caller-traffic")]


@pytest.mark.parametrize(
    ("limit", "fragment"),
    [
        ({"requests": 1, "tokens": 2, "per": "Day"}, "exactly one of requests, tokens, cost"),
        ({"per": "Day"}, "exactly one of requests, tokens, cost"),
        ({"cost": "0", "per": "Day"}, "cost must be more than 0"),
        ({"cost": "4294967.296", "per": "Day"}, "at most 4294967.295"),
        ({"cost": "-1", "per": "Day"}, "spec.access.limits[0].cost"),
        ({"requests": 5, "per": "Year"}, "spec.access.limits[0].per"),
    ],
)
def test_a_bad_limit_is_a_fatal_result_naming_the_field(
    limit: dict[str, Any], fragment: str
) -> None:
    out = run(compose, request(limited([limit]), required=canary_fleet()))
    assert len(out.fatal) == 1
    assert "spec.access.limits" in out.fatal[0]
    assert fragment in out.fatal[0]


# --- counting answers -----------------------------------------------------------------
#
# A response's cost is counted by a second entry Envoy evaluates once the response
# is done; for a third party the caller header is gone by then, so the entry
# reads the caller AI Gateway recorded as the request arrived.

CALLER_METADATA = {
    "key": "io.envoy.ai_gateway",
    "path": [{"key": "caller"}],
}


def _answer(metadata: dict[str, Any], read: governance.AnswerRead) -> Any:
    """What Envoy's action put in a read's place yields for a request with ``metadata``."""
    descriptor = ratelimits.descriptor({"actions": [read.replacement]}, {}, metadata)
    return None if descriptor is None else descriptor.entries


def test_answers_are_counted_for_the_caller_ai_gateway_recorded_not_the_header() -> None:
    limits = [
        ResolvedLimit(requests=60, per="Minute"),  # rule 0, counted as the request comes
        ResolvedLimit(tokens=1000, per="Day"),  # rule 1
    ]
    (read,) = governance.answer_reads(limits)
    assert read == governance.AnswerRead(
        "request_headers",
        "rule-1-match-0",
        {
            "metadata": {
                "descriptor_key": "rule-1-match-0",
                "metadata_key": CALLER_METADATA,
                "source": "DYNAMIC",
            }
        },
    )
    recorded = {"io.envoy.ai_gateway": {"caller": "team-a"}}
    assert _answer(recorded, read) == (("rule-1-match-0", "team-a"),)
    assert _answer({}, read) is None, "no caller recorded: nothing is sent"


def test_a_narrowed_limit_counts_the_answers_of_its_callers_only() -> None:
    limit = ResolvedLimit(cost="5", per="Month", callers=["al.ice", "bob"])
    narrowing, distinct = governance.answer_reads([limit])
    assert (narrowing.kind, narrowing.descriptor_key) == ("header_value_match", "rule-0-match-0")
    assert (distinct.kind, distinct.descriptor_key) == ("request_headers", "rule-0-match-1")
    for caller, value in (("bob", "rule-0-match-0"), ("al.ice", "rule-0-match-0")):
        found = _answer({"io.envoy.ai_gateway": {"caller": caller}}, narrowing)
        assert found == (("rule-0-match-0", value),)
    # Anyone else sends a value the rate-limit service has no rule for.
    for caller in ("alxice", "carol", "bob2"):
        found = _answer({"io.envoy.ai_gateway": {"caller": caller}}, narrowing)
        assert found == (("rule-0-match-0", governance.NOT_NARROWED),)


def test_the_answer_reads_follow_envoy_gateways_rule_numbering_over_split_limits() -> None:
    callers = [f"caller-{i:04d}" for i in range(300)]
    split = ResolvedLimit(tokens=5, per="Hour", callers=callers)
    limits = [split, ResolvedLimit(requests=1, per="Second"), ResolvedLimit(cost="1", per="Day")]
    rules = governance.rate_limit_rules(limits, shared=True)
    split_rules = len(rules) - 2
    assert split_rules > 1, "the narrowing takes several rules"
    keys = [read.descriptor_key for read in governance.answer_reads(limits)]
    assert keys == [
        *[f"rule-{i}-match-{m}" for i in range(split_rules) for m in (0, 1)],
        f"rule-{split_rules + 1}-match-0",
    ]


def test_an_answer_patch_replaces_only_the_named_action_of_entries_counting_answers() -> None:
    read = governance.answer_reads([ResolvedLimit(tokens=1, per="Day")])[0]
    (patch,) = governance.answer_patches("ns/gw/https", "envoy.filters.http.ratelimit", [read])
    assert patch["type"] == "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
    assert patch["name"] == "ns/gw/https"
    assert patch["operation"] == {
        "op": "replace",
        "jsonPath": "$.virtual_hosts[*].routes[*]"
        ".typed_per_filter_config['envoy.filters.http.ratelimit']"
        ".rate_limits[?(@.apply_on_stream_done == true)]"
        ".actions[?(@.request_headers.descriptor_key == 'rule-0-match-0')]",
        "value": read.replacement,
    }


def test_a_route_with_token_limits_counts_every_answer_on_its_own_routes() -> None:
    limit = {"tokens": 5000, "per": "Hour", "callers": ["ci"]}
    out = run(compose, request(limited([limit]), required=canary_fleet()))
    route = route_of(out)
    (key,) = [k for k in route.desired if k.startswith("answers-counted")]
    patch = route_manifest(route, "answers-counted")
    assert key == route_key(route, "answers-counted")
    assert patch["kind"] == "EnvoyPatchPolicy"
    traffic = route_manifest(route, "caller-traffic")["metadata"]["name"]
    targets = {p["name"] for p in patch["spec"]["jsonPatches"]}
    # The listener the route is on: this gateway has no TLS, so its plain-HTTP one.
    assert targets == {f"{SYSTEM_NAMESPACE}/{names.fleet_gateway('public')}/http"}
    for p in patch["spec"]["jsonPatches"]:
        selector = f"routes[?(@.route.cluster == 'httproute/{SYSTEM_NAMESPACE}/{traffic}/rule/0')]"
        assert selector in p["operation"]["jsonPath"]
    assert len(patch["spec"]["jsonPatches"]) == 2, "the narrowing and the caller"
    assert route.conditions["AnswersCounted"][:2] == ("False", "Pending")
    applied = reconcile_route(model_routes(out)["public"], as_observed(route))
    assert applied.conditions["AnswersCounted"][:2] == ("True", "Programmed")


def test_a_route_limiting_requests_only_has_no_answers_to_count() -> None:
    out = run(
        compose, request(limited([{"requests": 60, "per": "Minute"}]), required=canary_fleet())
    )
    route = route_of(out)
    assert not [k for k in route.desired if k.startswith("answers-counted")]
    assert route.conditions["AnswersCounted"][:2] == ("True", "NoSpendLimits")


# --- the gateway's limits -------------------------------------------------------------


def gateway_rules(**auth: Any) -> list[dict[str, Any]]:
    spec = {**gw_support.FULL_SPEC["auth"], **auth}
    out = gw_support.fleet(full=True, auth=spec).settled()
    assert out.fatal == []
    policy = gw_support.manifest(out.desired["failover-policy"])
    assert policy["spec"]["retry"]["numRetries"] == 2, "the failover settings stay"
    found: list[dict[str, Any]] = (
        policy["spec"].get("rateLimit", {}).get("global", {}).get("rules", [])
    )
    return found


def test_a_gateway_limit_counts_each_caller_across_every_model() -> None:
    (rule,) = gateway_rules(limits=[{"cost": "100", "per": "Month"}])
    assert rule == {
        "clientSelectors": [{"headers": [DISTINCT]}],
        "limit": {"requests": 100_000_000, "unit": "Month"},
        "cost": response_cost("cost"),
        # One counter per caller across all the gateway's routes.
        "shared": True,
    }


def gateway_with_bulk(keys: list[str]) -> gw_support.Fleet:
    auth = {**gw_support.FULL_SPEC["auth"], "limits": BULK_LIMITS}
    bulk = [secret("bulk", SYSTEM_NAMESPACE, dict.fromkeys(keys, "never-read"))]
    return gw_support.fleet(full=True, auth=auth).with_(groups={"bulk": bulk})


def test_a_gateway_limit_narrowed_to_more_callers_than_resolve_applies_to_every_caller() -> None:
    keys = bulk_group(RESOLVED_CALLERS_MAX + 1)
    out = gateway_with_bulk(keys).settled()
    assert out.fatal == []
    policy = gw_support.manifest(out.desired["failover-policy"])
    _, tokens = policy["spec"]["rateLimit"]["global"]["rules"]
    assert tokens["clientSelectors"] == [{"headers": [DISTINCT]}]
    assert tokens["limit"] == {"requests": 10, "unit": "Day"}
    assert widened("spec.auth.limits[1]", len(keys)) in out.warnings


def test_gateway_limits_taking_more_rules_than_a_policy_holds_never_serve_a_new_gateway() -> None:
    out = gateway_with_bulk(bulk_group(FITS + 1, LONG)).settled()
    assert out.fatal == []
    assert {"gateway", "failover-policy", "caller-auth"}.isdisjoint(out.desired)
    status, reason, message = out.conditions["GatewayReady"]
    assert (status, reason) == ("False", "TooManyRateLimitRules")
    assert too_many_rules("spec.auth.limits") in message
    assert message.endswith("InferenceGateway public is not served until they fit")
    assert message in out.warnings


def test_gateway_limits_taking_more_rules_than_a_policy_holds_keep_its_failover_policy() -> None:
    before = gateway_with_bulk(bulk_group(FITS, LONG)).settled()
    after = gateway_with_bulk(bulk_group(FITS + 1, LONG)).run(gw_support.echo(before))
    kept = gw_support.manifest(after.desired["failover-policy"])
    assert kept == gw_support.manifest(before.desired["failover-policy"])
    assert kept["spec"]["retry"]["numRetries"] == 2, "retries and outlier detection stay"
    assert len(kept["spec"]["rateLimit"]["global"]["rules"]) == 256
    assert set(after.desired) == set(before.desired), "everything else still composed"
    status, reason, message = after.conditions["GatewayReady"]
    assert (status, reason) == ("False", "TooManyRateLimitRules")
    assert message.endswith("keeps the BackendTrafficPolicy composed before until they fit")


def test_a_gateway_without_limits_has_no_rate_limit() -> None:
    assert gateway_rules() == []


def envoy_fills_in(body: str, headers: dict[str, str]) -> str:
    """What Envoy sends for a response override's body, a text format: each ``%REQ(h)%`` or
    ``%RESP(h)%`` replaced by that header's value as is, unescaped, "-" when it is absent
    (``headers`` by operator, lower case: ``req(x-ai-eg-model)``). The bodies hold no
    literal %, so every other piece between two is an operator."""
    pieces = body.split("%")
    return "".join(headers.get(p.lower(), "-") if i % 2 else p for i, p in enumerate(pieces))


ASKED = {
    "req(x-ai-eg-model)": "team-a/chat",
    f"req({CALLER_HEADER})": "team-a-ci",
    "resp(x-ratelimit-limit)": "3, 3;w=60",
    "resp(x-ratelimit-reset)": "41",
}


@pytest.mark.parametrize("status", [403, 429, 503])
def test_what_envoy_answers_is_json_naming_the_model_asked_for_and_the_rule(status: int) -> None:
    """The contract: a refusal names the model and the rule. One list serves the gateway and
    every route (Envoy keeps the first route's filters, answers.responses), so Envoy fills
    the model in from x-ai-eg-model, which AI Gateway sets from the request body first."""
    (override,) = [
        o
        for o in answers.responses("public")
        if o["match"]["statusCodes"] == [{"type": "Value", "value": status}]
    ]
    assert override["response"]["contentType"] == "application/json"
    sent = envoy_fills_in(override["response"]["body"]["inline"], ASKED)
    body = json.loads(sent)["error"]
    assert body["model"] == "team-a/chat"
    assert "team-a-ci" not in sent
    # Never a backend's own answer: a provider's 403 or 429 reaches the caller as the
    # provider sent it, and a cluster gateway's 503 must reach AI Gateway's upstream
    # processor whole to count as demand for a sleeping model.
    assert override["source"] == "Local"
    if status == 503:
        assert override["response"]["header"] == {
            "set": [{"name": "Retry-After", "value": str(answers.WAKING_RETRY_AFTER)}]
        }
        assert "scaled to zero" in body["message"]
        return
    assert "spec.access" in body["message"]
    if status == 429:
        assert "InferenceGateway public (spec.auth.limits)" in body["message"]
        assert (body["limit"], body["resets_in_seconds"]) == ("3, 3;w=60", "41")


def test_the_gateway_and_each_route_answer_alike() -> None:
    """Whichever route a request first matches, its override answers (Envoy 1.38.3 keeps
    the filter chain of the first route after AI Gateway re-routes the request): the
    gateway's policy, limits or not, and a route's carry the same list."""
    out = gw_support.fleet(full=True).settled()
    gateway = gw_support.manifest(out.desired["failover-policy"])["spec"]
    name = gateway["targetRefs"][0]["name"].removeprefix("fleetgate-gw-")
    route = caller_traffic("route", name, [])["spec"]
    assert "rateLimit" not in route
    assert gateway["responseOverride"] == route["responseOverride"]


# --- what a response costs -------------------------------------------------------------


@pytest.fixture(scope="module")
def ai_gateway() -> Iterator[llmcostcel.Evaluator]:
    """Envoy AI Gateway's own cost evaluation, at the pinned tag."""
    with llmcostcel.Evaluator() as evaluator:
        yield evaluator


def ref(index: int) -> str:
    return f"{SYSTEM_NAMESPACE}/svc-backend/route/svc/rule/0/ref/{index}"


GPT = Pricing(input_tokens="2.50", cached_input_tokens="1.25", output_tokens="10")
SMALL = Pricing(input_tokens="0.15", output_tokens="0.6")
TOKENS = {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 500}


@pytest.mark.parametrize(
    ("backend", "scale", "expected"),
    [
        # 800 x 2.50 + 200 x 1.25 + 500 x 10 per million = 0.00725.
        (ref(1), 1_000_000, 7250),
        # 7.25 thousandths, rounded up.
        (ref(1), 1_000, 8),
        # Cached tokens cost as input when not priced apart: 1000 x 0.15 + 500 x 0.6.
        (ref(3), 1_000_000, 450),
        # An unpriced backend costs nothing; /ref/1 is not /ref/10.
        (ref(0), 1_000_000, 0),
        (ref(10), 1_000_000, 0),
    ],
)
def test_the_cost_is_priced_by_the_backend_that_answered(
    ai_gateway: llmcostcel.Evaluator, backend: str, scale: int, expected: int
) -> None:
    expression = governance.cost_expression([(1, GPT), (3, SMALL)], scale)
    assert ai_gateway.cost(expression, backend, **TOKENS) == expected


def output_priced(
    ai_gateway: llmcostcel.Evaluator, price: str, scale: int, output_tokens: int
) -> int:
    """What ``output_tokens`` at ``price`` per million count against a ``scale`` counter."""
    expression = governance.cost_expression([(0, Pricing(output_tokens=price))], scale)
    tokens = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": output_tokens}
    return ai_gateway.cost(expression, ref(0), **tokens)


@pytest.mark.parametrize(
    ("price", "scale", "output_tokens", "expected"),
    [
        # 0.0000001 of the currency is 0.0001 thousandths: any cost counts.
        ("0.1", 1_000, 1, 1),
        ("0.000001", 1_000_000, 1, 1),
        # Exact costs count exactly: 30 x 0.1 millionths is 3.0000000000000004 as doubles.
        ("0.1", 1_000_000, 30, 3),
        ("10", 1_000, 500, 5),
        ("10", 1_000, 501, 6),
        # Nothing used, nothing counted; and a free backend counts nothing.
        ("10", 1_000, 0, 0),
        ("0", 1_000_000, 1000, 0),
    ],
)
def test_a_response_counts_its_cost_rounded_up_so_a_cheap_one_is_never_free(
    ai_gateway: llmcostcel.Evaluator, price: str, scale: int, output_tokens: int, expected: int
) -> None:
    assert output_priced(ai_gateway, price, scale, output_tokens) == expected


@pytest.mark.parametrize("scale", governance.COST_KEYS)
def test_the_rounding_up_is_exact_for_every_price_and_token_count(
    ai_gateway: llmcostcel.Evaluator, scale: int
) -> None:
    # Integer arithmetic within uint64 up to AI Gateway's largest token
    # counts (uint32) at the largest price: never an overflow, never an ulp.
    most = 2**32 - 1
    prices = ["9999999.999999", "0.000001", "2.5", "0.15", "0.075", "1234.567891"]
    for price in prices:
        pricing = Pricing(input_tokens=price, cached_input_tokens="0.3", output_tokens=price)
        expression = governance.cost_expression([(0, pricing)], scale)
        for input_tokens, cached, output in [(most, most - 1, most), (7, 3, 1), (1, 0, 0)]:
            tokens = {
                "input_tokens": input_tokens,
                "cached_input_tokens": cached,
                "output_tokens": output,
            }
            priced = (input_tokens - cached + output) * Decimal(price) + cached * Decimal("0.3")
            exact = math.ceil(priced * scale / governance.PER_MILLION)
            assert ai_gateway.cost(expression, ref(0), **tokens) == exact, (price, tokens)


def test_cached_tokens_above_the_input_count_never_go_negative(
    ai_gateway: llmcostcel.Evaluator,
) -> None:
    expression = governance.cost_expression([(0, GPT)], 1_000_000)
    tokens = {"input_tokens": 10, "cached_input_tokens": 20, "output_tokens": 0}
    assert ai_gateway.cost(expression, ref(0), **tokens) == 25


def test_the_route_prices_each_endpoint_it_routes_to(ai_gateway: llmcostcel.Evaluator) -> None:
    xr = service(entry(1, 0, provider="openai"), entry(1, 1, provider="small"))
    priced = {"inputTokens": "2.5", "outputTokens": "10"}
    required = fleet(
        [third_party("openai", pricing=priced)],
        [third_party("small", labels={"provider": "small"}, credentialRef={"name": "openai"})],
    )
    out = run(compose, request(xr, required=required))
    assert out.fatal == []
    backends = model_routes(out)["public"]["spec"]["backends"]
    assert [b.get("pricing") for b in backends] == [priced, None]
    route = route_manifest(route_of(out))
    costs = {c["metadataKey"]: c for c in route["spec"]["llmRequestCosts"]}
    assert costs["llm_cached_input_token"] == {
        "metadataKey": "llm_cached_input_token",
        "type": "CachedInputToken",
    }
    cel = costs["cost"]["cel"]
    assert ai_gateway.cost(cel, ref(0), **{**TOKENS, "cached_input_tokens": 0}) == 7500
    assert ai_gateway.cost(cel, ref(1), **TOKENS) == 0


@pytest.mark.parametrize("price", ["-1", "1e3", "1,5", "12345678", "0.0000001"])
def test_a_bad_price_is_a_fatal_result_naming_the_field(price: str) -> None:
    from fleetgate.model_endpoint.composer import compose as compose_endpoint  # noqa: PLC0415

    endpoint = third_party("openai", pricing={"inputTokens": price})
    out = run(compose_endpoint, request(endpoint))
    assert len(out.fatal) == 1
    assert "spec.pricing.inputTokens" in out.fatal[0]


def test_every_decimal_the_xrd_takes_is_exact_in_cel(ai_gateway: llmcostcel.Evaluator) -> None:
    # Prices go into CEL as doubles: six decimals of a price up to 10^7 stay exact
    # enough that a million tokens cost the price to the millionth.
    for price in ("9999999.999999", "0.000001", "2.5"):
        expression = governance.cost_expression([(0, Pricing(output_tokens=price))], 1_000_000)
        cost = ai_gateway.cost(
            expression, ref(0), input_tokens=0, cached_input_tokens=0, output_tokens=1_000_000
        )
        assert cost == Decimal(price) * 1_000_000
