"""compose-model-service, for a ModelService: one ModelRoute per serving gateway, through requests.

What each ModelRoute then composes is tested in test_model_route.py; here a
route's content is read from the plan the ModelService hands it.
"""

import base64
import copy
import random
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core import pacing
from fleetgate.core.names import fleet_gateway
from fleetgate.core.secrets import holder_name, is_holder
from fleetgate.model_service.composer import compose
from fleetgate.model_service.naming import (
    endpoint_key,
    is_route_key,
    model_route_key,
    model_route_name,
)
from schemas import xrds
from sim import pipeline
from tests.support import Outcome, request, run, secret
from tests.support.model_service import (
    API,
    API_KEY_VALUE,
    CANARY,
    NS,
    SVC,
    Required,
    as_observed,
    backend_refs,
    canary_fleet,
    cluster,
    condition,
    endpoint,
    entry,
    fleet,
    gateway,
    hosted,
    model_routes,
    plan,
    reconcile_route,
    route_of,
    routed,
    routes_observed,
    service,
    third_party,
)

# --- the canary ------------------------------------------------------------------


def test_canary_with_third_party_fallback() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    assert out.fatal == []
    assert out.warnings == []
    assert set(out.desired) == {model_route_key("public")}
    route = out.desired[model_route_key("public")]
    assert (route["apiVersion"], route["kind"]) == (API, "ModelRoute")
    assert route["metadata"] == {
        "name": model_route_name(SVC, "public"),
        "namespace": NS,
        "labels": {"fleetgate.dev/gateway": "public", "fleetgate.dev/service": "chat"},
    }
    assert route["spec"]["model"] == "team-a/chat"
    assert route["spec"]["gateway"] == {
        "name": "public",
        "gatewayName": fleet_gateway("public"),
        "providerConfigName": "pc-edge",
        "requestTimeout": "300s",
        "streamIdleTimeout": "60s",
    }
    hosts = {c: f"{c}-0123456789.fleetgate-system.svc.cluster.local" for c in ("eu-1", "us-1")}
    assert plan(out) == [
        {
            "endpoint": "qwen-eu-1",
            "weight": 9,
            "priority": 0,
            "modelNameOverride": "team-a/qwen",
            "host": hosts["eu-1"],
            "port": 443,
            "schema": "OpenAI",
            "prefix": "/team-a/qwen/v1",
            "tls": "Mutual",
            "cluster": "eu-1",
        },
        {
            "endpoint": "qwen-us-1",
            "weight": 1,
            "priority": 0,
            "modelNameOverride": "team-a/qwen",
            "host": hosts["us-1"],
            "port": 443,
            "schema": "OpenAI",
            "prefix": "/team-a/qwen/v1",
            "tls": "Mutual",
            "cluster": "us-1",
        },
        {
            "endpoint": "openai",
            "weight": 1,
            "priority": 1,
            "modelNameOverride": "gpt-4o-mini",
            "host": "api.openai.com",
            "port": 443,
            "schema": "OpenAI",
            "prefix": "/v1",
            "tls": "System",
            "credential": {"name": "openai", "key": "apiKey"},
        },
    ]
    status, reason, message = condition(out)
    assert (status, reason) == ("False", "WaitingForRoutes")
    assert message == "pending on public (ModelRoute not created yet); 3 of 3 endpoints usable"
    assert out.composite["status"] == {
        "model": "team-a/chat",
        "endpoints": {"total": 3, "ready": 3},
        "gateways": [{"name": "public", "openAI": "https://public.example.com/v1"}],
    }
    assert out.composite_ready == "READY_FALSE"
    assert out.rsp.desired.resources[model_route_key("public")].ready == fnv1.READY_FALSE


def test_the_plan_is_what_the_model_route_composes() -> None:
    """The ModelService's plan reaches the gateway's cluster unchanged, through its ModelRoute."""
    out = run(compose, request(CANARY, required=canary_fleet()))
    composed = route_of(out)
    assert composed.fatal == []
    [route] = [
        o["spec"]["forProvider"]["manifest"]
        for o in composed.desired.values()
        if o["spec"]["forProvider"]["manifest"]["kind"] == "AIGatewayRoute"
    ]
    refs = route["spec"]["rules"][0]["backendRefs"]
    assert [(r["weight"], r["priority"], r.get("modelNameOverride")) for r in refs] == [
        (b["weight"], b["priority"], b.get("modelNameOverride")) for b in plan(out)
    ]
    assert {o["spec"]["providerConfigRef"]["name"] for o in composed.desired.values()} == {
        "pc-edge"
    }


# --- variations on endpoints ---------------------------------------------------------

