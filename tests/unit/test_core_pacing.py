"""The response TTL: soon while an XR waits, less soon the longer it has waited."""

import datetime
from typing import Any

import pytest

from fleetgate.core import pacing, runner
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


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pacing.configure`` sets both TTLs for the process: each is put back after the test."""
    monkeypatch.setattr(pacing, "SETTLED", pacing.SETTLED)
    monkeypatch.setattr(pacing, "WAITING_MIN", pacing.WAITING_MIN)


def _configure(variable: str, value: str | None) -> None:
    """Pacing configured from an environment with ``variable`` set to ``value`` (None: unset)."""
    pacing.configure({} if value is None else {variable: value})


@pytest.mark.parametrize(
    ("observed", "seconds"),
    [
        pytest.param([], 2, id="just created: soon"),
        pytest.param([_since(0, status="True")], 2, id="just turned False: soon"),
        pytest.param([_since(8)], 2, id="eight seconds: the minimum"),
        pytest.param([_since(80)], 10, id="eighty seconds: an eighth of it"),
        pytest.param([_since(800)], 100, id="800 seconds: an eighth of it"),
        pytest.param([_since(7200)], 300, id="two hours: the most while waiting"),
        pytest.param([_since(80), _since(800, "Scheduled")], 10, id="only conditions False now"),
        pytest.param([{"type": "RoutingReady", "status": "False"}], 2, id="no time: soon"),
        pytest.param([_since(80) | {"lastTransitionTime": "yesterday"}], 2, id="a bad time"),
    ],
)
def test_a_waiting_xr_backs_off_with_the_time_it_has_waited(
    observed: list[dict[str, str]], seconds: float
) -> None:
    assert _ttl(observed) == seconds


def test_a_settled_xr_is_called_every_hour_by_default() -> None:
    """From Crossplane v2.4 on, only a backstop: what a function reads is watched (issues 31,
    35), and Crossplane resyncs every XR hourly anyway."""
    settled = pacing.ttl(waiting=False, false_now=(), observed_conditions=[_since(5)], now=NOW)
    assert settled == pacing.SETTLED == datetime.timedelta(hours=1)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param(None, 3600, id="unset: the default"),
        pytest.param("", 3600, id="empty: the default"),
        pytest.param("30", 30, id="a control plane before v2.4"),
        pytest.param(" 60 ", 60, id="blanks around it"),
        pytest.param("2", 2, id="the least"),
        pytest.param("3600", 3600, id="the most"),
        pytest.param("300", 300, id="5 minutes"),
    ],
)
@pytest.mark.usefixtures("restored")
def test_the_settled_ttl_can_be_set_for_a_control_plane_that_does_not_watch(
    value: str | None, seconds: int
) -> None:
    _configure(pacing.SETTLED_VARIABLE, value)
    got = pacing.ttl(waiting=False, false_now=(), observed_conditions=[], now=NOW)
    assert got == datetime.timedelta(seconds=seconds)
    long_wait = min(seconds, pacing.WAITING_MAX.total_seconds())
    assert _ttl([_since(86400)]) == long_wait, "a long wait: the most while waiting, or settled"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        *((pacing.SETTLED_VARIABLE, v) for v in ["30s", "1", "3601", "-5", "5m", "1e2"]),
        *((pacing.WAITING_VARIABLE, v) for v in ["15s", "0", "3601"]),
    ],
)
@pytest.mark.usefixtures("restored")
def test_a_ttl_out_of_range_or_unreadable_is_refused_naming_it_and_changes_neither(
    variable: str, value: str
) -> None:
    """Both variables are read before either is set: one bad value leaves both as they were."""
    environ = {pacing.SETTLED_VARIABLE: "60", pacing.WAITING_VARIABLE: "20", variable: value}
    with pytest.raises(ValueError, match=f"{variable}='{value}'.*2-3600"):
        pacing.configure(environ)
    assert (
        datetime.timedelta(hours=1),
        datetime.timedelta(seconds=2),
    ) == (pacing.SETTLED, pacing.WAITING_MIN)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param(None, 2, id="unset: the default"),
        pytest.param("20", 20, id="a large fleet on v2.4"),
        pytest.param("600", 600, id="above the most a long wait waits: itself"),
    ],
)
@pytest.mark.usefixtures("restored")
def test_the_least_waiting_ttl_can_be_set(value: str | None, seconds: int) -> None:
    _configure(pacing.WAITING_VARIABLE, value)
    assert _ttl([]) == seconds, "just turned False: the least waiting TTL"
    assert _ttl([_since(800)]) == max(100, seconds), "an eighth of 800 s, if above it"


@pytest.mark.usefixtures("restored")
def test_no_waiting_ttl_is_above_the_settled_one() -> None:
    pacing.configure({pacing.SETTLED_VARIABLE: "30", pacing.WAITING_VARIABLE: "600"})
    assert _ttl([]) == _ttl([_since(86400)]) == 30


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
    assert _answer(["True", "False"], xr_conditions=long_ago) == pacing.WAITING_MAX.total_seconds()
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
    assert waited("2020-01-01T00:00:00Z") == pacing.WAITING_MAX.total_seconds()
    assert waited(None) == 2


def test_a_composed_resource_not_ready_yet_is_waited_for() -> None:
    """Its readiness reaches the XR only on the next call: that call comes soon."""
    soon, settled = pacing.WAITING_MIN.total_seconds(), pacing.SETTLED.total_seconds()
    assert _answer(["True"], xr_conditions=[], composed_ready=(True, False)) == soon
    assert _answer(["True"], xr_conditions=[], composed_ready=(True, None)) == soon
    assert _answer([], xr_conditions=[], waiting=False, composed_ready=(False,)) == soon
    assert _answer(["True"], xr_conditions=[], composed_ready=(True, True)) == settled


@pytest.mark.usefixtures("restored")
def test_a_function_started_with_a_bad_settled_ttl_exits_saying_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a bad flag does: exit 2 and the variable named, before anything is served."""
    monkeypatch.setenv(pacing.SETTLED_VARIABLE, "5m")
    monkeypatch.setattr(runner, "serve", lambda *a, **k: pytest.fail("served"))
    main = runner.command("compose-model-endpoint", lambda rec: None)
    with pytest.raises(SystemExit) as exited:
        main(["--insecure"])
    assert exited.value.code == 2
    assert "FLEETGATE_SETTLED_TTL='5m'" in capsys.readouterr().err
