"""The registry: each XR kind with the function that serves it, and the examples.

Read from the repository's files: ``apis/`` (the XRDs), ``compositions/``
(each Composition's single step, its input) and ``pyproject.toml`` (each
function's console script); the examples are ``examples/**/xr.yaml`` folders
with their required and observed resources and what they expect.
"""

import importlib
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from fleetgate.core.runner import Composer

Obj = dict[str, Any]

# The annotation naming a composed resource in its Composition (observed.yaml keys by it).
COMPOSITION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# The line width the examples' YAML is written with (e2e.example_cas rewrites
# the CAs in them, e2e.snapshots the observed state).
EXAMPLE_WIDTH = 100

# Dependency order: each kind reads what the kinds before it publish, so one
# pass usually carries a change all the way through.
KIND_ORDER = [
    "InferenceCluster",
    "InferenceGateway",
    "ModelDeployment",
    "ModelEndpoint",
    "ModelService",
    "ModelRoute",  # composed by a ModelService, one per serving gateway
]


# --- the function registry ----------------------------------------------------------


@dataclass(frozen=True)
class Function:
    """An XR kind and what serves it, as the repository's files say."""

    kind: str
    name: str  # the Function's name, which is also its console script: compose-...
    script: str  # the console script's target: "fleetgate.<package>.main:cli"
    xrd: Path
    composition: Path
    input: Obj | None = None  # the Composition step's input, sent with every request

    @property
    def compose(self) -> Composer:
        """The function's composer, imported on first use: one that does not import
        fails its own callers only."""
        module = importlib.import_module(self.script.split(":")[0])
        compose: Composer = module.compose
        return compose


@cache
def registry() -> dict[str, Function]:
    """XR kind → the function its Composition's step runs, in ``KIND_ORDER``."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    steps = {}
    for path in sorted((REPO / "compositions").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "Composition":
                steps[doc["spec"]["compositeTypeRef"]["kind"]] = (path, doc["spec"]["pipeline"][0])
    found = {}
    for xrd in sorted((REPO / "apis").glob("*/definition.yaml")):
        kind = yaml.safe_load(xrd.read_text())["spec"]["names"]["kind"]
        composition, step = steps[kind]
        name = step["functionRef"]["name"]
        found[kind] = Function(kind, name, scripts[name], xrd, composition, step.get("input"))
    if sorted(found) != sorted(KIND_ORDER):
        raise RuntimeError(f"KIND_ORDER {KIND_ORDER} does not list the XRDs' kinds {sorted(found)}")
    return {kind: found[kind] for kind in KIND_ORDER}


# --- the examples ---------------------------------------------------------------------


def documents(path: Path) -> list[Obj]:
    """Every document of a YAML file, none when it does not exist."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d] if path.exists() else []


@dataclass(frozen=True)
class Example:
    """An example folder: ``xr.yaml``, and optionally ``required.yaml`` (resources the
    function asks Crossplane for), ``observed.yaml`` (composed resources as they exist)
    and ``expect.yaml`` (what the tests check)."""

    path: Path
    xr_file: str = "xr.yaml"

    @property
    def name(self) -> str:
        inside = self.path.is_relative_to(EXAMPLES)
        return str(self.path.relative_to(EXAMPLES)) if inside else str(self.path)

    @property
    def xr(self) -> Obj:
        data: Obj = yaml.safe_load((self.path / self.xr_file).read_text())
        return data

    @property
    def type(self) -> Function:
        return registry()[self.xr["kind"]]

    def optional(self, filename: str) -> Path | None:
        path = self.path / filename
        return path if path.exists() else None

    @property
    def required(self) -> list[Obj]:
        return documents(self.path / "required.yaml")

    @property
    def observed(self) -> dict[str, Obj]:
        """The observed resources by composition resource name, as Crossplane sends them."""
        return {
            d["metadata"]["annotations"][COMPOSITION_RESOURCE_NAME]: d
            for d in documents(self.path / "observed.yaml")
        }

    @property
    def expect(self) -> Obj:
        path = self.optional("expect.yaml")
        return yaml.safe_load(path.read_text()) if path else {}


def discover(root: Path = EXAMPLES) -> list[Example]:
    return [Example(p.parent) for p in sorted(root.rglob("xr.yaml"))]
