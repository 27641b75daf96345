"""Who may call a model: ModelService.spec.access, resolved and enforced on every serving gateway.

The ModelService resolves its callers (those named, and the keys of its groups'
Secrets, read as key names only) into each ModelRoute; the ModelRoute composes
a SecurityPolicy allowing exactly those on the HTTPRoute AI Gateway generates.
What Envoy Gateway makes of that policy is checked by its own translator
(tests/e2e/test_translate.py, oracles/dataplane.py).
"""

import copy
from typing import Any

import pytest

from fleetgate.core.constants import CALLER_HEADER, SYSTEM_NAMESPACE
from fleetgate.core.governance import group_key
from fleetgate.core.kinds.route import ROUTE_CALLERS_MAX
from fleetgate.model_service.composer import compose
from fleetgate.model_service.naming import (
    model_route_key,
)
from sim import pipeline
from tests.support import Outcome, request, run, secret
from tests.support.model_service import (
    CANARY,
    canary_fleet,
    cluster,
    condition,
    gateway,
    model_routes,
    route_manifest,
    route_of,
    route_policy_spec,
    routes_observed,
)

GROUP_VALUE = "fg-key-never-in-desired-state-31c9"


def restricted(**access: Any) -> dict[str, Any]:
    xr = copy.deepcopy(CANARY)
    xr["spec"]["access"] = access
    return xr


def with_groups(**groups: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The canary fleet, plus each group's Secret holding those keys (or none: absent)."""
    required = canary_fleet()
    for name, keys in groups.items():
        found = [secret(name, SYSTEM_NAMESPACE, dict.fromkeys(keys, GROUP_VALUE))]
        required[group_key(name)] = found if keys else []
    return required


def callers(out: Outcome, gw: str = "public") -> list[str] | None:
    access = model_routes(out)[gw]["spec"].get("access")
    return None if access is None else access["callers"]


def policy(out: Outcome, gw: str = "public") -> dict[str, Any]:
    return route_manifest(route_of(out, gw), "caller-access")


def test_without_access_every_authenticated_caller_may_call() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    assert callers(out) is None
    assert not [k for k in route_of(out).desired if k.startswith("caller-access")]
    assert out.conditions["AccessResolved"][:2] == ("True", "Unrestricted")


def test_the_callers_named_and_every_key_of_each_group_may_call() -> None:
    xr = restricted(callers=["team-a", "ci"], groups=["research-keys"])
    out = run(compose, request(xr, required=with_groups(**{"research-keys": ["bob", "alice"]})))
    assert out.fatal == []
    assert callers(out) == ["alice", "bob", "ci", "team-a"]
    status, reason, message = out.conditions["AccessResolved"]
    assert (status, reason, message) == ("True", "Resolved", "4 callers may call")
    assert GROUP_VALUE not in str(out.rsp), "a group is read by its key names only"


def test_the_policy_allows_exactly_those_callers_on_the_generated_route() -> None:
    out = run(compose, request(restricted(callers=["team-a", "ci"]), required=canary_fleet()))
    # Merged into the gateway's API-key policy, never replacing it.
    assert route_policy_spec(route_of(out), "caller-access", "SecurityPolicy") == {
        "authorization": {
            "defaultAction": "Deny",
            "rules": [
                {
                    "name": "allowed-callers-0",
                    "action": "Allow",
                    "principal": {"headers": [{"name": CALLER_HEADER, "values": ["ci", "team-a"]}]},
                }
            ],
        },
    }


def test_access_with_nobody_listed_allows_nobody() -> None:
    out = run(compose, request(restricted(), required=canary_fleet()))
    assert callers(out) == []
    assert policy(out)["spec"]["authorization"] == {"defaultAction": "Deny"}
    assert out.conditions["AccessResolved"][:2] == ("True", "Resolved")


def test_many_callers_are_split_over_rules_of_at_most_256() -> None:
    keys = [f"caller-{i:04d}" for i in range(600)]
    xr = restricted(callers=keys[:256], groups=["bulk"])
    out = run(compose, request(xr, required=with_groups(bulk=keys[256:])))
    rules = policy(out)["spec"]["authorization"]["rules"]
    values = [r["principal"]["headers"][0]["values"] for r in rules]
    assert [len(v) for v in values] == [256, 256, 88]
    assert [v for chunk in values for v in chunk] == keys


def test_a_missing_group_adds_nobody_and_says_which_field() -> None:
    xr = restricted(callers=["ci"], groups=["research-keys", "gone"])
    out = run(compose, request(xr, required=with_groups(**{"research-keys": ["bob"], "gone": []})))
    assert out.fatal == []
    assert callers(out) == ["bob", "ci"], "fail closed: the others still may, nobody else"
    status, reason, message = out.conditions["AccessResolved"]
    assert (status, reason) == ("False", "CallersMissing")
    assert f"spec.access.groups[1]: Secret {SYSTEM_NAMESPACE}/gone not found" in message
    assert any("spec.access.groups[1]" in w for w in out.warnings)


def test_a_group_not_resolved_yet_changes_nothing() -> None:
    xr = restricted(groups=["research-keys"])
    composed = run(compose, request(xr, required=with_groups(**{"research-keys": ["bob"]})))
    required = canary_fleet()  # the group's requirement not answered yet
    observed = routes_observed(composed)
    out = run(compose, request(xr, required=required, observed=observed))
    assert condition(out)[:2] == ("False", "WaitingForResources")
    assert f"Secret {SYSTEM_NAMESPACE}/research-keys" in condition(out)[2]
    assert out.desired == composed.desired


def _narrowed_while(wait: str) -> tuple[Outcome, Outcome]:
    """The canary open to two callers, then narrowed to one while ``wait`` holds the route."""
    required = with_groups(**{"research-keys": ["bob", "alice"]})
    if wait == "gateway pending":
        required["gateways"] = [gateway("public"), gateway("internal", "core")]
        required["clusters"].append(cluster("core", provider_config="pc-core"))
    wide = restricted(groups=["research-keys"])
    composed = run(compose, request(wide, required=required))
    observed = routes_observed(composed)
    narrowed = with_groups(**{"research-keys": ["alice"]})
    if wait == "endpoint unknown":
        narrowed["endpoints-1"][0] = pipeline.after_failed_reconcile(narrowed["endpoints-1"][0])
    elif wait == "credential not looked up":
        del narrowed["credential-openai"]
    else:
        narrowed["gateways"] = [gateway("public"), gateway("internal", "core", client_ca=None)]
        narrowed["clusters"] = required["clusters"]
    return composed, run(compose, request(wide, required=narrowed, observed=observed))


WAITS = ["endpoint unknown", "credential not looked up", "gateway pending"]


@pytest.mark.parametrize("wait", WAITS)
def test_a_narrowed_access_reaches_every_route_whatever_it_waits_for(wait: str) -> None:
    """Who may call depends on no endpoint and no gateway: a revocation never waits."""
    composed, out = _narrowed_while(wait)
    assert condition(out)[0] == "False", "the route itself waits"
    for gw in model_routes(composed):
        assert callers(composed, gw) == ["alice", "bob"]
        assert callers(out, gw) == ["alice"], gw
        kept = {k: v for k, v in model_routes(out)[gw]["spec"].items() if k != "access"}
        before = {k: v for k, v in model_routes(composed)[gw]["spec"].items() if k != "access"}
        assert kept == before, "nothing else changes while it waits"


def test_access_removed_while_waiting_opens_the_route_as_asked() -> None:
    required = with_groups(**{"research-keys": ["bob"]})
    composed = run(compose, request(restricted(groups=["research-keys"]), required=required))
    waiting = canary_fleet()
    del waiting["credential-openai"]
    out = run(compose, request(CANARY, required=waiting, observed=routes_observed(composed)))
    assert callers(out) is None


def test_a_gateway_without_auth_never_serves_a_restricted_service() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway("public", "edge"), gateway("internal", "edge", auth=False)]
    out = run(compose, request(restricted(callers=["ci"]), required=required))
    assert set(out.desired) == {model_route_key("public")}, "no route where nobody is known"
    status, reason, message = condition(out)
    assert (status, reason) == ("False", "GatewayWithoutAuth")
    assert "not routed on internal: it authenticates no caller (no spec.auth)" in message
    assert out.composite_ready == "READY_FALSE"
    assert any("InferenceGateway internal" in w for w in out.warnings)


