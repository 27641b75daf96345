"""Nothing lost: a transient fault never deletes what a function composed before.

The example fleet (examples/fleet) is settled in process; then, for every
function and every fault below, each of its XRs is reconciled once more with
the fault in place. Whatever the previous pass composed must still be in the
desired state: Crossplane deletes a composed resource the moment a function
stops returning it, so a gap in an input must read as "keep", never as
"gone". The XR's spec never changes here, so nothing may go.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from e2e.fleet import XRKey, describe
from sim.pipeline import Unresolved
from tests.hardening import harness
from tests.hardening.harness import KINDS, InProcessFleet, Obj


@dataclass(frozen=True)
class Fault:
    """What the function sees: the world, its observed resources, what stays unresolved."""

    world: list[Obj]
    observed: dict[str, Obj]
    unresolved: Unresolved | None = None


Make = Callable[[InProcessFleet, XRKey], list[Fault]]


def _world(fleet: InProcessFleet) -> list[Obj]:
    return [*fleet.xrs.values(), *fleet.secrets]


def unresolved_kind(kind: str | None) -> Make:
    """Every requirement for ``kind`` (every requirement when None) not looked up yet."""

    def make(fleet: InProcessFleet, key: XRKey) -> list[Fault]:
        def pick(sel: object) -> bool:
            return kind is None or getattr(sel, "kind", None) == kind

        return [Fault(_world(fleet), fleet.composed.get(key, {}), pick)]

    return make


def secrets_absent(fleet: InProcessFleet, key: XRKey) -> list[Fault]:
    """The Secrets the fleet references, momentarily gone (resolved to nothing)."""
    return [Fault(list(fleet.xrs.values()), fleet.composed.get(key, {}))]


def _observed_without(fleet: InProcessFleet, key: XRKey, *path: str) -> dict[str, Obj]:
    observed = copy.deepcopy(fleet.composed.get(key, {}))
    for obj in observed.values():
        node = obj
        for part in path[:-1]:
            node = node.get(part) or {}
        node.pop(path[-1], None)
    return observed


def observed_without_status(fleet: InProcessFleet, key: XRKey) -> list[Fault]:
    """Every observed resource without status (its provider has not reported yet)."""
    return [Fault(_world(fleet), _observed_without(fleet, key, "status"))]


def observed_without_remote(fleet: InProcessFleet, key: XRKey) -> list[Fault]:
    """Every Object observed without ``status.atProvider`` (the remote read failed)."""
    return [Fault(_world(fleet), _observed_without(fleet, key, "status", "atProvider"))]


def each_observed_without_status(fleet: InProcessFleet, key: XRKey) -> list[Fault]:
    """One observed resource at a time without its status."""
    faults = []
    for name in sorted(fleet.composed.get(key, {})):
        observed = copy.deepcopy(fleet.composed[key])
        observed[name].pop("status", None)
        faults.append(Fault(_world(fleet), observed))
    return faults


def observed_not_ready(fleet: InProcessFleet, key: XRKey) -> list[Fault]:
    """Every observed resource Ready=False (a provider hiccup)."""
    observed = copy.deepcopy(fleet.composed.get(key, {}))
    for obj in observed.values():
        conditions = (obj.get("status") or {}).get("conditions") or []
        for cond in conditions:
            if cond.get("type") == "Ready":
                cond["status"] = "False"
    return [Fault(_world(fleet), observed)]


FAULTS: dict[str, Make] = {
    "nothing resolved (the first call of a reconcile)": unresolved_kind(None),
    "InferenceClusters unresolved": unresolved_kind("InferenceCluster"),
    "InferenceGateways unresolved": unresolved_kind("InferenceGateway"),
    "ModelEndpoints unresolved": unresolved_kind("ModelEndpoint"),
    "ModelDeployments unresolved": unresolved_kind("ModelDeployment"),
    "Secrets unresolved": unresolved_kind("Secret"),
    "referenced Secrets momentarily absent": secrets_absent,
    "observed resources without status": observed_without_status,
    "one observed resource without status, each in turn": each_observed_without_status,
    "observed Objects without their remote manifest": observed_without_remote,
    "observed resources not Ready": observed_not_ready,
}


def dropped(
    fleet: InProcessFleet, key: XRKey, fault: Fault, allowed_kind: str | None = None
) -> list[str]:
    """What answering ``fault`` would delete of what ``key`` composed (but ``allowed_kind``)."""
    before = {
        name
        for name, obj in fleet.desired.get(key, {}).items()
        if allowed_kind is None or obj.get("kind") != allowed_kind
    }
    answered = harness.reconcile(
        key[0], fleet.xrs[key], fault.world, fault.observed, fault.unresolved
    )
    if answered.fatal:
        return [f"{describe(key)}: fatal {answered.fatal}"]
    gone = sorted(before - set(answered.desired))
    return [f"{describe(key)} would delete {gone}"] if gone else []


def test_every_function_composed_something(settled: InProcessFleet) -> None:
    """The table below means something only if each kind composed (or reported) before."""
    kinds = {key[0] for key in settled.xrs}
    assert kinds == set(KINDS)
    composing = {key[0] for key, desired in settled.desired.items() if desired}
    assert composing == set(KINDS) - {"ModelEndpoint"}  # a ModelEndpoint composes nothing


# The contract itself asks for one withdrawal: a ModelDeployment's ModelEndpoint
# on a cluster is "withdrawn when [the workload] is not [ready]" (api.md). An
# explicit Ready=False is that; a status that is merely missing is not, and
# must change nothing.
WITHDRAWN_BY_CONTRACT = {("observed resources not Ready", "ModelDeployment"): "ModelEndpoint"}
CASES = [
    pytest.param(fault, kind, title, id=f"{kind}: {title}")
    for title, fault in FAULTS.items()
    for kind in KINDS
]


@pytest.mark.parametrize(("fault", "kind", "title"), CASES)
def test_nothing_dropped(settled: InProcessFleet, fault: Make, kind: str, title: str) -> None:
    allowed = WITHDRAWN_BY_CONTRACT.get((title, kind))
    problems = []
    for key in settled.ordered():
        if key[0] == kind:
            for case in fault(settled, key):
                problems += dropped(settled, key, case, allowed)
    assert problems == []
