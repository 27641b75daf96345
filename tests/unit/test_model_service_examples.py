"""The model-service examples stay true to the function.

Each walk folder (and ``gateway-loses-client-ca``, which continues from
walk-2; ``route-refused``, which continues from route-walk-2) must observe
exactly what the pass before it composes from its own inputs, so the examples
keep showing the observed state Crossplane would hand the next pass. The
ModelRoute examples reconcile the ModelRoute the ModelService walk composes,
and the ModelService walk observes the status they report. Requirements are
resolved from ``required.yaml`` the way Crossplane resolves them: repeatedly,
until the function asks for nothing new.
"""

from pathlib import Path
from typing import Any

import pytest

from e2e import snapshots
from sim.catalog import Example
from tests.support import Outcome, run_example

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model-service"


def render(folder: Path) -> Outcome:
    """One reconcile of the folder's XR, requirements resolved from its required.yaml."""
    return run_example(Example(folder))


def as_composed(obj: dict[str, Any]) -> dict[str, Any]:
    """An observed resource's spec minus what Crossplane records under ``spec.crossplane``.

    A projected Secret's Object holds exactly what was composed: its keys with
    no values (core/secrets.py keeps provider-kubernetes from saving any).
    """
    return {k: v for k, v in obj["spec"].items() if k != "crossplane"}


def kind(obj: dict[str, Any]) -> str:
    """The kind composed, looking through provider-kubernetes Objects."""
    found = (
        obj["spec"]["forProvider"]["manifest"]["kind"] if obj["kind"] == "Object" else obj["kind"]
    )
    return str(found)


# before, after, whether everything before composed was accepted (route-refused: refused)
PASSES = [
    (before, after, after != "route-refused")
    for before, after in (
        (w.before.removeprefix("model-service/"), w.after.removeprefix("model-service/"))
        for w in snapshots.WALKS
        if w.before.startswith("model-service/")
    )
]


def test_every_walk_pass_is_checked() -> None:
    walks = sorted(p.name for pattern in ("walk-*", "route-walk-*") for p in EXAMPLES.glob(pattern))
    assert walks == sorted({name for *pair, _ in PASSES for name in pair if "walk-" in name})


def _projection_unfilled(obj: dict[str, Any]) -> bool:
    """A projected Secret one pass old: created holding no value, not Ready until filled.

    Its references are composed only once it exists (core/secrets.py).
    """
    manifest = obj["spec"]["forProvider"]["manifest"]
    return manifest["kind"] == "Secret" and "references" not in obj["spec"]


@pytest.mark.parametrize(
    ("before", "after", "accepted"), PASSES, ids=[after for _, after, _ in PASSES]
)
def test_each_pass_observes_what_the_previous_one_composed(
    before: str, after: str, accepted: bool
) -> None:
    out = render(EXAMPLES / before)
    observed = Example(EXAMPLES / after).observed
    assert set(observed) == set(out.desired)
    for name, obj in observed.items():
        assert as_composed(obj) == out.desired[name]["spec"], name
        assert obj["metadata"]["name"] == out.desired[name]["metadata"].get(
            "name", obj["metadata"]["name"]
        )
        ready = {c["type"]: c["status"] for c in obj["status"]["conditions"]}["Ready"]
        assert ready == "True" or not accepted or _projection_unfilled(obj), name


def test_the_route_examples_reconcile_what_the_service_walk_composes() -> None:
    [route] = render(EXAMPLES / "walk-2-composed").desired.values()
    for folder in sorted(EXAMPLES.glob("route-*")):
        xr = Example(folder).xr
        assert (xr["metadata"], xr["spec"]) == (route["metadata"], route["spec"]), folder.name


def test_the_service_walk_observes_what_the_route_reports() -> None:
    reported = render(EXAMPLES / "route-walk-3-accepted")
    for name in ("walk-3-accepted", "walk-4-credential-withdrawn", "gateway-loses-client-ca"):
        [route] = Example(EXAMPLES / name).observed.values()
        status = dict(route["status"])
        conditions = {c["type"]: c for c in status.pop("conditions")}
        assert status == reported.composite["status"], name
        status_, reason, message = reported.conditions["RouteAccepted"]
        accepted = conditions["RouteAccepted"]
        assert (accepted["status"], accepted["reason"], accepted["message"]) == (
            status_,
            reason,
            message,
        )
        assert conditions["Ready"]["status"] == "True"


FOLDERS = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_each_example_says_what_it_shows(folder: Path) -> None:
    """expect.yaml agrees with the function here too, so a drift shows before the e2e render."""
    expect = Example(folder).expect
    out = render(folder)
    assert out.fatal == []
    for type_, want in expect["conditions"].items():
        status, reason, _ = out.conditions[type_]
        assert {"status": status, "reason": reason} == want
    assert sorted(kind(o) for o in out.desired.values()) == sorted(expect["composed"])
