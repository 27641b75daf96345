"""What the figures were measured on, so a later run knows what it is compared with."""

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from google.protobuf.internal import api_implementation  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("crossplane-function-sdk-python", "protobuf", "grpcio", "pydantic", "pydantic-core")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else ""


def _commit() -> str:
    """The commit measured, marked when functions/ or bench/ differ from it."""
    try:
        commit = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--", "functions", "bench")
    except OSError:
        return "unknown"
    return (commit or "unknown (not a git checkout)") + ("+changes" if dirty else "")


def describe() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gib": _memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "protobuf_backend": api_implementation.Type(),
        "packages": {name: metadata.version(name) for name in PACKAGES},
        "commit": _commit(),
    }


def load() -> list[float]:
    """The 1-minute load average: other work on the machine skews absolute figures."""
    return [round(x, 2) for x in os.getloadavg()]
