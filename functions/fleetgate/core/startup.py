"""Starting a function process quickly: what it costs before the first answer.

Crossplane waits for a function's first answer whenever its pod starts (a
rollout, a rescheduled node, a crash), and every XR using the function waits
with it. Most of that time is importing: the interpreter, gRPC, protobuf, the
SDK, and pydantic building the XR models. ``fast_imports`` wraps a console
script's imports (see bench/README.md for the measured effect):

* the cyclic garbage collector is paused while importing: imports allocate
  hundreds of thousands of long-lived objects and free almost none, so the
  collections they trigger find nothing to collect;
* everything imported is then frozen (``gc.freeze``): later collections, on
  every call, no longer walk the import-time objects;
* pydantic's plugin discovery is skipped: on the first model it reads the
  metadata of every installed distribution looking for plugins, and
  Fleetgate uses none. An operator who sets PYDANTIC_DISABLE_PLUGINS keeps
  their choice;
* with every plugin disabled, pydantic's plugin loader is not imported at
  all: it imports importlib.metadata (some 35 modules, ~10 ms) the first
  time a validator is built, only to return no plugins. Validators are built
  on first use (core.models), so that cost landed on every function's first
  answer.
"""

import contextlib
import gc
import os
import sys
import types
from collections.abc import Iterable, Iterator
from typing import Any

PLUGINS = "PYDANTIC_DISABLE_PLUGINS"
# pydantic's plugin loader (pydantic/plugin/_loader.py); pydantic imports it
# inside the function that builds a validator and calls its get_plugins().
PLUGIN_LOADER = "pydantic.plugin._loader"
ALL = ("__all__", "1", "true")  # the values pydantic reads as "every plugin disabled"


@contextlib.contextmanager
def fast_imports() -> Iterator[None]:
    """Import a function's modules with the collector paused, then freeze what they made."""
    os.environ.setdefault(PLUGINS, "__all__")
    if os.environ[PLUGINS] in ALL and PLUGIN_LOADER not in sys.modules:
        sys.modules[PLUGIN_LOADER] = _no_plugins()
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
        gc.freeze()


def _no_plugins() -> types.ModuleType:
    """A stand-in for pydantic's plugin loader that answers as it does with every plugin off."""

    def get_plugins() -> Iterable[Any]:
        return ()

    loader = types.ModuleType(PLUGIN_LOADER, "pydantic plugins disabled: none are looked for")
    loader.get_plugins = get_plugins  # type: ignore[attr-defined]
    return loader
