"""The descriptors Envoy would send for a request, from a route Envoy Gateway translated.

One HTTPRoute with a BackendTrafficPolicy of five global rules (a distinct
caller, two exact/regex header matches, an inverted match, a rule for all
traffic, a distinct caller with a request and a response cost) goes through
egctl (oracles.translate, the pinned Envoy Gateway); oracles.ratelimits evaluates the
xDS route it answers for several requests. The expected descriptors follow
internal/xds/translator/ratelimit.go at v1.8.3: the route's generic key first,
then one entry per match, keyed ``rule-<rule>-match-<match>``.
"""

from pathlib import Path

import pytest

from e2e.fleet import Obj
from oracles import ratelimits, translate
from oracles.ratelimits import Descriptor
from plane import ratelimit

ROUTE = "httproute/ns/chat/rule/0/match/0/api_example_com"
DOMAIN = "ns/gw/http"  # the listener's IR name: namespace/gateway/listener
CALLER = "x-fleetgate-caller"
ON_ROUTE = (ROUTE, ROUTE)
TOKENS = "%DYNAMIC_METADATA(io.envoy.ai_gateway:llm_total_token)%"


def _headers(name: str, value: str, **more: object) -> list[Obj]:
    return [{"name": name, "type": "Exact", "value": value, **more}]


RULES: list[Obj] = [
    {
        "clientSelectors": [{"headers": [{"name": CALLER, "type": "Distinct"}]}],
        "limit": {"requests": 3, "unit": "Minute"},
    },
    {
        "clientSelectors": [
            {
                "headers": [
                    *_headers(CALLER, "team-a"),
                    {"name": "x-tier", "type": "RegularExpression", "value": "gold|silver"},
                ]
            }
        ],
        "limit": {"requests": 10, "unit": "Hour"},
    },
    {
        "clientSelectors": [{"headers": _headers(CALLER, "team-a", invert=True)}],
        "limit": {"requests": 5, "unit": "Minute"},
    },
    {"limit": {"requests": 100, "unit": "Second"}},
    {
        "clientSelectors": [{"headers": [{"name": CALLER, "type": "Distinct"}]}],
        "limit": {"requests": 1000, "unit": "Hour"},
        "cost": {
            "request": {"from": "Number", "number": 0},
            "response": {
                "from": "Metadata",
                "metadata": {"namespace": "io.envoy.ai_gateway", "key": "llm_total_token"},
            },
        },
    },
]


def _cluster() -> list[Obj]:
    gateway_api = "gateway.networking.k8s.io"
    return [
        {
            "apiVersion": f"{gateway_api}/v1",
            "kind": "GatewayClass",
            "metadata": {"name": "envoy"},
            "spec": {"controllerName": translate.CONTROLLER_NAME},
        },
        {
            "apiVersion": f"{gateway_api}/v1",
            "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": "ns"},
            "spec": {
                "gatewayClassName": "envoy",
                "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"clusterIP": "10.96.0.10", "ports": [{"name": "http", "port": 8080}]},
        },
        {
            "apiVersion": f"{gateway_api}/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "chat", "namespace": "ns"},
            "spec": {
                "parentRefs": [{"name": "gw"}],
                "hostnames": ["api.example.com"],
                "rules": [{"backendRefs": [{"name": "svc", "port": 8080}]}],
            },
        },
        {
            "apiVersion": "gateway.envoyproxy.io/v1alpha1",
            "kind": "BackendTrafficPolicy",
            "metadata": {"name": "limits", "namespace": "ns"},
            "spec": {
                "targetRefs": [{"group": gateway_api, "kind": "HTTPRoute", "name": "chat"}],
                "rateLimit": {"global": {"rules": RULES}},
            },
        },
    ]


@pytest.fixture(scope="module")
def translated(tmp_path_factory: pytest.TempPathFactory) -> translate.Translation:
    workdir: Path = tmp_path_factory.mktemp("egctl-ratelimits")
    return translate.translate(_cluster(), workdir)


@pytest.fixture(scope="module")
def route(translated: translate.Translation) -> Obj:
    (policy,) = translated.objects("backendTrafficPolicies")
    (ancestor,) = policy["status"]["ancestors"]
    assert [c["type"] for c in ancestor["conditions"] if c["status"] == "True"] == ["Accepted"]
    return ratelimits.routes(translated.route_configs("gw", "ns"))[ROUTE]


def _sent(route: Obj, headers: dict[str, str]) -> list[Descriptor]:
    found = ratelimits.descriptors(route, headers)
    assert set(found) <= {DOMAIN}, "one filter, the listener's domain"
    return found.get(DOMAIN, [])


def _request(*entries: tuple[str, str], hits: int | None = None) -> Descriptor:
    return Descriptor((ON_ROUTE, *entries), hits_addend=hits)


