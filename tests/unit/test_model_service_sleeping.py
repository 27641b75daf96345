"""compose-model-service with endpoints whose deployment scales to zero: a sleeping endpoint
is parked after every awake tier, so the next answers at once and waking changes the route in
place; with every tier asleep the route still reaches them (a request is what
wakes them) and callers read a 503 with Retry-After; ColdStartUnhidden says when that can
happen."""

from typing import Any

from fleetgate.model_service.composer import compose
from tests.support import request, run
from tests.support.model_service import (
    backend_refs,
    condition,
    entry,
    fleet,
    hosted,
    plan,
    route_manifest,
    route_of,
    routed,
    service,
    third_party,
)

MAY_SLEEP = {"fleetgate.dev/scales-to-zero": "true"}
ASLEEP = MAY_SLEEP | {"fleetgate.dev/asleep": "true"}
TIERED = service(entry(1, 0, tier="hosted"), entry(1, 1, provider="openai"))
HOSTED_ONLY = service(entry(1, 0, tier="hosted"))


def eu(labels: dict[str, str]) -> dict[str, Any]:
    return hosted("qwen-eu-1", "eu-1", labels={"tier": "hosted", **labels})


def us(labels: dict[str, str]) -> dict[str, Any]:
    return hosted("qwen-us-1", "us-1", labels={"tier": "hosted", **labels})


def reconcile(xr: dict[str, Any], *endpoints: list[dict[str, Any]]) -> Any:
    return run(compose, request(xr, required=fleet(*endpoints)))


def test_a_sleeping_endpoint_is_parked_after_every_awake_tier() -> None:
    out = reconcile(TIERED, [eu(ASLEEP), us(MAY_SLEEP)], [third_party("openai")])
    assert backend_refs(out) == [("qwen-eu-1", 1, 2), ("qwen-us-1", 1, 0), ("openai", 1, 1)]
    asleep = reconcile(TIERED, [eu(ASLEEP), us(ASLEEP)], [third_party("openai")])
    assert backend_refs(asleep) == [("qwen-eu-1", 1, 1), ("qwen-us-1", 1, 1), ("openai", 1, 0)]
    assert not any("qwen" in w for w in asleep.warnings), "sleeping is not a fault"
    assert asleep.composite["status"]["endpoints"] == {"total": 3, "ready": 1, "asleep": 2}
    assert asleep.conditions["ColdStartUnhidden"][:2] == ("False", "AlwaysAnswered")


def test_falling_asleep_and_waking_update_the_route_in_place() -> None:
    """The AIGatewayRoute keeps its name, and its backends their order: replacing it would
    fail the requests in flight when the old one is deleted."""
    awake = route_of(reconcile(TIERED, [eu(MAY_SLEEP), us(MAY_SLEEP)], [third_party("openai")]))
    asleep = route_of(reconcile(TIERED, [eu(ASLEEP), us(MAY_SLEEP)], [third_party("openai")]))
    assert awake.composite["status"]["route"] == asleep.composite["status"]["route"]
    refs = [route_manifest(o)["spec"]["rules"][0]["backendRefs"] for o in (awake, asleep)]
    assert [[(r["name"], r["priority"]) for r in rs] for rs in refs] == [
        [(refs[0][0]["name"], 0), (refs[0][1]["name"], 0), (refs[0][2]["name"], 1)],
        [(refs[0][0]["name"], 2), (refs[0][1]["name"], 0), (refs[0][2]["name"], 1)],
    ]


def test_with_every_tier_asleep_requests_still_reach_them_and_read_a_503() -> None:
    """The 503 they read is every gateway's (answers.responses, tested there)."""
    out = reconcile(HOSTED_ONLY, [eu(ASLEEP), us(ASLEEP)])
    assert backend_refs(out) == [("qwen-eu-1", 1, 0), ("qwen-us-1", 1, 0)]
    assert out.composite["status"]["endpoints"] == {"total": 2, "ready": 0, "asleep": 2}
    status, reason, message = out.conditions["ColdStartUnhidden"]
    assert (status, reason) == ("True", "EveryTierSleeps")
    assert "503 with Retry-After" in message
    assert any("can be scaled to zero" in w for w in out.warnings)
    assert condition(out)[0] == "False", "routing waits for the route as always"
    assert routed(out) == {"qwen-eu-1", "qwen-us-1"}


def test_an_awake_tier_that_may_sleep_leaves_the_cold_start_unhidden() -> None:
    out = reconcile(HOSTED_ONLY, [eu(MAY_SLEEP), us(ASLEEP)])
    assert backend_refs(out) == [("qwen-eu-1", 1, 0), ("qwen-us-1", 1, 1)]
    assert out.conditions["ColdStartUnhidden"][:2] == ("True", "EveryTierSleeps")


def test_only_fleet_hosted_endpoints_can_sleep() -> None:
    """The labels mean something only on an endpoint a ModelDeployment published."""
    third = third_party("openai", labels={"provider": "openai", **ASLEEP})
    out = reconcile(service(entry(1, 0, provider="openai")), [third])
    assert [b["endpoint"] for b in plan(out)] == ["openai"]
    assert out.conditions["ColdStartUnhidden"][:2] == ("False", "AlwaysAnswered")