SHAPES = [
    # service, required, backendRefs (endpoint, weight, priority level)
    pytest.param(
        service(entry(90, track="stable"), entry(10, track="canary")),
        fleet(
            [
                hosted("a", "eu-1", labels={"track": "stable"}),
                hosted("b", "eu-1", labels={"track": "stable"}),
                hosted("c", "us-1", labels={"track": "stable"}),
            ],
            [hosted("d", "us-1", labels={"track": "canary"})],
        ),
        [("a", 3, 0), ("b", 3, 0), ("c", 3, 0), ("d", 1, 0)],
        id="90 over three and 10 over one",
    ),
    pytest.param(
        service(entry(1, app="qwen")),
        fleet([hosted(f"e{i}", "eu-1", labels={"app": "qwen"}) for i in range(5)]),
        [(f"e{i}", 1, 0) for i in range(5)],
        id="weight 1 over five",
    ),
    pytest.param(
        service(entry(90, track="stable"), entry(10, app="qwen")),
        fleet(
            [hosted("a", "eu-1", labels={"track": "stable", "app": "qwen"})],
            [
                hosted("a", "eu-1", labels={"track": "stable", "app": "qwen"}),
                hosted("b", "us-1", labels={"app": "qwen"}),
            ],
        ),
        [("a", 9, 0), ("b", 1, 0)],
        id="endpoint matched twice belongs to the first entry",
    ),
    pytest.param(
        service(entry(1, 5, tier="a"), entry(1, 9, tier="b"), entry(1, 63, tier="c")),
        fleet(
            [hosted("a", "eu-1", labels={"tier": "a"})],
            [hosted("b", "eu-1", labels={"tier": "b"})],
            [hosted("c", "eu-1", labels={"tier": "c"})],
        ),
        [("a", 1, 0), ("b", 1, 1), ("c", 1, 2)],
        id="priorities renumbered without gaps",
    ),
    pytest.param(
        service(entry(1, 0, tier="a"), entry(1, 1, tier="b"), entry(1, 2, tier="c")),
        fleet(
            [hosted("a", "eu-1", labels={"tier": "a"}, ready="False")],
            [hosted("b", "eu-1", labels={"tier": "b"})],
            [third_party("openai", labels={"tier": "c"})],
        ),
        [("b", 1, 0), ("openai", 1, 1)],
        id="a tier with no ready endpoint leaves no gap",
    ),
    pytest.param(
        service(entry(1000, 0, tier="a"), entry(1, 1, tier="b")),
        fleet(
            [hosted("a", "eu-1", labels={"tier": "a"})],
            [hosted("b", "eu-1", labels={"tier": "b"})],
        ),
        [("a", 1, 0), ("b", 1, 1)],
        id="weights are relative within a tier only",
    ),
    pytest.param(
        service(entry(90, track="none"), entry(10, track="canary")),
        fleet([], [hosted("d", "us-1", labels={"track": "canary"})]),
        [("d", 1, 0)],
        id="entry that matches nothing",
    ),
]


@pytest.mark.parametrize(("xr", "required", "expected"), SHAPES)
def test_route_shape(xr: dict[str, Any], required: Required, expected: list[Any]) -> None:
    out = run(compose, request(xr, required=required))
    assert out.fatal == []
    assert backend_refs(out) == expected


BACKENDS = [
    # the endpoint, what its backend in the plan says about how to reach it
    pytest.param(
        endpoint("plain", "http://vllm.models.svc:8000", labels={"app": "x"}),
        {"host": "vllm.models.svc", "port": 8000, "tls": "Off", "schema": "OpenAI"},
        id="third party over plain HTTP, no model: the caller's name passes through",
    ),
    pytest.param(
        third_party(
            "anthropic",
            origin="https://API.Anthropic.com",
            model="claude-sonnet-4",
            api={"schema": "Anthropic"},
            labels={"app": "x"},
            credentialRef={"name": "openai", "key": "apiKey"},
        ),
        {
            "host": "api.anthropic.com",
            "tls": "System",
            "schema": "Anthropic",
            "prefix": "/v1",
            "modelNameOverride": "claude-sonnet-4",
            "credential": {"name": "openai", "key": "apiKey"},
        },
        id="Anthropic with a credential under another key",
    ),
    pytest.param(
        hosted("q", "eu-1", labels={"app": "x"}),
        {"tls": "Mutual", "cluster": "eu-1", "port": 443},
        id="fleet-hosted: mutual TLS to its cluster",
    ),
]


@pytest.mark.parametrize(("ep", "expected"), BACKENDS)
def test_how_each_backend_is_reached(ep: dict[str, Any], expected: dict[str, Any]) -> None:
    out = run(compose, request(service(entry(app="x")), required=fleet([ep])))
    [backend] = plan(out)
    assert {k: backend.get(k) for k in expected} == expected
    if "modelNameOverride" not in expected:
        assert ("modelNameOverride" in backend) == ("model" in ep["spec"])
    if "credential" not in expected:
        assert "credential" not in backend
    if expected["tls"] != "Mutual":
        assert "cluster" not in backend


