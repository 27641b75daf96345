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
* pydantic's plugins are disabled through its documented switch,
  ``PYDANTIC_DISABLE_PLUGINS``: on the first model it would otherwise read the
  metadata of every installed distribution looking for plugins, and Fleetgate
  uses none. An operator who sets the variable keeps their choice.
"""

import contextlib
import gc
import os
from collections.abc import Iterator

PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


@contextlib.contextmanager
def fast_imports() -> Iterator[None]:
    """Import a function's modules with the collector paused, then freeze what they made."""
    os.environ.setdefault(PLUGINS, "__all__")
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
        gc.freeze()
