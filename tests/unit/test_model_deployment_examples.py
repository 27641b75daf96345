"""The model-deployment examples stay true to the function.

Each later pass of a walk must observe exactly what the pass before it
composes (as ``observe`` turns desired into observed state) and carry the
status it wrote, and every ``expect.yaml`` must agree with the function run
in-process, so a change to the function cannot silently leave them stale.
"""

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetgate.model_deployment.composer import compose
from tests.support import Outcome, request, run
from tests.unit.test_model_deployment import observe

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model-deployment"
NAME_ANNOTATION = "crossplane.io/composition-resource-name"
FOLDERS = sorted(p.parent for p in EXAMPLES.rglob("xr.yaml"))


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
    xr = yaml.safe_load((folder / "xr.yaml").read_text())
    return run(compose, request(xr, required=required, observed=observed))


PASSES = [
    ("gpu-two-clusters/1-placed", "gpu-two-clusters/2-serving"),
    ("cpu-model/1-placed", "cpu-model/2-serving"),
    ("llmd-inference-pool/1-placed", "llmd-inference-pool/2-serving"),
    ("scale/1-two-replicas", "scale/2-up-to-five"),
    ("scale/2-up-to-five", "scale/3-down-to-one"),
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
    ready = out.composite_ready == "READY_TRUE"
    conditions["Ready"] = {"status": str(ready), "reason": "Available" if ready else "Creating"}
    assert conditions == expect["conditions"]
    kinds = [
        o["spec"]["forProvider"]["manifest"]["kind"] if o["kind"] == "Object" else o["kind"]
        for o in out.desired.values()
    ]
    assert sorted(kinds) == sorted(expect["composed"])