def test_failover_timeouts_come_from_the_gateway() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway(failover={"requestTimeout": "15m", "streamIdleTimeout": "20s"})]
    gw = model_routes(run(compose, request(CANARY, required=required)))["public"]["spec"]["gateway"]
    assert (gw["requestTimeout"], gw["streamIdleTimeout"]) == ("15m", "20s")


@pytest.mark.parametrize(
    ("tls", "section"),
    [
        pytest.param(True, {"sectionName": "https"}, id="tls"),
        pytest.param(False, {}, id="plain HTTP"),
    ],
)
def test_with_tls_a_model_is_routed_on_the_https_listener_only(
    tls: bool, section: dict[str, str]
) -> None:
    """Without a sectionName the route attached to the plain-HTTP listener too (egctl showed it)."""
    required = canary_fleet()
    required["gateways"] = [gateway(tls=tls)]
    gw = model_routes(run(compose, request(CANARY, required=required)))["public"]["spec"]["gateway"]
    assert {k: v for k, v in gw.items() if k == "sectionName"} == section


def test_a_fleet_hosted_endpoint_joins_a_gateway_only_once_it_reaches_the_cluster() -> None:
    """Until the gateway's CA copy and client certificate exist, a Backend to that cluster is
    unresolved and Envoy Gateway sends a share of the route to a 500: leave it out, say so."""
    required = canary_fleet()
    required["gateways"] = [gateway("public", reachable=("eu-1",)), gateway("internal", "edge")]
    out = run(compose, request(CANARY, required=required))
    assert routed(out, "public") == {"qwen-eu-1", "openai"}
    assert routed(out, "internal") == {"qwen-eu-1", "qwen-us-1", "openai"}
    assert any(
        "qwen-us-1 left out of the route on InferenceGateway public" in w and "us-1" in w
        for w in out.warnings
    ), out.warnings
    # Nothing reachable and nothing else to route: the gateway is pending, never skipped.
    required["gateways"] = [gateway("public", reachable=())]
    required["endpoints-2"] = []
    out = run(compose, request(CANARY, required=required))
    assert "public" not in model_routes(out)
    assert condition(out)[:2] == ("False", "WaitingForGateways")
    assert "mutual TLS" in condition(out)[2]


def test_an_anthropic_endpoint_stays_out_of_a_route_openai_traffic_takes() -> None:
    """Envoy AI Gateway v1.1.0 cannot translate OpenAI chat completions to api.schema
    Anthropic: next to OpenAI endpoints such an endpoint would fail every /v1 request."""
    claude = third_party("claude", origin="https://api.anthropic.com", model="claude-sonnet-4")
    claude["spec"]["api"] = {"schema": "Anthropic"}
    required = canary_fleet()
    required["endpoints-2"] = [claude]
    out = run(compose, request(CANARY, required=required))
    assert "claude" not in routed(out)
    assert routed(out) == {"qwen-eu-1", "qwen-us-1"}
    assert any("team-a/claude left out" in w and "Anthropic API" in w for w in out.warnings)
    # Only Anthropic endpoints: routed (Anthropic callers are served), with a warning.
    only = service(entry(1, provider="claude"))
    required = fleet([claude])
    required["credential-claude"] = [secret("claude", NS, {"apiKey": API_KEY_VALUE})]
    out = run(compose, request(only, required=required))
    assert routed(out) == {"claude"}
    assert any("OpenAI-dialect requests (/v1)" in w and "claude" in w for w in out.warnings)


def test_a_route_holds_at_most_the_backends_a_model_route_allows() -> None:
    cap = xrds.field("ModelRoute", "spec.backends")["maxItems"]
    many = [hosted(f"e{i:04d}", "eu-1", labels={"app": "x"}) for i in range(cap + 2)]
    out = run(compose, request(service(entry(app="x")), required=fleet(many)))
    assert len(backend_refs(out)) == cap
    assert {f"e{cap:04d}", f"e{cap + 1:04d}"}.isdisjoint(routed(out))
    assert sum(f"route holds at most {cap}" in w for w in out.warnings) == 2
    assert out.composite["status"]["endpoints"] == {"total": cap + 2, "ready": cap}


# --- endpoints left out ------------------------------------------------------------

