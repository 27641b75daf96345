"""The model-deployment examples stay true to the function.

Each later pass of a walk must observe exactly what the pass before it
composes (as ``observe`` turns desired into observed state) and carry the
status it wrote, and every ``expect.yaml`` must agree with the function run
in-process, so a change to the function cannot silently leave them stale.

The experimental (Dynamo) examples hold ``xr.experimental.yaml`` instead of
``xr.yaml``: the generic example test validates against the pinned CRD set
only, which has no Dynamo CRD. They are rendered through the real Crossplane
CLI here instead, and validated with the schema written from Dynamo's Go
types (``test_model_deployment_renderers.dynamo_crd``).
"""

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import functions, render, validate
from fleetgate.model_deployment.composer import compose
from tests.support import Outcome, request, run
from tests.unit.test_model_deployment import observe
from tests.unit.test_model_deployment_renderers import dynamo_schema
from tests.unit.test_model_deployment_selection import CATALOG_CRD

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model-deployment"
NAME_ANNOTATION = "crossplane.io/composition-resource-name"
EXPERIMENTAL_XR = "xr.experimental.yaml"
EXPERIMENTAL = sorted(p.parent for p in EXAMPLES.rglob(EXPERIMENTAL_XR))
FOLDERS = sorted([*(p.parent for p in EXAMPLES.rglob("xr.yaml")), *EXPERIMENTAL])


def xr_file(folder: Path) -> Path:
    return folder / ("xr.yaml" if (folder / "xr.yaml").exists() else EXPERIMENTAL_XR)


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d] if path.exists() else []


def whole(value: Any) -> Any:
    """Whole floats as ints: a protobuf Struct has no integers, YAML does."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole(v) for v in value]
    return value


def reconcile(folder: Path) -> Outcome:
    """One pass of the folder's XR; the function requires every cluster and every deployment."""
    available = docs(folder / "required.yaml")
    required = {
        "clusters": [d for d in available if d["kind"] == "InferenceCluster"],
        "deployments": [d for d in available if d["kind"] == "ModelDeployment"],
    }
    observed = {
        d["metadata"]["annotations"][NAME_ANNOTATION]: d for d in docs(folder / "observed.yaml")
    }
    xr = yaml.safe_load(xr_file(folder).read_text())
    return run(compose, request(xr, required=required, observed=observed))


PASSES = [
    ("gpu-two-clusters/1-placed", "gpu-two-clusters/2-serving"),
    ("cpu-model/1-placed", "cpu-model/2-serving"),
    ("llmd-inference-pool/1-placed", "llmd-inference-pool/2-serving"),
    ("scale/1-two-replicas", "scale/2-up-to-five"),
    ("scale/2-up-to-five", "scale/3-down-to-one"),
    ("auto-cpu-kaito/1-placed", "auto-cpu-kaito/2-serving"),
    ("auto-multi-gpu-kuberay/1-placed", "auto-multi-gpu-kuberay/2-serving"),
]


def test_every_walk_pass_is_checked() -> None:
    walks = {str(f.relative_to(EXAMPLES)) for f in FOLDERS if f.name[0].isdigit()}
    assert walks == {name for pair in PASSES for name in pair}


@pytest.mark.parametrize(("before", "after"), PASSES, ids=[after for _, after in PASSES])
def test_each_pass_observes_what_the_previous_one_composed(before: str, after: str) -> None:
    out = reconcile(EXAMPLES / before)
    observed = {
        d["metadata"]["annotations"][NAME_ANNOTATION]: d
        for d in docs(EXAMPLES / after / "observed.yaml")
    }
    assert observed == whole(observe(out.desired))
    xr = yaml.safe_load((EXAMPLES / after / "xr.yaml").read_text())
    assert xr["status"] == whole(out.composite["status"])


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_each_example_says_what_it_shows(folder: Path) -> None:
    expect = yaml.safe_load((folder / "expect.yaml").read_text())
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
    observed = {
        d["metadata"]["annotations"][NAME_ANNOTATION]: d for d in docs(folder / "observed.yaml")
    }
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
            rendered[folder] = render.render(render.Example(copy))
    return rendered


def test_there_are_experimental_examples() -> None:
    assert {f.name for f in EXPERIMENTAL} == {"one-gpu-dynamo", "disaggregated-dynamo"}


@pytest.mark.crossplane_cli
@pytest.mark.parametrize("folder", EXPERIMENTAL, ids=lambda p: p.name)
def test_experimental_examples_render_and_validate(
    folder: Path, experimental_rendered: dict[Path, list[Any]], tmp_path: Path
) -> None:
    xr, composed, _ = render.split(experimental_rendered[folder])
    expect = yaml.safe_load((folder / "expect.yaml").read_text())
    conditions = {c["type"]: c for c in xr.get("status", {}).get("conditions", [])}
    for type_, want in expect["conditions"].items():
        assert {k: conditions[type_].get(k) for k in want} == want
    kinds = sorted(
        o["spec"]["forProvider"]["manifest"]["kind"] if o["kind"] == "Object" else o["kind"]
        for o in composed
    )
    assert kinds == sorted(expect["composed"])
    assert "DynamoGraphDeployment" in kinds
    xrds = sorted({t.xrd for t in render.xr_types().values()})
    schemas = [*xrds, dynamo_schema(tmp_path), CATALOG_CRD]
    assert validate.validate([xr, *composed], extra_schema_files=schemas) == []
