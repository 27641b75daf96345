"""The control plane's process supervisor: what the drills rely on it for."""

import time
from pathlib import Path

from e2e.controlplane.processes import Supervisor


def _lines(log: Path, n: int) -> list[str]:
    """The log's lines once it has ``n`` (or what it has after 10 s)."""
    deadline = time.monotonic() + 10
    while len(log.read_text().splitlines()) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return log.read_text().splitlines()


def test_a_restarted_process_runs_again_as_it_was_started(tmp_path: Path) -> None:
    """The loss drill restarts Envoy Gateway's controller this way: same command, env, cwd."""
    with Supervisor(tmp_path / "logs") as sup:
        first = sup.start(
            "echo", ["sh", "-c", 'echo "$WHO in $(pwd)"; exec sleep 60'], {"WHO": "me"}, tmp_path
        )
        assert _lines(first.log, 1) == [f"me in {tmp_path}"]
        second = sup.restart("echo")
        assert first.popen.poll() is not None, "the first one is stopped"
        assert second.popen.poll() is None, "the second one runs"
        assert [p.name for p in sup.processes] == ["echo"]
        assert _lines(second.log, 2) == [f"me in {tmp_path}"] * 2
    assert second.popen.poll() is not None, "stopped with the supervisor"