LEFT_OUT = [
    # the left-out endpoint, extra required resources, warning fragment
    pytest.param(hosted("x", "eu-1", ready="False"), {}, "EndpointReady is False", id="not ready"),
    pytest.param(
        hosted("x", "eu-1", ready=None), {}, "no EndpointReady condition", id="no EndpointReady yet"
    ),
    pytest.param(endpoint("x", "https://10.0.0.7"), {}, "IP address", id="IPv4 origin"),
    pytest.param(endpoint("x", "https://[fd00::7]:8443"), {}, "IPv6", id="IPv6 origin"),
    pytest.param(
        endpoint("x", "https://api.example.com/v1"), {}, "origin refused", id="origin with a path"
    ),
    pytest.param(
        endpoint("x", "http://eu-1.example", labels={"fleetgate.dev/cluster": "eu-1"}),
        {},
        "must use https",
        id="fleet-hosted over http",
    ),
    pytest.param(
        hosted("x", "eu-1"),
        {
            "clusters": [
                cluster("edge", provider_config="pc-edge"),
                cluster("eu-1", ca_pem=None),
                cluster("us-1"),
            ]
        },
        "InferenceCluster eu-1 has not published its CA",
        id="cluster has not published its CA",
    ),
    pytest.param(hosted("x", "gone"), {}, "InferenceCluster gone not found", id="cluster unknown"),
    pytest.param(
        third_party("x"),
        {"credential-x": []},
        "Secret team-a/x does not exist",
        id="credential Secret absent",
    ),
    pytest.param(
        third_party("x", credentialRef={"name": "x", "key": "token"}),
        {"credential-x": [secret("x", NS, {"apiKey": API_KEY_VALUE})]},
        "Secret team-a/x has no key 'token'",
        id="credential key absent",
    ),
]


@pytest.mark.parametrize(("left", "extra", "fragment"), LEFT_OUT)
def test_unusable_endpoint_is_left_out_and_named(
    left: dict[str, Any], extra: Required, fragment: str
) -> None:
    left["metadata"]["labels"]["app"] = "x"
    keep = hosted("ok", "us-1", labels={"app": "x"})
    out = run(compose, request(service(entry(app="x")), required=fleet([left, keep], **extra)))
    assert out.fatal == []
    assert routed(out) == {"ok"}
    [warning] = out.warnings
    assert "ModelEndpoint team-a/x left out" in warning
    assert fragment in warning
    assert out.composite["status"]["endpoints"] == {"total": 2, "ready": 1}

    # Alone, it leaves nothing to route: nothing is composed, and RoutingReady says so.
    alone = run(compose, request(service(entry(app="x")), required=fleet([left], **extra)))
    assert alone.desired == {}
    status, reason, message = condition(alone)
    assert (status, reason) == ("False", "NoReadyEndpoints")
    assert "none of the 1 selected ModelEndpoints can be routed (1 " in message
    assert any(fragment in w for w in alone.warnings)
    assert alone.composite["status"]["gateways"] == []


def test_no_ready_endpoints_message_counts_each_cause() -> None:
    out = run(
        compose,
        request(
            service(entry(app="x")),
            required=fleet(
                [
                    hosted("a", "eu-1", labels={"app": "x"}, ready="False"),
                    hosted("b", "eu-1", labels={"app": "x"}, ready="False"),
                    endpoint("c", "https://10.1.2.3", labels={"app": "x"}),
                ]
            ),
        ),
    )
    assert condition(out)[2] == (
        "none of the 3 selected ModelEndpoints can be routed (2 not ready, 1 origin refused)"
    )
    assert out.composite["status"]["endpoints"] == {"total": 3, "ready": 0}


def test_nothing_selected() -> None:
    out = run(compose, request(service(entry(app="nothing")), required=fleet([])))
    assert out.desired == {}
    assert condition(out)[:2] == ("False", "NoReadyEndpoints")
    assert "no ModelEndpoint matches" in condition(out)[2]


# --- gateways ------------------------------------------------------------------------

GATEWAYS = [
    # gateways, clusters, gateways routing, reason, message fragment
    pytest.param(
        [gateway("public")],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForRoutes",
        "public (ModelRoute not created yet)",
        id="no selector serves every service",
    ),
    pytest.param(
        [gateway("public", selector={"exposure": "public"})],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForRoutes",
        "public",
        id="selector matches the service's labels",
    ),
    pytest.param(
        [
            gateway("public", selector={"exposure": "public"}),
            gateway("internal", "core", selector={"team": "research"}),
        ],
        [cluster("edge", provider_config="pc-edge"), cluster("core", provider_config="pc-core")],
        {"public", "internal"},
        "WaitingForRoutes",
        "internal (ModelRoute not created yet); public (ModelRoute not created yet)",
        id="two gateways with different selectors both serve",
    ),
    pytest.param(
        [gateway("public"), gateway("partner", selector={"exposure": "partner"})],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForRoutes",
        "pending on public (",
        id="selector not matching: not served, not pending",
    ),
    pytest.param(
        [gateway("partner", selector={"exposure": "partner"})],
        [cluster("edge", provider_config="pc-edge")],
        set(),
        "NoGatewaySelectsService",
        "none of the 1 InferenceGateways selects this service",
        id="no gateway selects the service",
    ),
    pytest.param([], [], set(), "NoGatewaySelectsService", "none of the 0", id="no gateway at all"),
    pytest.param(
        [gateway("public"), gateway("internal", client_ca=None)],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForGateways",
        "internal (its client CA is not published yet)",
        id="gateway without a client CA is pending, not skipped",
    ),
    pytest.param(
        [gateway("public", "fresh")],
        [cluster("fresh")],
        set(),
        "WaitingForGateways",
        "public (its InferenceCluster fresh has no ProviderConfig)",
        id="gateway whose cluster has no ProviderConfig",
    ),
    pytest.param(
        [gateway("public", "missing")],
        [],
        set(),
        "WaitingForGateways",
        "public (its InferenceCluster missing not found)",
        id="gateway whose cluster does not exist",
    ),
]


