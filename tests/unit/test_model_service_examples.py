"""The model-service examples stay true to the function.

Each walk folder (and ``gateway-loses-client-ca``, which continues from
walk-2) must observe exactly what the pass before it composes from its own
inputs, so the examples keep showing the observed state Crossplane would hand
the next pass. Requirements are resolved from ``required.yaml`` the way
Crossplane resolves them: repeatedly, until the function asks for nothing new.
"""

from pathlib import Path
from typing import Any

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.model_service.composer import compose
from tests.support import Outcome, request, run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model-service"
NAME_ANNOTATION = "crossplane.io/composition-resource-name"
# Crossplane calls a function at most this many times while requirements settle.
MAX_ITERATIONS = 5

Doc = dict[str, Any]


def docs(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d] if path.exists() else []


def matches(selector: fnv1.ResourceSelector, doc: Doc) -> bool:
    meta = doc.get("metadata") or {}
    if (doc.get("apiVersion"), doc.get("kind")) != (selector.api_version, selector.kind):
        return False
    if selector.namespace and meta.get("namespace") != selector.namespace:
        return False
    match = selector.WhichOneof("match")
    if match == "match_name":
        return bool(meta.get("name") == selector.match_name)
    labels = meta.get("labels") or {}
    wanted = dict(selector.match_labels.labels)
    return match == "match_labels" and all(labels.get(k) == v for k, v in wanted.items())


def render(folder: Path) -> Outcome:
    """One reconcile of the folder's XR, requirements resolved from its required.yaml."""
    xr = yaml.safe_load((folder / "xr.yaml").read_text())
    available = docs(folder / "required.yaml")
    observed = {
        d["metadata"]["annotations"][NAME_ANNOTATION]: d for d in docs(folder / "observed.yaml")
    }
    required: dict[str, list[Doc]] = {}
    for _ in range(MAX_ITERATIONS):
        out = run(compose, request(xr, required=required, observed=observed))
        wanted = {
            key: [d for d in available if matches(sel, d)] for key, sel in out.requirements.items()
        }
        if wanted == required:
            return out
        required = wanted
    raise AssertionError(f"requirements of {folder.name} did not settle")


def without_secret_values(spec: dict[str, Any]) -> dict[str, Any]:
    """An Object's spec minus what provider-kubernetes writes back into a Secret's manifest."""
    manifest = dict(spec["forProvider"]["manifest"])
    if manifest.get("kind") == "Secret":
        manifest.pop("data", None)
    return {**spec, "forProvider": {**spec["forProvider"], "manifest": manifest}}


PASSES = [
    ("walk-1-registered", "walk-2-composed"),
    ("walk-2-composed", "walk-3-accepted"),
    ("walk-3-accepted", "walk-4-credential-withdrawn"),
    ("walk-2-composed", "gateway-loses-client-ca"),
]


def test_every_walk_pass_is_checked() -> None:
    walk = sorted(p.name for p in EXAMPLES.glob("walk-*"))
    assert walk == sorted({name for pair in PASSES for name in pair if name.startswith("walk-")})


@pytest.mark.parametrize(("before", "after"), PASSES, ids=[after for _, after in PASSES])
def test_each_pass_observes_what_the_previous_one_composed(before: str, after: str) -> None:
    out = render(EXAMPLES / before)
    observed = {
        d["metadata"]["annotations"][NAME_ANNOTATION]: d
        for d in docs(EXAMPLES / after / "observed.yaml")
    }
    assert set(observed) == set(out.desired)
    for name, obj in observed.items():
        assert without_secret_values(obj["spec"]) == out.desired[name]["spec"], name
        assert {c["type"]: c["status"] for c in obj["status"]["conditions"]}["Ready"] == "True"


@pytest.mark.parametrize("folder", sorted(EXAMPLES.iterdir()), ids=lambda p: p.name)
def test_each_example_says_what_it_shows(folder: Path) -> None:
    """expect.yaml agrees with the function here too, so a drift shows before the e2e render."""
    expect = yaml.safe_load((folder / "expect.yaml").read_text())
    out = render(folder)
    for type_, want in expect["conditions"].items():
        status, reason, _ = out.conditions[type_]
        assert {"status": status, "reason": reason} == want
    kinds = sorted(o["spec"]["forProvider"]["manifest"]["kind"] for o in out.desired.values())
    assert kinds == sorted(expect["composed"])
