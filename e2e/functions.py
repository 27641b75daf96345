"""Run the Fleetgate functions as real processes, the way `crossplane render` reaches them."""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
FUNCTIONS_FILE = REPO / "examples" / "functions.yaml"
TARGET_ANNOTATION = "render.crossplane.io/runtime-development-target"
START_TIMEOUT_S = 30.0
# Set by ``running`` to a copy of FUNCTIONS_FILE naming the ports it chose, so
# that several runs on one machine (tests, a benchmark, a person) never meet.
ACTIVE_FILE_ENV = "FLEETGATE_FUNCTIONS_FILE"


def functions_file() -> Path:
    """The functions file ``crossplane render`` should use now."""
    return Path(os.environ.get(ACTIVE_FILE_ENV, FUNCTIONS_FILE))


def development_targets(path: Path | None = None) -> dict[str, str]:
    """Function name → the host:port the functions file tells render to dial."""
    targets = {}
    for doc in yaml.safe_load_all((path or functions_file()).read_text()):
        if doc and doc.get("kind") == "Function":
            targets[doc["metadata"]["name"]] = doc["metadata"]["annotations"][TARGET_ANNOTATION]
    return targets


# Every port free_port has handed out in this process. A port is free when
# chosen but bound only later, by another process; until then the kernel may
# offer it again, and two of our servers would be told to share one address.
_HANDED_OUT: set[int] = set()
_HANDING_OUT = threading.Lock()


def free_port() -> int:
    """A loopback port nothing listens on now, never the same one twice per process."""
    with _HANDING_OUT:
        while True:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port: int = s.getsockname()[1]
            if port not in _HANDED_OUT:
                _HANDED_OUT.add(port)
                return port


def _with_ports(ports: dict[str, int], into: Path) -> Path:
    """A copy of FUNCTIONS_FILE whose development targets are ``ports`` on loopback."""
    docs = [d for d in yaml.safe_load_all(FUNCTIONS_FILE.read_text()) if d]
    for doc in docs:
        name = doc["metadata"]["name"]
        if name in ports:
            doc["metadata"]["annotations"][TARGET_ANNOTATION] = f"127.0.0.1:{ports[name]}"
    path = into / "functions.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def console_script(name: str) -> str:
    """The installed console script for a function, next to this interpreter first."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"console script {name} is not installed (pip install .)")
    return found


def wait_for_port(address: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"function process exited with {proc.returncode} before serving")
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {address} after {timeout}s")


@contextlib.contextmanager
def running(
    names: list[str] | None = None,
    *,
    log_dir: Path | None = None,
    extra_args: list[str] | None = None,
) -> Iterator[dict[str, str]]:
    """Start each named function (default: all) with --insecure on a free loopback port.

    While it runs, ``functions_file()`` names those ports, for ``crossplane
    render`` and for direct gRPC calls alike.
    """
    chosen = names or sorted(development_targets(FUNCTIONS_FILE))
    procs: list[subprocess.Popen[bytes]] = []
    logs = []
    previous = os.environ.get(ACTIVE_FILE_ENV)
    with tempfile.TemporaryDirectory(prefix="fleetgate-functions-") as tmp:
        ports = {name: free_port() for name in chosen}
        os.environ[ACTIVE_FILE_ENV] = str(_with_ports(ports, Path(tmp)))
        targets = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
        try:
            for name, address in targets.items():
                log = open(  # noqa: SIM115 - closed in finally
                    (log_dir / f"{name}.log") if log_dir else os.devnull, "wb"
                )
                logs.append(log)
                cmd = [
                    console_script(name),
                    "--insecure",
                    "--address",
                    address,
                    *(extra_args or []),
                ]
                procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
            for proc, address in zip(procs, targets.values(), strict=True):
                wait_for_port(address, proc, START_TIMEOUT_S)
            yield targets
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            for log in logs:
                log.close()
            if previous is None:
                os.environ.pop(ACTIVE_FILE_ENV, None)
            else:
                os.environ[ACTIVE_FILE_ENV] = previous
