"""In-process runs log into a list, not the terminal: the leak checks read it."""

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import pytest
import structlog

from tests.hardening.harness import InProcessFleet, settle

LOGGED: list[str] = []


def _capture(_: Any, method: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    LOGGED.append(f"{method} {event!r}")
    raise structlog.DropEvent


@pytest.fixture(autouse=True, scope="package")
def captured_logs() -> Iterator[list[str]]:
    """Every log line the functions write in this process, as text.

    Package-scoped: the logging configuration is restored as soon as the
    hardening tests are done, so no later test sees it.
    """
    before = structlog.get_config()
    structlog.configure(processors=[_capture])
    yield LOGGED
    structlog.configure(**before)


@pytest.fixture(scope="session")
def settled() -> InProcessFleet:
    """The example fleet (examples/fleet), walked in process until it settled."""
    return settle()
