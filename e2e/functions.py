"""Run the Fleetgate functions as real processes, the way `crossplane render` reaches them."""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
FUNCTIONS_FILE = REPO / "examples" / "functions.yaml"
TARGET_ANNOTATION = "render.crossplane.io/runtime-development-target"
START_TIMEOUT_S = 30.0


def development_targets(functions_file: Path = FUNCTIONS_FILE) -> dict[str, str]:
    """Function name → the host:port the functions file tells render to dial."""
    targets = {}
    for doc in yaml.safe_load_all(functions_file.read_text()):
        if doc and doc.get("kind") == "Function":
            targets[doc["metadata"]["name"]] = doc["metadata"]["annotations"][TARGET_ANNOTATION]
    return targets


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
    """Start each named function (default: all) with --insecure on its development target."""
    targets = development_targets()
    chosen = {n: targets[n] for n in (names or sorted(targets))}
    procs: list[subprocess.Popen[bytes]] = []
    logs = []
    try:
        for name, address in chosen.items():
            log = (
                open(log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed in finally
                if log_dir
                else open(os.devnull, "wb")  # noqa: SIM115
            )
            logs.append(log)
            cmd = [console_script(name), "--insecure", "--address", address, *(extra_args or [])]
            procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
        for proc, address in zip(procs, chosen.values(), strict=True):
            wait_for_port(address, proc, START_TIMEOUT_S)
        yield chosen
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
