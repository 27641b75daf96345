"""The examples' ``observed.yaml`` and ``expect.yaml``, regenerated from the functions.

``python -m e2e.render --update`` (``make examples-update``) rewrites them, so
that a change to a function shows in review as a diff of the examples rather
than as a hand edit; ``tests/e2e/test_snapshots.py`` fails while a
regeneration would change any byte.

* ``expect.yaml`` (every example): the conditions the file lists, with what
  the function reports now (and ``Ready`` as Crossplane derives it), and the
  kinds it composes. Which conditions an example shows is its author's
  choice; a new file lists them all.
* ``observed.yaml`` of each later pass of a walk (``WALKS``): what the pass
  before it composes, as Crossplane observes it. The model-deployment walks
  observe what working clusters report (``controllers.World.observe``). The other
  walks are scenarios whose controllers' answers are the example's own (a
  Gateway's address, a CA's PEM, a route refused): for those the
  composed part of each resource is renewed and what was observed of it is
  kept; a resource new in the pass is observed as ``controllers.World`` would.

A file whose content would not change is left alone, byte for byte; one that
changes keeps its leading comment, its documents' order and its keys' order,
so its diff shows only what changed.
"""

import contextlib
import copy
import itertools
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from crossplane.function import resource

from sim import catalog, controllers, pipeline
from sim.catalog import COMPOSITION_RESOURCE_NAME, EXAMPLE_WIDTH, EXAMPLES, Example
from sim.controllers import merge_patch
from sim.pipeline import STATUS_NAMES

Obj = dict[str, Any]


EXPECT_HEADER = "# What the tests check after rendering this example.\n"
OBSERVED_HEADER = "# Composed resources as Crossplane observes them after the previous pass.\n"
DEFAULT_WIDTH = 80  # PyYAML's
UNBROKEN = 4096
# Examples whose XR only the experimental CRD set validates; the same in process.
EXPERIMENTAL_XR = "xr.experimental.yaml"


@dataclass(frozen=True)
class Walk:
    """Two passes of one XR: ``after`` observes what ``before`` composes."""

    before: str  # example folders, relative to examples/
    after: str
    derived: bool  # observed as working clusters report (else the example's own answers kept)


def _walks(function: str, pairs: list[tuple[str, str]], *, derived: bool) -> list[Walk]:
    return [Walk(f"{function}/{a}", f"{function}/{b}", derived) for a, b in pairs]


# The inference-cluster walk: walk-1, walk-2, ... each observing the one before.
CLUSTER_WALK = sorted(
    (p.name for p in (EXAMPLES / "inference-cluster").glob("walk-*")),
    key=lambda name: int(name.split("-")[1]),
)
WALKS: list[Walk] = [
    *_walks("inference-cluster", list(itertools.pairwise(CLUSTER_WALK)), derived=False),
    *_walks(
        "model-service",
        [
            ("walk-1-registered", "walk-2-composed"),
            ("walk-2-composed", "walk-3-accepted"),
            ("walk-3-accepted", "walk-4-credential-withdrawn"),
            ("walk-2-composed", "gateway-loses-client-ca"),
            ("route-walk-1-composed", "route-walk-2-backends-arrived"),
            ("route-walk-2-backends-arrived", "route-walk-3-accepted"),
            ("route-walk-2-backends-arrived", "route-refused"),
        ],
        derived=False,
    ),
    *_walks(
        "model-deployment",
        [
            ("gpu-two-clusters/1-placed", "gpu-two-clusters/2-serving"),
            ("cpu-model/1-placed", "cpu-model/2-serving"),
            ("llmd-inference-pool/1-placed", "llmd-inference-pool/2-serving"),
            ("scale/1-two-replicas", "scale/2-up-to-five"),
            ("scale/2-up-to-five", "scale/3-down-to-one"),
            ("scale-to-zero/1-placed", "scale-to-zero/2-serving"),
            ("auto-cpu-kaito/1-placed", "auto-cpu-kaito/2-serving"),
            ("auto-multi-gpu-kuberay/1-placed", "auto-multi-gpu-kuberay/2-serving"),
        ],
        derived=True,
    ),
]


