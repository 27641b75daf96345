"""core/kinds: a module a kind, and a function imports only the kinds it reads."""

import subprocess
import sys

import pytest

from fleetgate.core import kinds


@pytest.mark.parametrize("kind", sorted(kinds.MODULES))
def test_the_model_of_a_kind_is_its_top_level_model(kind: str) -> None:
    model = kinds.model(kind)
    assert model.__name__ == kind
    assert model.__module__ == f"fleetgate.core.kinds.{kinds.MODULES[kind]}"


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
