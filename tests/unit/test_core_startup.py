"""core/startup: a console script's imports run with the collector paused; nothing else changes."""

import gc
import os
import subprocess
import sys

import pytest

from fleetgate.core.startup import fast_imports

PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


@pytest.mark.parametrize(
    ("enabled_before", "operator_setting", "expected_setting"),
    [
        (True, None, "__all__"),
        (False, None, "__all__"),
        (True, "logfire", "logfire"),
    ],
    ids=["collector on", "collector already off", "operator's plugin choice kept"],
)
def test_fast_imports(
    monkeypatch: pytest.MonkeyPatch,
    enabled_before: bool,
    operator_setting: str | None,
    expected_setting: str,
) -> None:
    if operator_setting is None:
        monkeypatch.delenv(PLUGINS, raising=False)
    else:
        monkeypatch.setenv(PLUGINS, operator_setting)
    (gc.enable if enabled_before else gc.disable)()
    try:
        with fast_imports():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled_before
    finally:
        gc.enable()
        gc.unfreeze()
    assert os.environ[PLUGINS] == expected_setting


def test_fast_imports_restores_the_collector_when_an_import_fails() -> None:
    gc.enable()
    with pytest.raises(ModuleNotFoundError), fast_imports():
        import fleetgate.no_such_module  # type: ignore[import-not-found]  # noqa: F401, PLC0415
    assert gc.isenabled()
    gc.unfreeze()


PROBE = """
import sys
from fleetgate.core.startup import fast_imports
with fast_imports():
    from fleetgate.core.models import ModelEndpoint
endpoint = ModelEndpoint.model_validate(
    {"metadata": {"name": "e", "namespace": "ns"}, "spec": {"origin": "https://api.example.com"}}
)
assert endpoint.spec.origin == "https://api.example.com"
print("importlib.metadata" in sys.modules)
"""


@pytest.mark.parametrize(
    ("operator_setting", "metadata_imported"),
    [(None, False), ("true", False), ("logfire", True)],
    ids=["default", "operator disables all", "operator disables one plugin"],
)
def test_plugin_discovery_is_not_even_imported_when_every_plugin_is_off(
    operator_setting: str | None, metadata_imported: bool
) -> None:
    # A fresh interpreter: which modules pydantic imported is process-wide state.
    env = {k: v for k, v in os.environ.items() if k != PLUGINS}
    if operator_setting is not None:
        env[PLUGINS] = operator_setting
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(metadata_imported)
