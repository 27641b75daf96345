"""core/models: each XR kind's models are imported through it, and only when used."""

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from fleetgate.core import kinds, models

KIND_MODULES = sorted(m.name for m in pkgutil.iter_modules(kinds.__path__))


def _defined(module: str) -> list[str]:
    """The public names a kind's module defines (classes, aliases, constants)."""
    source = Path(importlib.import_module(f"fleetgate.core.kinds.{module}").__file__ or "")
    names = []
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


@pytest.mark.parametrize("module", KIND_MODULES)
def test_every_name_of_a_kind_is_the_same_object_through_models(module: str) -> None:
    kind = importlib.import_module(f"fleetgate.core.kinds.{module}")
    defined = _defined(module)
    assert defined
    for name in defined:
        assert name in models.__all__, name
        assert getattr(models, name) is getattr(kind, name), name


def test_models_re_exports_nothing_the_kinds_do_not_define() -> None:
    assert sorted(models.__all__) == sorted(n for m in KIND_MODULES for n in _defined(m))


def test_an_unknown_name_is_an_import_error() -> None:
    with pytest.raises(ImportError):
        from fleetgate.core.models import NoSuchModel  # type: ignore[attr-defined]  # noqa: F401, PLC0415


PROBE = """
import sys
import fleetgate.{function}.main
print(sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("fleetgate.core.kinds.")))
"""


@pytest.mark.parametrize(
    ("function", "kinds_read"),
    [
        # governance: the field types caller governance shares (prices, limits).
        pytest.param("model_endpoint", ["endpoint", "governance"], id="compose-model-endpoint"),
        pytest.param(
            "model_deployment",
            ["cluster", "cluster_status", "deployment"],
            id="compose-model-deployment",
        ),
        # A service reads what clusters publish, never their spec.
        pytest.param(
            "model_service",
            ["cluster_status", "endpoint", "gateway", "governance", "route", "service"],
            id="compose-model-service",
        ),
    ],
)
def test_a_function_builds_the_models_of_the_kinds_it_reads_only(
    function: str, kinds_read: list[str]
) -> None:
    # A fresh interpreter: what is imported is process-wide state.
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(function=function)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == str(kinds_read)
