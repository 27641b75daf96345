"""core/startup: a console script's imports run with the collector paused; nothing else changes."""

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fleetgate.core.startup import fast_imports

PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


@pytest.mark.parametrize(
    ("enabled_before", "operator_setting", "expected_setting"),
    [
        pytest.param(True, None, "__all__", id="collector on"),
        pytest.param(False, None, "__all__", id="collector already off"),
        pytest.param(True, "logfire", "logfire", id="operator's plugin choice kept"),
    ],
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


# An installed pydantic plugin, as a distribution declares one (entry point
# group "pydantic"); importing it says so on stderr.
PLUGIN_MODULE = """
import sys

print("plugin loaded", file=sys.stderr)


class Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = Plugin()
"""

PROBE = """
from fleetgate.core.startup import fast_imports
with fast_imports():
    from fleetgate.core.kinds.endpoint import ModelEndpoint
endpoint = ModelEndpoint.model_validate(
    {"metadata": {"name": "e", "namespace": "ns"}, "spec": {"origin": "https://api.example.com"}}
)
assert endpoint.spec.origin == "https://api.example.com"
"""


@pytest.mark.parametrize(
    ("operator_setting", "plugin_loaded"),
    [
        pytest.param(None, False, id="default: no plugin looked for"),
        pytest.param("true", False, id="operator disables all"),
        pytest.param("logfire", True, id="operator disables another plugin"),
    ],
)
def test_installed_plugins_are_not_loaded_unless_the_operator_asks(
    tmp_path: Path, operator_setting: str | None, plugin_loaded: bool
) -> None:
    (tmp_path / "probe_plugin.py").write_text(PLUGIN_MODULE)
    dist = tmp_path / "probe_plugin-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: probe-plugin\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[pydantic]\nprobe = probe_plugin:plugin\n")
    # A fresh interpreter: which plugins pydantic loaded is process-wide state.
    env = {k: v for k, v in os.environ.items() if k != PLUGINS}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    if operator_setting is not None:
        env[PLUGINS] = operator_setting
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    assert ("plugin loaded" in out.stderr) is plugin_loaded, out.stderr
