"""One case per defect the hardening suite found, on the settled example fleet.

Each would fail on the code before its fix: observed state a controller
wrote in an unexpected shape crashed a reader (an internal error instead of
a reconcile), and a required object listed twice made a ModelService's
answer depend on the order Crossplane listed it in, and an XR of another kind
was validated against the function's own schema, so that a function called for
the wrong XR said only that fields were missing (seen on the real control
plane, when two functions were served on one port).
"""

import copy
from typing import Any

import pytest

from e2e.fleet import XRKey
from tests.hardening import harness
from tests.hardening.harness import INTERNAL_ERROR, KINDS, SCRIPTS, InProcessFleet, Obj
from tests.hardening.mutations import GARBAGE


def answer(fleet: InProcessFleet, key: XRKey, observed: dict[str, Obj], world: list[Obj]) -> Any:
    return harness.reconcile(key[0], fleet.xrs[key], world, observed)


def keys_of(fleet: InProcessFleet, kind: str) -> list[XRKey]:
    return [k for k in fleet.ordered() if k[0] == kind and fleet.composed.get(k)]


GARBAGE_CASES = [
    pytest.param(
        kind,
        garbage,
        field,
        id=f"{kind}-{field}-{repr(garbage)[:40]}",
    )
    for kind in sorted(set(KINDS) - {"ModelEndpoint"})
    for garbage in GARBAGE
    for field in ("status", "spec", "metadata")
]


@pytest.mark.parametrize(("kind", "garbage", "field"), GARBAGE_CASES)
def test_garbage_in_observed_resources_is_read_as_absent(
    settled: InProcessFleet, kind: str, garbage: Any, field: str
) -> None:
    """Every observed resource's ``field`` replaced by garbage: no internal error, no fatal."""
    world = [*settled.xrs.values(), *settled.secrets]
    for key in keys_of(settled, kind):
        observed = {
            name: {**obj, field: copy.deepcopy(garbage)}
            for name, obj in settled.composed[key].items()
        }
        answered = answer(settled, key, observed, world)
        assert not [m for m in answered.fatal if m.startswith(INTERNAL_ERROR)]
        assert answered.fatal == []


@pytest.mark.parametrize("kind", ["InferenceCluster", "InferenceGateway", "ModelEndpoint"])
def test_a_model_service_refuses_an_object_listed_twice(settled: InProcessFleet, kind: str) -> None:
    """Order-independent by refusal: the fatal names the object listed twice."""
    (key,) = [k for k in settled.xrs if k == ("ModelService", "team-a", "chat")]
    twin = next(copy.deepcopy(xr) for k, xr in sorted(settled.xrs.items()) if k[0] == kind)
    twin["status"] = {}
    world = [*settled.xrs.values(), twin, *settled.secrets]
    answered = answer(settled, key, settled.composed[key], world)
    name = twin["metadata"]["name"]
    assert len(answered.fatal) == 1
    assert f"{name} appears more than once" in answered.fatal[0]


SECRET_SHAPES = {
    "data a list": {"data": ["c2VjcmV0LXZhbHVl"]},
    "data a string": {"data": "c2VjcmV0LXZhbHVl"},
    "stringData a list": {"stringData": ["secret-value"]},
}


@pytest.mark.parametrize("shape", SECRET_SHAPES.values(), ids=SECRET_SHAPES.keys())
@pytest.mark.parametrize("kind", ["InferenceGateway", "ModelEndpoint", "ModelService"])
def test_a_secret_not_holding_a_map_reads_as_holding_no_key(
    settled: InProcessFleet, kind: str, shape: dict[str, Any]
) -> None:
    """Caller keys, TLS and credentials Secrets of the wrong shape: no internal error."""
    secrets = [{**s, **shape} for s in settled.secrets]
    for key in [k for k in settled.ordered() if k[0] == kind]:
        answered = answer(
            settled, key, settled.composed.get(key, {}), [*settled.xrs.values(), *secrets]
        )
        assert answered.fatal == []


WRONG_KIND_CASES = [
    pytest.param(kind, other, id=f"{SCRIPTS[kind]}-given-{other}")
    for kind in KINDS
    for other in KINDS
    if SCRIPTS[other] != SCRIPTS[kind]
]


@pytest.mark.parametrize(("kind", "other"), WRONG_KIND_CASES)
def test_an_xr_of_a_kind_the_function_does_not_compose_is_refused_by_kind(
    settled: InProcessFleet, kind: str, other: str
) -> None:
    """One fatal that names ``kind`` and the XR, and nothing composed from the wrong schema."""
    key = next(k for k in settled.ordered() if k[0] == other)
    answered = harness.reconcile(kind, settled.xrs[key], [*settled.xrs.values(), *settled.secrets])
    assert len(answered.fatal) == 1, answered.fatal
    assert answered.fatal[0].startswith(f"invalid {other} {key[2]}: kind: "), answered.fatal
    assert not answered.rsp.desired.resources
