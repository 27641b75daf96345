"""The functions' log: the SDK's (its formats, its structlog), imported when first written to.

Importing the SDK's logging imports structlog, about 10 ms of every cold
start (bench/README.md), and a function at the default level writes nothing
until something goes wrong: its only per-call lines are at debug level. So a
console script records the level here (``configure``) and the SDK's logging
is imported and configured the first time a line is written; at info level
the per-call debug lines are not formatted at all (``debugging``).

What is written, and how it looks, is the SDK's ``logging.configure``
unchanged: JSON lines at info, a console renderer at debug. A process that
never calls ``configure`` (a test, an in-process harness) writes through
whatever structlog configuration it set up itself, every level included.
"""

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import structlog


class _Level:
    """The level a console script asked for, and whether the SDK's logging has it yet."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.debug: bool | None = None  # None: not configured by a console script
        self.pending = False  # configured here, not yet in the SDK's logging


_LEVEL = _Level()


def configure(*, debug: bool) -> None:
    """Record the level a console script was started with; nothing is imported yet."""
    with _LEVEL.lock:
        _LEVEL.debug, _LEVEL.pending = debug, True


def debugging() -> bool:
    """Whether debug lines are written (they are unless a script configured info level)."""
    return _LEVEL.debug is not False


def get() -> "structlog.stdlib.BoundLogger":
    """The SDK's logger, its logging imported and configured on the first call."""
    # Imported here, not at the top: this import is the structlog import put off.
    from crossplane.function import logging  # noqa: PLC0415

    with _LEVEL.lock:
        if _LEVEL.pending:
            logging.configure(level=logging.Level.DEBUG if _LEVEL.debug else logging.Level.INFO)
            _LEVEL.pending = False
    return logging.get_logger()