@pytest.mark.parametrize(
    ("gateways", "clusters", "serving", "reason", "fragment"),
    GATEWAYS,
)
def test_gateways(
    gateways: list[dict[str, Any]],
    clusters: list[dict[str, Any]],
    serving: set[str],
    reason: str,
    fragment: str,
) -> None:
    xr = service(entry(app="x"), labels={"exposure": "public", "team": "research"})
    required = fleet([hosted("a", "eu-1", labels={"app": "x"})])
    required["gateways"] = gateways
    required["clusters"] = [*clusters, cluster("eu-1")]
    out = run(compose, request(xr, required=required))
    assert out.fatal == []
    assert set(model_routes(out)) == serving
    assert set(out.desired) == {model_route_key(gw) for gw in serving}
    assert {g["name"] for g in out.composite["status"]["gateways"]} == serving
    status, got_reason, message = condition(out)
    assert (status, got_reason) == ("False", reason)
    assert fragment in message
    if reason == "WaitingForGateways":
        assert any("selects this service but cannot serve it yet" in w for w in out.warnings)


def test_each_gateway_gets_its_own_model_route() -> None:
    required = canary_fleet()
    required["gateways"] = [
        gateway("public", "edge"),
        gateway("internal", "edge", failover={"requestTimeout": "30s"}),
    ]
    out = run(compose, request(CANARY, required=required))
    routes = model_routes(out)
    assert {r["metadata"]["name"] for r in routes.values()} == {
        model_route_name(SVC, "public"),
        model_route_name(SVC, "internal"),
    }
    assert routes["internal"]["spec"]["gateway"]["requestTimeout"] == "30s"
    assert plan(out, "internal") == plan(out, "public"), "one plan, every gateway"


def test_gateways_on_one_cluster_never_share_a_remote_object() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway("public", "edge"), gateway("internal", "edge")]
    out = run(compose, request(CANARY, required=required))
    # A credential's holder and filler are one remote Secret's two Objects.
    names = [
        (
            o["spec"]["forProvider"]["manifest"]["kind"],
            o["spec"]["forProvider"]["manifest"]["metadata"]["name"],
        )
        for gw in ("public", "internal")
        for o in route_of(out, gw).desired.values()
        if not is_holder(o)
    ]
    assert len(names) == len(set(names)) == 2 * 11


def test_two_services_never_share_a_remote_object_or_a_model_route() -> None:
    first = run(compose, request(CANARY, required=canary_fleet()))
    other = copy.deepcopy(CANARY)
    other["metadata"]["name"] = "chat-canary"
    second = run(compose, request(other, required=canary_fleet()))

    def remote(out: Outcome) -> set[tuple[str, str]]:
        return {
            (m["kind"], m["metadata"]["name"])
            for m in (o["spec"]["forProvider"]["manifest"] for o in route_of(out).desired.values())
        }

    assert remote(first).isdisjoint(remote(second))
    assert (
        model_routes(first)["public"]["metadata"]["name"]
        != (model_routes(second)["public"]["metadata"]["name"])
    )


# --- passes, as Crossplane makes them ----------------------------------------------


def test_requirements_are_declared_step_by_step() -> None:
    first = run(compose, request(CANARY))
    assert set(first.requirements) == {
        "gateways",
        "clusters",
        "endpoints-0",
        "endpoints-1",
        "endpoints-2",
    }
    for key, kind in (("gateways", "InferenceGateway"), ("clusters", "InferenceCluster")):
        every = first.requirements[key]
        assert (every.api_version, every.kind, every.WhichOneof("match")) == (
            API,
            kind,
            "match_labels",
        ), "an empty label selector must still be present, or it matches nothing"
        assert dict(every.match_labels.labels) == {}
    sel = first.requirements["endpoints-2"]
    assert (sel.kind, sel.namespace, dict(sel.match_labels.labels)) == (
        "ModelEndpoint",
        NS,
        {"provider": "openai"},
    )
    assert first.desired == {}
    assert condition(first)[:2] == ("False", "WaitingForResources")

    required = canary_fleet()
    del required["credential-openai"]
    second = run(compose, request(CANARY, required=required))
    assert second.required_secret("credential-openai") == ("openai", NS)
    assert second.desired == {}, "no partial route while a credential is unresolved"
    assert "Secret team-a/openai" in condition(second)[2]


def test_credentials_are_required_only_for_endpoints_that_could_be_routed() -> None:
    required = fleet([third_party("openai", ready="False")])
    out = run(compose, request(service(entry(provider="openai")), required=required))
    assert "credential-openai" not in out.requirements


