"""core/startup: a console script's imports run with the collector paused; nothing else changes."""

import gc
import os

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
