"""Reading observed state back: a condition counts only while it speaks of the current spec."""

from dataclasses import dataclass
from typing import Any

import pytest

from fleetgate.core.observed import Observed, is_current


@dataclass(frozen=True)
class Case:
    id: str
    cond: dict[str, Any]
    generation: Any
    current: bool


CURRENT = [
    Case("stamped for this generation", {"observedGeneration": 5}, generation=5, current=True),
    Case("stamped for an older generation", {"observedGeneration": 1}, generation=5, current=False),
    Case("stamped as a Struct's float", {"observedGeneration": 5.0}, generation=5, current=True),
    # Envoy AI Gateway v1.1.0, provider-kubernetes' Ready, a function's conditions
    Case("unstamped", {}, generation=5, current=True),
    Case("stamp not a number", {"observedGeneration": "5"}, generation=5, current=False),
    Case("stamp a bool", {"observedGeneration": True}, generation=1, current=False),
    # an object that never went through an API server (emulations, tests)
    Case(
        "no generation to judge against", {"observedGeneration": 1}, generation=None, current=True
    ),
    Case("generation not a number", {"observedGeneration": 1}, generation="5", current=True),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CURRENT])
def test_is_current(case: Case) -> None:
    assert is_current(case.cond, case.generation) is case.current


def test_a_route_at_generation_five_accepted_at_one_is_not_accepted() -> None:
    """What a real control plane showed, on the function side."""
    route = {
        "metadata": {"generation": 5},
        "status": {
            "conditions": [{"type": "Accepted", "status": "True", "observedGeneration": 1}],
            "parents": [
                {
                    "parentRef": {"name": "gw"},
                    "conditions": [
                        {"type": "ResolvedRefs", "status": "True", "observedGeneration": 1},
                        {"type": "Accepted", "status": "True", "observedGeneration": 5},
                    ],
                }
            ],
        },
    }
    observed = Observed.of(route)
    assert not observed.has_condition("Accepted")
    assert observed.condition("Accepted") is None
    # A parent's conditions are judged against the route's generation.
    assert observed.entry_conditions("parents", "ResolvedRefs") == []
    accepted = observed.entry_conditions("parents", "Accepted")
    assert [c["observedGeneration"] for c in accepted] == [5]


def test_an_xr_ready_for_an_older_spec_is_not_ready() -> None:
    """Crossplane stamps an XR's Ready with the generation it composed
    (v2.2.0 internal/controller/apiextensions/composite/reconciler.go:498, 853)."""
    ready: dict[str, Any] = {"type": "Ready", "status": "True", "observedGeneration": 2}
    xr = {"metadata": {"generation": 3}, "status": {"conditions": [ready]}}
    assert not Observed.of(xr).ready
    ready["observedGeneration"] = 3
    assert Observed.of(xr).ready
