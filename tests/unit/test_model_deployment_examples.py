"""The model-deployment examples stay true to the function.

Each later pass of a walk must observe exactly what the pass before it
composes (as ``observe`` turns desired into observed state) and carry the
status it wrote, and every ``expect.yaml`` must agree with the function run
in-process, so a change to the function cannot silently leave them stale.

The experimental (Dynamo) examples hold ``xr.experimental.yaml`` instead of
``xr.yaml``: the generic example test validates against the pinned CRD set
only, which has no Dynamo CRD. They are rendered through the real Crossplane
CLI here instead, and validated with the schema derived from Dynamo 1.6.1's
own v1beta1 templates (``tests.support.dynamo.dynamo_crd``).
"""

import shutil
from pathlib import Path
from typing import Any

import pytest

from e2e import functions, render, snapshots
from e2e.snapshots import whole
from schemas import validate
from schemas.xrds import CATALOG_CRD
from sim import catalog
from sim.catalog import Example
from tests.support import Outcome, run_example
from tests.support.dynamo import dynamo_schema
from tests.unit.test_model_deployment import observe

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model-deployment"
EXPERIMENTAL_XR = snapshots.EXPERIMENTAL_XR
EXPERIMENTAL = sorted(p.parent for p in EXAMPLES.rglob(EXPERIMENTAL_XR))
FOLDERS = sorted([*(p.parent for p in EXAMPLES.rglob("xr.yaml")), *EXPERIMENTAL])


def example(folder: Path) -> Example:
    return Example(folder, "xr.yaml" if (folder / "xr.yaml").exists() else EXPERIMENTAL_XR)


def reconcile(folder: Path) -> Outcome:
    """One pass of the folder's XR, requirements resolved from its required.yaml."""
    return run_example(example(folder))


PASSES = [
    (w.before.removeprefix("model-deployment/"), w.after.removeprefix("model-deployment/"))
    for w in snapshots.WALKS
    if w.before.startswith("model-deployment/")
]


def test_every_walk_pass_is_checked() -> None:
    walks = {str(f.relative_to(EXAMPLES)) for f in FOLDERS if f.name[0].isdigit()}
    assert walks == {name for pair in PASSES for name in pair}


@pytest.mark.parametrize(("before", "after"), PASSES, ids=[after for _, after in PASSES])
def test_each_pass_observes_what_the_previous_one_composed(before: str, after: str) -> None:
    out = reconcile(EXAMPLES / before)
    xr, observed = example(EXAMPLES / after).xr, example(EXAMPLES / after).observed
    # What ran before keeps its name; what is new is named after the XR.
    owner = xr["metadata"]["name"]
    assert observed == whole(observe(out.desired, owner=owner, previous=observed))
    assert xr["status"] == whole(out.composite["status"])


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_each_example_says_what_it_shows(folder: Path) -> None:
    expect = example(folder).expect
    out = reconcile(folder)
    assert out.fatal == []
    conditions = {t: {"status": s, "reason": r} for t, (s, r, _) in out.conditions.items()}
    ready = out.xr_ready
    conditions["Ready"] = {"status": str(ready), "reason": "Available" if ready else "Creating"}
    assert conditions == expect["conditions"]
    kinds = [
        o["spec"]["forProvider"]["manifest"]["kind"] if o["kind"] == "Object" else o["kind"]
        for o in out.desired.values()
    ]
    assert sorted(kinds) == sorted(expect["composed"])


def test_the_incompatible_upstream_example_is_pass_one_refused() -> None:
    """Its observed state is the KubeRay walk's first pass with the RayService refused."""
    before = reconcile(EXAMPLES / "auto-multi-gpu-kuberay/1-placed")
    folder = EXAMPLES / "incompatible-upstream"
    observed = example(folder).observed
    healthy = whole(observe(before.desired))
    assert observed.keys() == healthy.keys()
    differs = [k for k in observed if observed[k] != healthy[k]]
    assert len(differs) == 1
    assert differs[0].endswith("-rayservice")
    assert observed[differs[0]]["spec"] == healthy[differs[0]]["spec"]


@pytest.fixture(scope="module")
def experimental_rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, list[Any]]:
    """Each experimental example through the real ``crossplane render``, functions as processes."""
    rendered = {}
    with functions.running(["compose-model-deployment"]):
        for folder in EXPERIMENTAL:
            copy = tmp_path_factory.mktemp(folder.name)
            for source in folder.glob("*.yaml"):
                shutil.copy(
                    source, copy / ("xr.yaml" if source.name == EXPERIMENTAL_XR else source.name)
                )
            rendered[folder] = render.render(catalog.Example(copy))
    return rendered


def test_there_are_experimental_examples() -> None:
    assert {f.name for f in EXPERIMENTAL} == {"one-gpu-dynamo", "disaggregated-dynamo"}


@pytest.mark.crossplane_cli
@pytest.mark.parametrize("folder", EXPERIMENTAL, ids=lambda p: p.name)
def test_experimental_examples_render_and_validate(
    folder: Path, experimental_rendered: dict[Path, list[Any]], tmp_path: Path
) -> None:
    xr, composed, _ = render.split(experimental_rendered[folder])
    expect = example(folder).expect
    conditions = {c["type"]: c for c in xr.get("status", {}).get("conditions", [])}
    for type_, want in expect["conditions"].items():
        assert {k: conditions[type_].get(k) for k in want} == want
    kinds = sorted(
        o["spec"]["forProvider"]["manifest"]["kind"] if o["kind"] == "Object" else o["kind"]
        for o in composed
    )
    assert kinds == sorted(expect["composed"])
    assert "DynamoGraphDeployment" in kinds
    xrds = sorted({t.xrd for t in catalog.registry().values()})
    schemas = [*xrds, dynamo_schema(tmp_path), CATALOG_CRD]
    assert validate.validate([xr, *composed], extra_schema_files=schemas) == []