UNRESOLVED = ["gateways", "clusters", "endpoints-1", "credential-openai"]


@pytest.mark.parametrize("missing", UNRESOLVED)
def test_unresolved_input_changes_nothing(missing: str) -> None:
    composed = run(compose, request(CANARY, required=canary_fleet()))
    observed = routes_observed(composed)
    accepted = run(compose, request(CANARY, required=canary_fleet(), observed=observed))
    required = canary_fleet()
    del required[missing]
    xr = copy.deepcopy(CANARY)
    xr["status"] = accepted.composite["status"]
    out = run(compose, request(xr, required=required, observed=observed))
    assert out.desired == composed.desired, "kept as composed, without what Crossplane added"
    assert condition(out)[:2] == ("False", "WaitingForResources")
    assert out.composite["status"]["gateways"] == accepted.composite["status"]["gateways"]
    assert out.composite["status"]["endpoints"] == {"total": 3, "ready": 3}


def test_an_endpoint_whose_reconcile_failed_changes_nothing() -> None:
    """Crossplane marks every condition of an XR whose pipeline failed Unknown, reason
    FatalError (v2.4.0 reconciler.go:790-802): its EndpointReady says nothing, and the
    route keeps it instead of withdrawing it for a function's blip."""
    composed = run(compose, request(CANARY, required=canary_fleet()))
    observed = routes_observed(composed)
    accepted = run(compose, request(CANARY, required=canary_fleet(), observed=observed))
    required = canary_fleet()
    failed = required["endpoints-1"][0] = pipeline.after_failed_reconcile(
        required["endpoints-1"][0]
    )
    xr = copy.deepcopy(CANARY)
    xr["status"] = accepted.composite["status"]
    out = run(compose, request(xr, required=required, observed=observed))
    assert out.desired == composed.desired, "kept as composed"
    status, reason, message = condition(out)
    assert (status, reason) == ("False", "WaitingForResources")
    assert f"ModelEndpoint {NS}/{failed['metadata']['name']} (its last reconcile failed)" in message


def test_walk_from_composed_to_accepted_and_back() -> None:
    # Pass 1: the ModelRoute is composed, not reconciled yet.
    composed = run(compose, request(CANARY, required=canary_fleet()))
    assert condition(composed)[:2] == ("False", "WaitingForRoutes")

    # Pass 2: the controllers refused the route: the reason carries their message.
    refused = routes_observed(composed, accepted=False, refusal="backend not found")
    out = run(compose, request(CANARY, required=canary_fleet(), observed=refused))
    assert condition(out)[:2] == ("False", "WaitingForRoutes")
    assert "public (Envoy AI Gateway refused the route: backend not found)" in condition(out)[2]
    assert out.rsp.desired.resources[model_route_key("public")].ready == fnv1.READY_FALSE

    # Pass 3: everything accepted.
    observed = routes_observed(composed)
    accepted = run(compose, request(CANARY, required=canary_fleet(), observed=observed))
    status, reason, message = condition(accepted)
    assert (status, reason) == ("True", "RoutesAccepted")
    assert message == "accepted on public; 3 of 3 endpoints usable"
    assert accepted.xr_ready
    assert accepted.rsp.desired.resources[model_route_key("public")].ready == fnv1.READY_TRUE
    assert accepted.desired == composed.desired, "nothing flaps once accepted"

    # Pass 4: the credential vanishes: that endpoint leaves, the route stays.
    required = canary_fleet(**{"credential-openai": []})
    gone = run(compose, request(CANARY, required=required, observed=observed))
    assert routed(gone) == {"qwen-eu-1", "qwen-us-1"}
    assert any("Secret team-a/openai does not exist" in w for w in gone.warnings)
    assert gone.composite["status"]["endpoints"] == {"total": 3, "ready": 2}
    # Routed, but the left-out endpoint's return is a required resource, seen
    # only on a call: the service asks again sooner than a settled one.
    assert accepted.rsp.meta.ttl.ToSeconds() == pacing.SETTLED.total_seconds()
    assert condition(gone)[0] == "True"
    assert gone.rsp.meta.ttl.ToSeconds() == pacing.WAITING_MIN.total_seconds()

    # Pass 5: a cluster withdraws its CA: its endpoint leaves too.
    required["clusters"] = [
        cluster("edge", provider_config="pc-edge"),
        cluster("eu-1", ca_pem=None),
        cluster("us-1"),
    ]
    withdrawn = run(compose, request(CANARY, required=required, observed=routes_observed(gone)))
    assert backend_refs(withdrawn) == [("qwen-us-1", 1, 0)]


def _route_ready(observed: dict[str, dict[str, Any]], gw: str, **ready: Any) -> None:
    """Rewrite the Ready Crossplane wrote on gateway ``gw``'s ModelRoute."""
    route = observed[model_route_key(gw)]
    route["metadata"]["generation"] = 2
    [cond] = [c for c in route["status"]["conditions"] if c["type"] == "Ready"]
    cond.update(ready)


