"""compose-model-service's pure rules: weights, priority levels, origins, names."""

import re

import pytest

from fleetgate.core.names import hashed_label
from fleetgate.model_service.naming import (
    Service,
    ai_gateway_route_name,
    alerts_rule_name,
    api_key_name,
    backend_name,
    model_route_name,
)
from fleetgate.model_service.origin import Origin, OriginError, parse_origin
from fleetgate.model_service.weights import WEIGHT_MAX, renumber, tier_weights

# --- weights within a tier -----------------------------------------------------

WEIGHTS: list[tuple[str, list[tuple[int, int]], list[int]]] = [
    # name, (weight, endpoints matched) per entry, weight per endpoint in entry order
    ("90/10 over one endpoint each", [(90, 1), (10, 1)], [9, 1]),
    ("90 over three and 10 over one", [(90, 3), (10, 1)], [3, 3, 3, 1]),
    ("weight 1 over five", [(1, 5)], [1, 1, 1, 1, 1]),
    ("one entry, one endpoint", [(7, 1)], [1]),
    ("equal weights reduce to 1", [(50, 1), (50, 1)], [1, 1]),
    ("odd split stays exact", [(1, 2), (1, 3)], [3, 3, 2, 2, 2]),
    (
        "small weight over many endpoints never rounds to 0",
        [(1, 7), (1000, 1)],
        [1, 1, 1, 1, 1, 1, 1, 7000],
    ),
    ("entry that matched nothing is skipped", [(90, 0), (10, 2)], [1, 1]),
    ("no endpoints at all", [(5, 0)], []),
    ("largest allowed weights", [(1_000_000, 1), (1, 1)], [1_000_000, 1]),
    ("capped at the maximum, floor of 1", [(999_999, 1), (1, 2)], [WEIGHT_MAX, 1, 1]),
    (
        "capped, proportions kept, lowest terms again",
        [(999_999, 2), (999_998, 3)],
        [500_000, 500_000, 333_333, 333_333, 333_333],
    ),
]


@pytest.mark.parametrize(
    ("entries", "expected"), [c[1:] for c in WEIGHTS], ids=[c[0] for c in WEIGHTS]
)
def test_tier_weights(entries: list[tuple[int, int]], expected: list[int]) -> None:
    weights = tier_weights(entries)
    assert weights == expected
    assert all(1 <= w <= WEIGHT_MAX for w in weights)


def test_many_distinct_endpoint_counts_stay_within_bounds() -> None:
    # lcm(1..32) is ~1.4e14: the cap must bring it back without zeroes.
    weights = tier_weights([(1, n) for n in range(1, 33)])
    assert len(weights) == sum(range(1, 33))
    assert max(weights) == WEIGHT_MAX
    assert min(weights) >= 1


RENUMBER: list[tuple[str, list[int], dict[int, int]]] = [
    ("already dense", [0, 1], {0: 0, 1: 1}),
    ("gap closed", [0, 5, 9], {0: 0, 5: 1, 9: 2}),
    ("tier 0 empty", [3, 7, 7, 3], {3: 0, 7: 1}),
    ("single tier", [63], {63: 0}),
    ("nothing", [], {}),
]


@pytest.mark.parametrize(
    ("priorities", "expected"), [c[1:] for c in RENUMBER], ids=[c[0] for c in RENUMBER]
)
def test_renumber(priorities: list[int], expected: dict[int, int]) -> None:
    assert renumber(priorities) == expected


# --- origins -------------------------------------------------------------------

ORIGINS: list[tuple[str, str, Origin]] = [
    ("https default port", "https://api.openai.com", Origin("https", "api.openai.com", 443)),
    ("http default port", "http://vllm.models.svc", Origin("http", "vllm.models.svc", 80)),
    ("explicit port", "https://api.example.com:8443", Origin("https", "api.example.com", 8443)),
    ("uppercase host lowered", "https://API.Example.COM", Origin("https", "api.example.com", 443)),
    ("single label", "http://vllm:8000", Origin("http", "vllm", 8000)),
    (
        "digit-led label is a name",
        "https://1password.example",
        Origin("https", "1password.example", 443),
    ),
]


@pytest.mark.parametrize(
    ("origin", "expected"), [c[1:] for c in ORIGINS], ids=[c[0] for c in ORIGINS]
)
def test_parse_origin(origin: str, expected: Origin) -> None:
    assert parse_origin(origin) == expected