def test_only_gateways_without_auth_select_it_then_nothing_is_routed() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway("internal", "edge", auth=False)]
    out = run(compose, request(restricted(callers=["ci"]), required=required))
    assert out.desired == {}
    assert condition(out)[:2] == ("False", "GatewayWithoutAuth")


@pytest.mark.parametrize("auth", [True, False])
def test_an_unrestricted_service_is_routed_with_or_without_auth(auth: bool) -> None:
    required = canary_fleet()
    required["gateways"] = [gateway("public", "edge", auth=auth)]
    out = run(compose, request(CANARY, required=required))
    assert set(out.desired) == {model_route_key("public")}


def test_more_callers_than_a_route_holds_are_cut_and_said() -> None:
    keys = [f"caller-{i:05d}" for i in range(ROUTE_CALLERS_MAX + 4)]
    out = run(compose, request(restricted(groups=["bulk"]), required=with_groups(bulk=keys)))
    assert callers(out) == keys[:ROUTE_CALLERS_MAX], "fail closed: the rest may not call"
    status, reason, message = out.conditions["AccessResolved"]
    assert (status, reason) == ("False", "TooManyCallers")
    assert (
        f"spec.access resolves to {len(keys)} callers, more than {ROUTE_CALLERS_MAX}: only "
        f"the first {ROUTE_CALLERS_MAX} by name may call, the rest are denied"
    ) in message
