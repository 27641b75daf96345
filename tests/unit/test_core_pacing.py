"""The response TTL: soon while an XR waits, less soon the longer it has waited."""

import datetime
from typing import Any

import pytest

from fleetgate.core import pacing
from fleetgate.core.reconcile import Reconcile
from tests.support import request, run

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


def _since(seconds: float, type_: str = "RoutingReady", status: str = "False") -> dict[str, str]:
    at = NOW - datetime.timedelta(seconds=seconds)
    return {
        "type": type_,
        "status": status,
        "lastTransitionTime": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _ttl(observed: list[dict[str, str]], false_now: tuple[str, ...] = ("RoutingReady",)) -> float:
    got = pacing.ttl(waiting=True, false_now=false_now, observed_conditions=observed, now=NOW)
    return got.total_seconds()


@pytest.mark.parametrize(
    ("observed", "seconds"),
    [
        pytest.param([], 2, id="just created: soon"),
        pytest.param([_since(0, status="True")], 2, id="just turned False: soon"),
        pytest.param([_since(8)], 2, id="eight seconds: the minimum"),
        pytest.param([_since(80)], 10, id="eighty seconds: an eighth of it"),
        pytest.param([_since(3600)], 30, id="an hour: as settled"),
        pytest.param([_since(80), _since(800, "Scheduled")], 10, id="only conditions False now"),
        pytest.param([{"type": "RoutingReady", "status": "False"}], 2, id="no time: soon"),
        pytest.param([_since(80) | {"lastTransitionTime": "yesterday"}], 2, id="a bad time"),
    ],
)
def test_a_waiting_xr_backs_off_with_the_time_it_has_waited(
    observed: list[dict[str, str]], seconds: float
) -> None:
    assert _ttl(observed) == seconds


def test_a_settled_xr_is_called_every_settled_interval() -> None:
    settled = pacing.ttl(waiting=False, false_now=(), observed_conditions=[_since(5)], now=NOW)
    assert settled == pacing.SETTLED < datetime.timedelta(seconds=60)  # the SDK's default


def _answer(
    conditions: list[str],
    *,
    xr_conditions: list[Any],
    waiting: bool | None = None,
    composed_ready: tuple[bool | None, ...] = (),
) -> float:
    def compose(rec: Reconcile) -> None:
        for i, status in enumerate(conditions):
            rec.condition(f"C{i}", status, "Because")  # type: ignore[arg-type]
        for i, ready in enumerate(composed_ready):
            rec.compose(f"cm-{i}", {"apiVersion": "v1", "kind": "ConfigMap"}, ready=ready)
        if waiting is not None:
            rec.set_waiting(waiting)

    xr = {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": "e", "namespace": "team-a"},
        "status": {"conditions": xr_conditions},
    }
    return float(run(compose, request(xr)).rsp.meta.ttl.ToTimedelta().total_seconds())


def test_every_answer_carries_the_ttl_its_conditions_call_for() -> None:
    long_ago = [{"type": "C1", "status": "False", "lastTransitionTime": "2020-01-01T00:00:00Z"}]
    assert _answer(["True", "False"], xr_conditions=[]) == pacing.WAITING_MIN.total_seconds()
    assert _answer(["True", "False"], xr_conditions=long_ago) == pacing.SETTLED.total_seconds()
    assert _answer(["True"], xr_conditions=[]) == pacing.SETTLED.total_seconds()
    assert _answer([], xr_conditions=[], waiting=True) == pacing.WAITING_MIN.total_seconds()
    assert _answer(["False"], xr_conditions=[], waiting=False) == pacing.SETTLED.total_seconds()


def test_waiting_with_every_condition_true_counts_from_the_xr_s_creation() -> None:
    """A gateway serving while a new cluster publishes itself: quick when new, calm when old."""

    def waited(created: str | None) -> float:
        got = pacing.ttl(
            waiting=True, false_now=(), observed_conditions=[], now=NOW, created=created
        )
        return got.total_seconds()

    assert waited((NOW - datetime.timedelta(seconds=16)).strftime("%Y-%m-%dT%H:%M:%SZ")) == 2
    assert waited((NOW - datetime.timedelta(seconds=80)).strftime("%Y-%m-%dT%H:%M:%SZ")) == 10
    assert waited("2020-01-01T00:00:00Z") == 30
    assert waited(None) == 2


def test_a_composed_resource_not_ready_yet_is_waited_for() -> None:
    """Its readiness reaches the XR only on the next call: that call comes soon."""
    soon, settled = pacing.WAITING_MIN.total_seconds(), pacing.SETTLED.total_seconds()
    assert _answer(["True"], xr_conditions=[], composed_ready=(True, False)) == soon
    assert _answer(["True"], xr_conditions=[], composed_ready=(True, None)) == soon
    assert _answer([], xr_conditions=[], waiting=False, composed_ready=(False,)) == soon
    assert _answer(["True"], xr_conditions=[], composed_ready=(True, True)) == settled
