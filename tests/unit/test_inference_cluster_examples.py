"""The walk examples stay true: each folder observes what the previous pass composed."""

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetgate.inference_cluster.composer import compose
from tests.support import request, run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "inference-cluster"
WALK = sorted(EXAMPLES.glob("walk-*"), key=lambda p: int(p.name.split("-")[1]))
NAME_ANNOTATION = "crossplane.io/composition-resource-name"


def load(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    xr = yaml.safe_load((folder / "xr.yaml").read_text())
    required_file = folder / "required.yaml"
    required = [d for d in yaml.safe_load_all(required_file.read_text()) if d]
    observed_file = folder / "observed.yaml"
    observed = {}
    if observed_file.exists():
        for doc in yaml.safe_load_all(observed_file.read_text()):
            if doc:
                observed[doc["metadata"]["annotations"][NAME_ANNOTATION]] = doc
    return xr, {"gateways": required}, observed


def test_the_walk_has_every_pass() -> None:
    assert [int(p.name.split("-")[1]) for p in WALK] == list(range(1, len(WALK) + 1))
    assert len(WALK) >= 5


@pytest.mark.parametrize(
    ("before", "after"), list(itertools.pairwise(WALK)), ids=[p.name for p in WALK[1:]]
)
def test_each_pass_observes_what_the_previous_one_composed(before: Path, after: Path) -> None:
    xr, required, observed = load(before)
    out = run(compose, request(xr, required=required, observed=observed))
    _, _, next_observed = load(after)
    assert set(next_observed) == set(out.desired)
    for name, obj in next_observed.items():
        want = out.desired[name]
        assert obj["spec"] == want["spec"], name
        assert obj["status"]["conditions"][0]["type"] == "Ready"
