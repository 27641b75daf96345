"""Loopback ports for the processes the e2e starts: never one address for two of them."""

import socket
from typing import Any, ClassVar

import pytest

from e2e import functions


class _Offering:
    """A socket whose bind to port 0 gets the next port of ``offers``, as the kernel's would."""

    offers: ClassVar[list[int]] = []

    def __init__(self, *_: Any) -> None:
        self.port = self.offers.pop(0)

    def __enter__(self) -> "_Offering":
        return self

    def __exit__(self, *_: Any) -> None:
        pass

    def bind(self, address: tuple[str, int]) -> None:
        assert address == ("127.0.0.1", 0)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_a_port_the_kernel_offers_again_before_it_is_bound_is_not_handed_out_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A port is chosen free but bound later, by the process it is given to; until then
    the kernel may offer it again. Two functions told one address would both serve it."""
    first = functions.free_port()
    # Below the kernel's range for port 0, so no earlier call in this process has it.
    unoffered = 1023
    monkeypatch.setattr(_Offering, "offers", [first, first, unoffered])
    monkeypatch.setattr(socket, "socket", _Offering)
    assert functions.free_port() == unoffered