@pytest.mark.parametrize(
    ("ready", "why"),
    [
        pytest.param(
            {"status": "False", "reason": "Creating", "message": "Unready resources: x-backend"},
            "public (ModelRoute not Ready: Unready resources: x-backend)",
            id="accepted-not-ready",
        ),
        pytest.param(
            {"status": "True", "observedGeneration": 1},
            "public (ModelRoute not reconciled yet)",
            id="ready-for-an-older-spec",
        ),
    ],
)
def test_a_route_is_routed_only_once_its_model_route_is_ready_for_its_spec(
    ready: dict[str, Any], why: str
) -> None:
    """RouteAccepted is the ModelRoute's word on the route; Ready (Crossplane's, stamped with
    the generation it composed) says all of it is on the cluster, for the current spec."""
    composed = run(compose, request(CANARY, required=canary_fleet()))
    observed = routes_observed(composed)
    _route_ready(observed, "public", **ready)
    out = run(compose, request(CANARY, required=canary_fleet(), observed=observed))
    status, reason, message = condition(out)
    assert (status, reason) == ("False", "WaitingForRoutes")
    assert why in message
    assert out.rsp.desired.resources[model_route_key("public")].ready == fnv1.READY_FALSE
    assert not out.xr_ready
    _route_ready(observed, "public", status="True", observedGeneration=2)
    assert (
        condition(run(compose, request(CANARY, required=canary_fleet(), observed=observed)))[0]
        == "True"
    )


def test_a_gateway_that_loses_its_prerequisites_keeps_what_it_had() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway("public"), gateway("internal", "core")]
    required["clusters"].append(cluster("core", provider_config="pc-core"))
    composed = run(compose, request(CANARY, required=required))
    assert set(model_routes(composed)) == {"public", "internal"}
    observed = routes_observed(composed)

    required["gateways"] = [gateway("public"), gateway("internal", "core", client_ca=None)]
    out = run(compose, request(CANARY, required=required, observed=observed))
    assert out.desired == composed.desired
    assert condition(out)[:2] == ("False", "WaitingForGateways")
    assert [g["name"] for g in out.composite["status"]["gateways"]] == ["public"]

    # A gateway that stops selecting the service has its route withdrawn, then deleted.
    required["gateways"] = [gateway("public"), gateway("internal", "core", selector={"x": "y"})]
    dropped = run(compose, request(CANARY, required=required, observed=observed))
    assert model_routes(dropped)["internal"]["spec"]["withdraw"] is True
    assert "withdraw" not in model_routes(dropped)["public"]["spec"]
    assert condition(dropped)[:2] == ("True", "RoutesAccepted")
    internal = model_route_key("internal")
    assert dropped.rsp.desired.resources[internal].ready == fnv1.READY_TRUE, "holds nothing up"
    observed[internal]["spec"]["withdraw"] = True
    observed[internal]["status"]["withdrawn"] = True
    gone = run(compose, request(CANARY, required=required, observed=observed))
    assert set(model_routes(gone)) == {"public"}


def test_a_withdrawn_route_leaves_its_cluster_in_stages_then_says_so() -> None:
    """Its Objects deleted together, Envoy AI Gateway v1.1.0 can leave an AIServiceBackend
    Terminating for good (envoyproxy/ai-gateway#2565): so route first, then the Backends and
    AIServiceBackends, then each credential."""
    composed = run(compose, request(CANARY, required=canary_fleet()))
    xr = copy.deepcopy(model_routes(composed)["public"])
    settled = as_observed(route_of(composed))
    xr["spec"]["withdraw"] = True
    first = reconcile_route(xr, settled)
    assert not [k for k in first.desired if is_route_key(k)], "the route goes at once"
    assert set(first.desired) == {k for k in settled if "/" in k}
    status, reason, message = first.conditions["RouteAccepted"]
    assert (status, reason) == ("False", "Withdrawn")
    assert message.endswith("waiting for openai, qwen-eu-1, qwen-us-1 to leave its cluster")
    assert first.composite["status"]["withdrawn"] is False
    credential = {endpoint_key("openai", "security-policy"), endpoint_key("openai", "api-key")}
    holder = holder_name(endpoint_key("openai", "api-key"))
    second = reconcile_route(xr, as_observed(first))
    assert set(second.desired) == credential | {holder}
    third = reconcile_route(xr, as_observed(second))
    assert set(third.desired) == {holder}
    assert third.composite["status"]["withdrawn"] is False
    gone = reconcile_route(xr, {})
    assert gone.desired == {}
    assert gone.composite["status"]["withdrawn"] is True


# --- invariants ------------------------------------------------------------------------