def _response_cost(caller: str) -> Descriptor:
    return Descriptor(
        (ON_ROUTE, ("rule-4-match-0", caller)), hits_addend_format=TOKENS, on_stream_done=True
    )


def test_a_caller_gets_its_own_bucket_and_the_inverted_and_catch_all_ones(route: Obj) -> None:
    assert _sent(route, {CALLER: "a"}) == [
        _request(("rule-0-match-0", "a")),
        _request(("rule-2-match-0", "rule-2-match-0")),  # not team-a: the inverted match holds
        _request(("rule-3-match--1", "rule-3-match--1")),
        _request(("rule-4-match-0", "a"), hits=0),
        _response_cost("a"),
    ]


def test_every_header_match_must_hold_and_a_regex_matches_the_whole_value(route: Obj) -> None:
    gold = _sent(route, {CALLER: "team-a", "x-tier": "gold"})
    assert (
        _request(("rule-1-match-0", "rule-1-match-0"), ("rule-1-match-1", "rule-1-match-1")) in gold
    )
    assert not any(("rule-2-match-0", "rule-2-match-0") in d.entries for d in gold)
    for tier in ({"x-tier": "golden"}, {}):
        assert not any(
            ("rule-1-match-0", "rule-1-match-0") in d.entries
            for d in _sent(route, {CALLER: "team-a", **tier})
        ), tier


def test_without_the_header_only_the_inverted_and_catch_all_rules_count(route: Obj) -> None:
    assert _sent(route, {"x-tier": "gold"}) == [
        _request(("rule-2-match-0", "rule-2-match-0")),
        _request(("rule-3-match--1", "rule-3-match--1")),
    ]


def test_header_names_compare_without_case(route: Obj) -> None:
    assert _sent(route, {"X-Fleetgate-Caller": "a"}) == _sent(route, {CALLER: "a"})


def test_a_descriptor_is_what_the_services_json_endpoint_reads() -> None:
    assert _request(("rule-4-match-0", "a"), hits=0).json() == {
        "entries": [
            {"key": ROUTE, "value": ROUTE},
            {"key": "rule-4-match-0", "value": "a"},
        ],
        "hitsAddend": 0,
    }
    assert "hitsAddend" not in _request(("k", "v")).json()
    assert _response_cost("a").json(hits_addend=42)["hitsAddend"] == 42


def test_the_listeners_rate_limit_filter_names_the_domain(
    translated: translate.Translation,
) -> None:
    assert ratelimits.listener_domains(translated.listeners("gw", "ns")) == [DOMAIN]


def test_route_action_rate_limits_go_to_every_filters_domain() -> None:
    shared = {"actions": [{"generic_key": {"descriptor_value": "shared"}}]}
    route = {"name": "r", "route": {"rate_limits": [shared]}}
    with pytest.raises(ValueError, match="name the listener's rate-limit domains"):
        ratelimits.descriptors(route, {})
    entries = (("generic_key", "shared"),)
    assert ratelimits.descriptors(route, {}, ["a", "b"]) == {
        "a": [Descriptor(entries)],
        "b": [Descriptor(entries)],
    }


def test_skip_if_absent_skips_the_action_not_the_descriptor() -> None:
    rate_limit = {
        "actions": [
            {"genericKey": {"descriptorValue": "v"}},
            {"requestHeaders": {"headerName": "x", "descriptorKey": "x", "skipIfAbsent": True}},
        ]
    }
    assert ratelimits.descriptor(rate_limit, {}) == Descriptor((("generic_key", "v"),))
    assert ratelimits.descriptor(rate_limit, {"x": "1"}) == Descriptor(
        (("generic_key", "v"), ("x", "1"))
    )


def test_an_action_it_cannot_evaluate_raises() -> None:
    remote: Obj = {"actions": [{"remoteAddress": {}}]}
    with pytest.raises(ValueError, match="does not evaluate"):
        ratelimits.descriptor(remote, {})


# --- the loaded configuration, as the real service prints it ----------------------------

LOADED = (
    "fleetgate-system/fleetgate-gw-public/http."
    "httproute/fleetgate-system/fleetgate-gw-public-healthz/rule/0/match/0/*_"
    "httproute/fleetgate-system/fleetgate-gw-public-healthz/rule/0/match/0/*."
    "rule-0-match-0: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false"
)


def test_a_loaded_limit_line_parses_into_its_domain_unit_and_amount() -> None:
    """A line of /rlconfig as the pinned service printed it on the real control plane."""
    limit = ratelimit.parse_limit(LOADED)
    domain = "fleetgate-system/fleetgate-gw-public/http"
    assert (limit.unit, limit.requests_per_unit, limit.shadow_mode) == ("MINUTE", 3, False)
    assert limit.in_domain(domain)
    assert not limit.in_domain("fleetgate-system/fleetgate-gw-public/https")
    assert limit.key.endswith(".rule-0-match-0")
