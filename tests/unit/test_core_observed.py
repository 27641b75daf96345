"""Reading observed state back: a condition counts only while it speaks of the current spec."""

from typing import Any

import pytest

from fleetgate.core.observed import Observed, is_current

CURRENT: list[tuple[str, dict[str, Any], Any, bool]] = [
    ("stamped for this generation", {"observedGeneration": 5}, 5, True),
    ("stamped for an older generation", {"observedGeneration": 1}, 5, False),
    ("stamped as a Struct's float", {"observedGeneration": 5.0}, 5, True),
    # Envoy AI Gateway v1.1.0, provider-kubernetes' Ready, a function's conditions
    ("unstamped", {}, 5, True),
    ("stamp not a number", {"observedGeneration": "5"}, 5, False),
    ("stamp a bool", {"observedGeneration": True}, 1, False),
    # an object that never went through an API server (emulations, tests)
    ("no generation to judge against", {"observedGeneration": 1}, None, True),
    ("generation not a number", {"observedGeneration": 1}, "5", True),
]


@pytest.mark.parametrize(
    ("cond", "generation", "current"), [c[1:] for c in CURRENT], ids=[c[0] for c in CURRENT]
)
def test_is_current(cond: dict[str, Any], generation: Any, current: bool) -> None:
    assert is_current(cond, generation) is current


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
