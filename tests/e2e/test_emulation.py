"""The one stop rule every offline walk uses: passes until one changes nothing."""

from collections.abc import Callable

import pytest

from sim.loop import NotSettledError, until_settled


def passes_through(*states: str) -> tuple[list[int], Callable[[int], str]]:
    """A walk whose passes leave the states given, in order; the pass numbers it ran."""
    ran: list[int] = []

    def run_pass(number: int) -> str:
        ran.append(number)
        return states[len(ran) - 1]

    return ran, run_pass


def test_the_walk_stops_at_the_first_pass_that_changes_nothing() -> None:
    ran, run_pass = passes_through("a", "b", "b", "c")
    assert until_settled(run_pass, "", max_passes=10, what="the fleet") == 3
    assert ran == [1, 2, 3], "no pass runs after the control plane is at rest"


def test_a_walk_that_returns_to_an_earlier_state_fails_at_once() -> None:
    ran, run_pass = passes_through("a", "b", "a", "b", "a")
    with pytest.raises(NotSettledError, match="the fleet oscillates: pass 3"):
        until_settled(run_pass, "", max_passes=10, what="the fleet")
    assert ran == [1, 2, 3]


def test_a_walk_that_keeps_changing_fails_after_its_passes() -> None:
    _, run_pass = passes_through("a", "b", "c", "d")
    with pytest.raises(NotSettledError, match="ModelService team-a/chat did not settle in 3"):
        until_settled(run_pass, "", max_passes=3, what="ModelService team-a/chat")


def test_passes_are_numbered_from_where_the_caller_left_off() -> None:
    ran, run_pass = passes_through("a", "a")
    assert until_settled(run_pass, "", max_passes=5, what="the fleet", start=7) == 8
    assert ran == [7, 8]