# What parse_origin refuses, by a fragment of the reason it gives: case name, origin.
REFUSED: dict[str, dict[str, str]] = {
    "IP address": {
        "IPv4": "https://10.0.0.1",
        "IPv4 with port": "http://192.168.1.20:8000",
        "decimal IPv4": "https://2130706433",
        "short IPv4": "https://10.1",
        "hex IPv4": "https://0x7f.1",
    },
    "IPv6": {
        "IPv6": "https://[2001:db8::1]",
        "IPv6 with port": "https://[::1]:443",
    },
    "nothing after the host": {
        "path": "https://api.openai.com/v1",
        "trailing slash": "https://api.openai.com/",
    },
    "http(s)://": {
        "other scheme": "ftp://files.example.com",
        "no scheme": "api.openai.com",
        "user info": "https://user@api.example.com",
    },
    "port": {
        "port zero": "https://api.example.com:0",
        "port too big": "https://api.example.com:70000",
        "port not a number": "https://api.example.com:https",
    },
    "DNS name": {
        "underscore": "https://my_host.example.com",
        "empty host": "https://",
    },
}


@pytest.mark.parametrize(
    ("origin", "fragment"),
    [
        pytest.param(origin, fragment, id=name)
        for fragment, cases in REFUSED.items()
        for name, origin in cases.items()
    ],
)
def test_origin_refused(origin: str, fragment: str) -> None:
    with pytest.raises(OriginError, match=re.escape(fragment)):
        parse_origin(origin)


# --- names ---------------------------------------------------------------------

LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
SVC = Service("team-a", "chat")
LONG = Service("n" * 63, "s" * 253)


NAMES: list[tuple[str, str, str]] = [
    # name, one remote name, another that must differ
    (
        "gateways sharing a cluster",
        ai_gateway_route_name(SVC, "public", ["openai"]),
        ai_gateway_route_name(SVC, "internal", ["openai"]),
    ),
    (
        "routes of two backend sets",
        ai_gateway_route_name(SVC, "public", ["openai"]),
        ai_gateway_route_name(SVC, "public", ["openai", "qwen"]),
    ),
    (
        "routes of one backend set in two orders",
        ai_gateway_route_name(SVC, "public", ["qwen", "openai"]),
        ai_gateway_route_name(SVC, "public", ["openai", "qwen"]),
    ),
    (
        "routes: endpoints split differently",
        ai_gateway_route_name(SVC, "public", ["a-b", "c"]),
        ai_gateway_route_name(SVC, "public", ["a", "b-c"]),
    ),
    (
        "a route and the failover alerts of its gateway",
        ai_gateway_route_name(SVC, "public", ["openai"]),
        alerts_rule_name(SVC, "public"),
    ),
    (
        "services selecting the same endpoint",
        backend_name(SVC, "public", "openai"),
        backend_name(Service("team-a", "chat-2"), "public", "openai"),
    ),
    (
        "dash ambiguity between namespace and name",
        ai_gateway_route_name(Service("a-b", "c"), "gw", ["e"]),
        ai_gateway_route_name(Service("a", "b-c"), "gw", ["e"]),
    ),
    (
        "dot vs dash in endpoint names",
        backend_name(SVC, "gw", "a.b"),
        backend_name(SVC, "gw", "a-b"),
    ),
    (
        "long names differing at the end",
        backend_name(LONG, "gw", "e" * 200 + "1"),
        backend_name(LONG, "gw", "e" * 200 + "2"),
    ),
    ("credential vs backend", api_key_name(SVC, "gw", "openai"), backend_name(SVC, "gw", "openai")),
    (
        "ModelRoutes of two gateways",
        model_route_name(SVC, "public"),
        model_route_name(SVC, "internal"),
    ),
    (
        "ModelRoutes: dash ambiguity between service and gateway",
        model_route_name(Service("team-a", "a-b"), "c"),
        model_route_name(Service("team-a", "a"), "b-c"),
    ),
    (
        "ModelRoutes of long names differing at the end",
        model_route_name(LONG, "g" * 252 + "1"),
        model_route_name(LONG, "g" * 252 + "2"),
    ),
]


@pytest.mark.parametrize(("one", "other"), [c[1:] for c in NAMES], ids=[c[0] for c in NAMES])
def test_remote_names_are_distinct_bounded_labels(one: str, other: str) -> None:
    assert one != other
    for name in (one, other):
        assert len(name) <= 63
        assert LABEL.match(name), name


def test_remote_names_are_stable_and_readable() -> None:
    route = ai_gateway_route_name(SVC, "public", ["openai"])
    assert route == ai_gateway_route_name(SVC, "public", ["openai"])
    assert route.startswith("team-a-chat-")
    assert backend_name(SVC, "public", "openai").startswith("team-a-chat-openai-")
    assert model_route_name(SVC, "public").startswith("chat-public-")


def test_hashed_label_covers_every_part_of_the_identity() -> None:
    assert hashed_label("x", "a", "b") != hashed_label("x", "a", "c")
    assert hashed_label("x", "a-b", "c") != hashed_label("x", "a", "b-c")
    assert hashed_label("UPPER_case", "k").startswith("upper-case-")
