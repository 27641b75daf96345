"""The control plane's process supervisor: what the drills rely on it for."""

import time
from pathlib import Path

from plane.processes import Supervisor


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


def test_a_paused_process_is_off_until_resumed(tmp_path: Path) -> None:
    """The fault drills switch a workload cluster's API server off this way, for minutes."""
    with Supervisor(tmp_path / "logs") as sup:
        first = sup.start("server", ["sleep", "60"])
        sup.pause("server")
        assert first.popen.poll() is not None, "stopped"
        assert sup.processes == [], "not running, so not stopped again at exit"
        second = sup.resume("server")
        assert second.popen.poll() is None
        assert second.argv == first.argv
        assert sup.paused == {}


def test_revive_restarts_what_exited_unless_another_controller_does(tmp_path: Path) -> None:
    """As a kubelet restarts a container that exited; the package runtime's own are left
    to it."""
    with Supervisor(tmp_path / "logs") as sup:
        crashed = sup.start("controller", ["sh", "-c", "exit 3"])
        function = sup.start("function", ["true"], restarted_elsewhere=True)
        steady = sup.start("steady", ["sleep", "60"])
        crashed.popen.wait()
        function.popen.wait()
        assert sup.revive() == ["controller"]
        again = next(p for p in sup.processes if p.name == "controller")
        assert again is not crashed
        assert steady in sup.processes
        assert function in sup.processes
