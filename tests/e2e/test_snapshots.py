"""The examples' observed.yaml and expect.yaml are what the functions make of them now.

``python -m e2e.render --update`` (``make examples-update``) regenerates them
(``e2e/snapshots.py``); here a regeneration, run in a copy, must change nothing.
"""

import shutil
from pathlib import Path

import yaml

from e2e import snapshots
from sim import catalog

EXAMPLES = catalog.EXAMPLES
SERVING = "model-deployment/gpu-two-clusters/2-serving"
SCENARIO = "inference-cluster/walk-8-gateway"


def test_the_snapshots_are_current() -> None:
    assert snapshots.stale() == [], "run `make examples-update` and review the diff"


def test_every_walk_names_two_examples_of_one_kind() -> None:
    for walk in snapshots.WALKS:
        before, after = (catalog.Example(EXAMPLES / name) for name in (walk.before, walk.after))
        assert before.xr["kind"] == after.xr["kind"], walk
    assert {w.before.split("/")[0] for w in snapshots.WALKS} == {
        "inference-cluster",
        "model-service",
        "model-deployment",
    }


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root)
    return root


def _updated(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in snapshots.update(root))


def test_a_stale_snapshot_is_regenerated_byte_for_byte(tmp_path: Path) -> None:
    """What the generator writes into a file whose content changed is, for a file it
    wrote before, the very bytes: documents and keys keep their order, the header stays."""
    root = _copy(tmp_path)
    observed = root / SERVING / "observed.yaml"
    expect = root / SERVING / "expect.yaml"
    text = observed.read_text()
    assert "readyReplicas: 1\n" in text
    observed.write_text(text.replace("readyReplicas: 1\n", "readyReplicas: 0\n", 1))
    expect.write_text(expect.read_text().replace("AllReplicasReady", "ReplicasNotReady"))
    assert _updated(root) == [f"{SERVING}/expect.yaml", f"{SERVING}/observed.yaml"]
    assert observed.read_bytes() == (EXAMPLES / SERVING / "observed.yaml").read_bytes()
    assert expect.read_bytes() == (EXAMPLES / SERVING / "expect.yaml").read_bytes()


def test_a_scenario_keeps_what_its_controllers_answered(tmp_path: Path) -> None:
    """In a walk whose answers are the example's own, what was composed is renewed and
    what was observed (here a trust-manager ConfigMap's CA) is kept."""
    root = _copy(tmp_path)
    observed = root / SCENARIO / "observed.yaml"
    docs = [d for d in yaml.safe_load_all(observed.read_text()) if d]
    objects = [d for d in docs if d["kind"] == "Object"]
    answered = [d for d in objects if "data" in d["status"]["atProvider"]["manifest"]]
    assert answered, "the walk observes a CA its function did not write"
    for doc in objects:
        doc["spec"]["forProvider"]["manifest"]["metadata"]["name"] = "stale"
    observed.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    assert _updated(root) == [f"{SCENARIO}/observed.yaml"]
    again = list(yaml.safe_load_all(observed.read_text()))
    original = list(yaml.safe_load_all((EXAMPLES / SCENARIO / "observed.yaml").read_text()))
    assert again == original


def test_a_new_example_lists_every_condition(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    folder = root / "model-endpoint" / "credential-present"
    (folder / "expect.yaml").unlink()
    assert _updated(root) == ["model-endpoint/credential-present/expect.yaml"]
    written = yaml.safe_load((folder / "expect.yaml").read_text())
    assert written == {
        "conditions": {
            "EndpointReady": {"status": "True", "reason": "CredentialPresent"},
            "Ready": {"status": "True", "reason": "Available"},
        },
        "composed": [],
    }
