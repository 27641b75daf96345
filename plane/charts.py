"""Upstream Helm charts and package folders, from the Go modules the tools pin.

A pinned module's files are in the Go module cache, checksummed by the
go.sum beside the go.mod that pins it, so a chart rendered from there is the
chart at the pinned tag. Rendering is Helm's own (``helm template``).
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from fleetgate.inference_cluster import stack
from plane.clusters import binary
from plane.kube import Obj
from tools import pinned

REPO = Path(__file__).resolve().parents[1]
KUBERNETES = ("k8s.io/kubernetes", REPO / "tools" / "controlplane" / "kubernetes")


def _module(module: str, pinned_by: Path) -> dict[str, Any]:
    out = pinned.run(["go", "list", "-m", "-json", module], what=f"go list {module}", cwd=pinned_by)
    found: dict[str, Any] = json.loads(out)
    return found


def module_dir(module: str, pinned_by: Path) -> Path:
    """The files of ``module`` at the version the go.mod in ``pinned_by`` requires."""
    return Path(_module(module, pinned_by)["Dir"])


def module_version(module: str, pinned_by: Path) -> str:
    """The version of ``module`` the go.mod in ``pinned_by`` requires."""
    return str(_module(module, pinned_by)["Version"])


def render(
    chart: Path, release: str, namespace: str, values: Mapping[str, Any] | None = None
) -> list[Obj]:
    """Every object ``helm template`` renders from ``chart`` with ``values``, for the
    Kubernetes version the API servers here are built from (a chart may require one)."""
    kubernetes = _module(*KUBERNETES)["Version"]
    rendered = pinned.run(
        [
            binary("helm"),
            "template",
            release,
            str(chart),
            f"--namespace={namespace}",
            f"--kube-version={kubernetes}",
            "-f",
            "-",
        ],
        what=f"helm template {chart}",
        input=json.dumps(dict(values or {})),
    )
    return [d for d in yaml.safe_load_all(rendered) if d]


def stack_values(chart: stack.Chart) -> dict[str, Any]:
    """The values compose-inference-cluster gives ``chart``'s Release, every addon applied."""
    release = stack.release(chart, provider_config="", addons=chart.addons)
    found: dict[str, Any] = release["spec"]["forProvider"]["values"]
    return found


def pod(objects: list[Obj], kind: str, name: str) -> Obj:
    """The pod template's spec of the rendered Deployment or Job ``name``."""
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            spec: Obj = obj["spec"]["template"]["spec"]
            return spec
    raise LookupError(f"the chart renders no {kind} {name}")


def container(
    objects: list[Obj], kind: str, name: str, container: str, init: bool = False
) -> tuple[list[str], dict[str, str]]:
    """What a chart's container runs after its binary (its command's further words, then its
    arguments) and its literal environment (downward-API values aside)."""
    spec = pod(objects, kind, name)
    for c in spec["initContainers" if init else "containers"]:
        if c["name"] == container:
            env = {e["name"]: str(e["value"]) for e in c.get("env") or [] if "value" in e}
            words = [str(w) for w in (c.get("command") or [])[1:]]
            return words + [str(a) for a in c.get("args") or []], env
    raise LookupError(f"the chart's {kind} {name} has no container {container}")