def test_no_secret_value_anywhere_in_the_response() -> None:
    """The credential Secret is required (for its key's presence): its value goes no further."""
    req = request(CANARY, required=canary_fleet())
    needles = (API_KEY_VALUE, base64.b64encode(API_KEY_VALUE.encode()).decode())
    assert any(n.encode() in req.SerializeToString() for n in needles)
    out = run(compose, req)
    assert out.fatal == []
    wire = out.rsp.SerializeToString()
    for needle in needles:
        assert needle.encode() not in wire
        assert needle not in str(out.rsp)


def test_a_model_route_is_carried_over_without_what_crossplane_wrote_into_it() -> None:
    composed = run(compose, request(CANARY, required=canary_fleet()))
    observed = routes_observed(composed)
    assert "crossplane" in observed[model_route_key("public")]["spec"]
    required = canary_fleet()
    required["gateways"] = [gateway(client_ca=None)]
    kept = run(compose, request(CANARY, required=required, observed=observed))
    assert kept.desired == composed.desired
    assert kept.rsp.desired.resources[model_route_key("public")].ready == fnv1.READY_TRUE


def test_same_inputs_same_output_whatever_the_order() -> None:
    def shuffled(seed: int) -> Required:
        required = canary_fleet()
        required["gateways"] = [
            gateway("b-gw", "edge"),
            gateway("a-gw", "edge"),
            gateway("c-gw", "edge"),
        ]
        rng = random.Random(seed)
        for items in required.values():
            rng.shuffle(items)
        return required

    outs = [run(compose, request(CANARY, required=shuffled(seed))) for seed in range(4)]
    for out in outs[1:]:
        assert out.rsp.SerializeToString(deterministic=True) == (
            outs[0].rsp.SerializeToString(deterministic=True)
        )


# --- bad input -------------------------------------------------------------------------

# The function refuses what the API server would: one past the XRD's bounds.
PRIORITY_MAX = xrds.field("ModelService", "spec.endpoints[].priority")["maximum"]
ENTRIES_MAX = xrds.field("ModelService", "spec.endpoints")["maxItems"]

MALFORMED = [
    pytest.param({**service(), "spec": None}, None, "spec", id="spec missing"),
    pytest.param(service(), None, "spec.endpoints", id="no entries"),
    pytest.param(service(entry(0, app="x")), None, "spec.endpoints[0].weight", id="weight 0"),
    pytest.param(
        service(entry(1, PRIORITY_MAX + 1, app="x")),
        None,
        "spec.endpoints[0].priority",
        id="priority over the XRD's maximum",
    ),
    pytest.param(
        service(*[entry(app=str(i)) for i in range(ENTRIES_MAX + 1)]),
        None,
        "spec.endpoints",
        id="more entries than the XRD allows",
    ),
    pytest.param(
        service({"selector": "app=x"}), None, "spec.endpoints[0].selector", id="selector wrong type"
    ),
    pytest.param(
        service({"selector": {"matchLabels": {"my app": "x"}}}),
        None,
        "spec.endpoints[0].selector.matchLabels.my app (the key)",
        id="selector key not a label key",
    ),
    pytest.param(
        {**service(entry(app="x")), "metadata": {"name": "chat"}},
        None,
        "metadata.namespace",
        id="namespace missing",
    ),
    pytest.param(
        service(entry(app="x")),
        fleet([], gateways=[{"metadata": {"name": "broken"}, "spec": {}}]),
        "InferenceGateway broken",
        id="gateway without clusterName",
    ),
    pytest.param(
        service(entry(app="x")),
        fleet([], clusters=[{**cluster("edge"), "status": {"providerConfigRef": "pc-edge"}}]),
        "InferenceCluster edge",
        id="the serving gateway's cluster with a malformed ProviderConfig reference",
    ),
    pytest.param(
        service(entry(app="x")),
        fleet([{"metadata": {"name": "broken", "namespace": NS}, "spec": {}}]),
        "ModelEndpoint broken",
        id="endpoint without origin",
    ),
    pytest.param(
        service(entry(app="x")),
        fleet([endpoint("ü", "https://api.example.com", model="m" * 100_000)]),
        "spec.model",
        id="endpoint with unicode, huge model name",
    ),
]


@pytest.mark.parametrize(("xr", "required", "field"), MALFORMED)
def test_bad_input_is_a_fatal_result_naming_the_field(
    xr: dict[str, Any], required: Required | None, field: str
) -> None:
    out = run(compose, request(xr, required=required))
    assert len(out.fatal) == 1
    assert field in out.fatal[0]
    assert out.desired == {}


def test_a_malformed_cluster_nothing_uses_does_not_stop_the_route() -> None:
    # Only the clusters of the selecting gateways and of fleet-hosted
    # endpoints are read; a broken one elsewhere in the fleet is not ours.
    required = canary_fleet()
    baseline = run(compose, request(CANARY, required=required))
    required["clusters"] = [*required["clusters"], {**cluster("zz"), "status": {"gateway": 1}}]
    out = run(compose, request(CANARY, required=required))
    assert out.fatal == []
    assert out.desired == baseline.desired