def examples(root: Path = EXAMPLES) -> list[Example]:
    """Every example under ``root``, the experimental ones (``xr.experimental.yaml``) too."""
    found = [Example(p.parent) for p in root.rglob("xr.yaml")]
    found += [Example(p.parent, EXPERIMENTAL_XR) for p in root.rglob(EXPERIMENTAL_XR)]
    return sorted(found, key=lambda e: e.path)


def whole(value: Any) -> Any:
    """Whole floats as ints: a protobuf Struct has no integers, YAML does."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole(v) for v in value]
    return value


def kind(obj: Obj) -> str:
    """The kind composed, looking through provider-kubernetes Objects."""
    manifest = (obj.get("spec") or {}).get("forProvider", {}).get("manifest")
    return str(manifest["kind"] if obj.get("kind") == "Object" and manifest else obj["kind"])


# --- expect.yaml ----------------------------------------------------------------------


def expect(example: Example, old: Obj | None = None) -> Obj:
    """What ``example`` shows now: the conditions ``old`` lists (all when there is no
    ``old``) with the keys it lists, and the kinds composed (in ``old``'s order while
    they are the same kinds)."""
    rsp = pipeline.reconcile_example(example)
    reported = {
        c.type: {"status": STATUS_NAMES[c.status], "reason": c.reason} for c in rsp.conditions
    }
    ready = pipeline.xr_ready(rsp)
    reported["Ready"] = {"status": str(ready), "reason": "Available" if ready else "Creating"}
    listed = (old or {}).get("conditions")
    if listed is None:
        listed = {t: {"status": "", "reason": ""} for t in reported}
    conditions = {
        type_: {key: reported[type_][key] for key in keys if key in reported[type_]}
        for type_, keys in listed.items()
        if type_ in reported
    }
    composed = sorted(
        kind(resource.struct_to_dict(r.resource)) for r in rsp.desired.resources.values()
    )
    was = list((old or {}).get("composed") or [])
    return {"conditions": conditions, "composed": was if sorted(was) == composed else composed}


# --- observed.yaml --------------------------------------------------------------------


def observed(walk: Walk, root: Path = EXAMPLES) -> list[Obj]:
    """The documents of ``walk.after``'s observed.yaml: what ``walk.before`` composes, observed."""
    before, after = Example(root / walk.before), Example(root / walk.after)
    rsp = pipeline.reconcile_example(before)
    desired = {k: resource.struct_to_dict(r.resource) for k, r in rsp.desired.resources.items()}
    was = after.observed
    if walk.derived:
        owner = str(after.xr["metadata"]["name"])
        found = whole(controllers.World({}).observe(desired, owner=owner, previous=was))
    else:
        trust = controllers.bundles_of(desired.values())
        found = {
            key: renewed(key, obj, was.get(key), owner=before.xr, bundles=trust)
            for key, obj in desired.items()
        }
    order = [k for k in was if k in found] + [k for k in found if k not in was]
    return [found[k] for k in order]


def renewed(
    key: str, desired: Obj, was: Obj | None, *, owner: Obj, bundles: set[tuple[str, str]]
) -> Obj:
    """``desired`` (composed as ``key``) as observed: what was composed renewed, what was
    observed of it kept.

    Kept: the name the API server gave it, what Crossplane records (its
    annotations, labels and ``spec.crossplane``), the status, and of the
    remote object in ``status.atProvider.manifest`` everything the function
    does not write (its status, a trust-manager ConfigMap's data, what a
    controller fills in) and a Secret's data as provider-kubernetes reports it.
    """
    if was is None:
        owned_by = str(owner["metadata"]["name"])
        return controllers.World({}).observe_one(key, desired, owner=owned_by, bundles=bundles)
    desired = copy.deepcopy(desired)
    meta = desired.setdefault("metadata", {})
    meta.setdefault("annotations", {})[COMPOSITION_RESOURCE_NAME] = key
    obj = controllers.finalized(
        {**desired, "metadata": merge_patch(was.get("metadata") or {}, meta)}
    )
    if "crossplane" in (was.get("spec") or {}):
        obj["spec"] = {**desired.get("spec", {}), "crossplane": was["spec"]["crossplane"]}
    if "status" in was:
        obj["status"] = copy.deepcopy(was["status"])
        remote = (obj["status"].get("atProvider") or {}).get("manifest")
        applied = (desired.get("spec") or {}).get("forProvider", {}).get("manifest")
        if isinstance(remote, dict) and isinstance(applied, dict):
            renewed_remote = merge_patch(remote, applied)
            if applied.get("kind") == "Secret" and "data" in remote:
                # --sanitize-secrets: provider-kubernetes never reports a Secret's data.
                renewed_remote["data"] = remote["data"]
            obj["status"]["atProvider"]["manifest"] = renewed_remote
    return obj


