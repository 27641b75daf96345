"""The whole fleet, from an empty control plane to a routed model, through the real CLI.

One fleet is walked to convergence; the facts are checked on it, then the
failure drills run on it in order (each starts from where the previous one
left the fleet, as an operator's day would).
"""

import copy
from collections.abc import Callable, Iterator

import pytest

from e2e import fleetcheck, fleetdrills, functions
from e2e.driver import Emulation
from e2e.fleet import MAX_PASSES, Fleet, XRKey

Check = Callable[[Fleet], list[str]]


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with functions.running(None):
        walked = Fleet.load()
        reports = walked.converge()
        assert len(reports) < MAX_PASSES
        yield walked


def test_everything_ends_ready(fleet: Fleet) -> None:
    for key, xr in fleet.xrs.items():
        conditions = {c["type"]: c for c in xr.get("status", {}).get("conditions", [])}
        assert conditions.get("Ready", {}).get("status") == "True", (key, conditions)


def test_routing_table_names_both_gateways_and_every_tier(fleet: Fleet) -> None:
    table = fleetcheck.routing_table(fleet)
    assert "team-a/chat  via public  https://api.fleet.example.com/v1" in table
    assert "team-a/chat  via internal  http://" in table
    assert "team-a/chat-internal  via public" not in table
    assert "https://api.openai.com:443/v1  model=gpt-4o-mini" in table


def test_every_model_route_has_strict_tiers(fleet: Fleet) -> None:
    """The walk's Envoy Gateway accepts and applies each route's EnvoyPatchPolicy."""
    routes = {k: xr for k, xr in fleet.xrs.items() if k[0] == "ModelRoute"}
    assert routes
    for key, xr in routes.items():
        conditions = {c["type"]: c for c in xr.get("status", {}).get("conditions", [])}
        assert conditions.get("StrictTiers", {}).get("status") == "True", (key, conditions)


FACTS = {**fleetcheck.FACTS, **fleetcheck.SCHEMAS}


@pytest.mark.parametrize("check", FACTS.values(), ids=FACTS.keys())
def test_fact(fleet: Fleet, check: Check) -> None:
    assert check(fleet) == []


class Uncollected(Emulation):
    """A control plane whose garbage collector never runs: a deleted XR leaves what it composed."""

    def delete(self, key: XRKey) -> None:
        del self.fleet.xrs[key]


def test_a_drill_names_what_garbage_collection_left(fleet: Fleet) -> None:
    """The shared drills fail, naming the objects, when a deletion leaves them behind."""
    state = {k: copy.deepcopy(getattr(fleet, k)) for k in ("xrs", "composed", "owner", "sources")}
    copied = Fleet(fleet.world, secrets=list(fleet.secrets), **state)
    problems = fleetdrills.service_deleted(Uncollected(copied))
    assert problems[0].startswith(
        "still there after ModelService team-a/chat-internal was deleted: "
        "control-plane: ModelRoute team-a/chat-internal-internal-"
    ), problems
    assert "a route for deleted ModelService team-a/chat-internal remains on internal" in problems


def test_the_spread_check_names_a_packed_deployment(fleet: Fleet) -> None:
    """What a real control plane showed before placement waited for joining clusters."""
    xrs = copy.deepcopy(fleet.xrs)
    key = next(k for k in xrs if k[0] == "ModelDeployment")
    xrs[key]["status"]["placements"] = [{"cluster": "eu-west", "replicas": 2}]
    copied = Fleet(fleet.world, secrets=list(fleet.secrets), xrs=xrs, sources=fleet.sources)
    assert fleetdrills.spread(Emulation(copied)) == [
        f"ModelDeployment {key[1]}/{key[2]} packed, not spread: eu-west=2, us.east=0"
    ]


def test_deployments_per_cluster_counts_each_deployment_once_per_cluster(fleet: Fleet) -> None:
    """What bench-fleet reports a drain moves: the example's one deployment spreads its two
    replicas over both clusters."""
    assert fleetdrills.deployments_per_cluster(Emulation(fleet)) == {"eu-west": 1, "us.east": 1}


def test_an_idle_model_sleeps_and_the_table_says_where(fleet: Fleet) -> None:
    """Before the drills: it leaves the fleet as applied."""
    shown: list[str] = []
    assert fleetcheck.scale_to_zero(fleet, show=shown.append) == []
    (table,) = shown
    assert (
        "team-a/qwen3-8b  Idle: 0 replicas asked, 0 ready; tier 0 of team-a/chat (parked "
        "last: the next tier answers), tier 0 of team-a/chat-internal (cold start: 503 while "
        "its requests wake it)"
    ) in table
    assert "scaled deployments" not in fleetcheck.routing_table(fleet)


@pytest.mark.parametrize("drill", fleetcheck.DRILLS.values(), ids=fleetcheck.DRILLS.keys())
def test_drill(fleet: Fleet, drill: Check) -> None:
    assert drill(fleet) == []


def test_fleet_still_validates_after_the_drills(fleet: Fleet) -> None:
    assert fleetcheck.check_schemas(fleet) == []