# --- writing ----------------------------------------------------------------------------


def keep_layout(new: Any, old: Any) -> Any:
    """``new`` with its keys in ``old``'s order where ``old`` has them, new keys after."""
    if isinstance(new, dict) and isinstance(old, dict):
        keys = [k for k in old if k in new] + [k for k in new if k not in old]
        return {k: keep_layout(new[k], old.get(k)) for k in keys}
    if isinstance(new, list) and isinstance(old, list):
        return [keep_layout(n, old[i] if i < len(old) else None) for i, n in enumerate(new)]
    return new


def _header(path: Path, default: str) -> str:
    if not path.exists():
        return default
    lines = itertools.takewhile(lambda line: line.startswith("#"), path.read_text().splitlines())
    return "".join(f"{line}\n" for line in lines)


def write(path: Path, docs: list[Obj], *, header: str, single: bool = False) -> bool:
    """Write ``docs`` to ``path`` unless it holds them already; whether it was written."""
    old = catalog.documents(path)
    if path.exists() and whole(old) == whole(docs):
        return False
    if not docs and not single:
        path.unlink(missing_ok=True)
        return bool(old)
    laid = [keep_layout(whole(d), old[i] if i < len(old) else None) for i, d in enumerate(docs)]
    width = _width(path, old)
    if single:
        body = yaml.safe_dump(laid[0], sort_keys=False, width=width)
    else:
        body = yaml.safe_dump_all(laid, sort_keys=False, width=width)
    path.write_text(_header(path, header) + body)
    return True


def _width(path: Path, old: list[Obj]) -> int:
    """The line width ``path`` was written with: PyYAML's 80, the CA examples' 100, or long
    lines unbroken."""
    if not path.exists():
        return DEFAULT_WIDTH
    lines = set(path.read_text().splitlines())

    def kept(width: int) -> int:
        return len(lines & set(yaml.safe_dump_all(old, sort_keys=False, width=width).splitlines()))

    return max((DEFAULT_WIDTH, EXAMPLE_WIDTH, UNBROKEN), key=kept)


def update(root: Path = EXAMPLES) -> list[Path]:
    """Regenerate every snapshot under ``root`` (a copy of examples/ will do); the files
    written. Walks first, in order, each from the example before it as it now is."""
    written = []
    for walk in WALKS:
        path = root / walk.after / "observed.yaml"
        if write(path, observed(walk, root), header=OBSERVED_HEADER):
            written.append(path)
    for example in examples(root):
        path = example.path / "expect.yaml"
        new = expect(example, example.expect if path.exists() else None)
        if write(path, [new], header=EXPECT_HEADER, single=True):
            written.append(path)
    return written


def stale(root: Path = EXAMPLES) -> list[str]:
    """The snapshots under ``root`` a regeneration would change (it runs in a copy)."""
    with _copy(root) as copied:
        return sorted(str(p.relative_to(copied)) for p in update(copied))


@contextlib.contextmanager
def _copy(root: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fleetgate-examples-") as tmp:
        copied = Path(tmp) / "examples"
        shutil.copytree(root, copied)
        yield copied
