"""Where ``make`` puts a tool built from a Go module a ``tools/**/go.mod`` pins.

The Makefile builds each under ``.cache/bin/<name>-<version>/<name>`` (its
``pinned`` macro reads the version the same way); an environment variable
named after the tool overrides the path. Missing, it is an error, never a
skip: these tools judge what the functions compose, and a check that quietly
does not run judges nothing.
"""

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def binary(name: str, go_mod: Path, module: str) -> Path:
    """The built ``name`` at the version ``go_mod`` pins for ``module``; ``$NAME`` overrides."""
    override = os.environ.get(name.upper())
    if override:
        path = Path(override)
    else:
        version = re.search(
            rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", go_mod.read_text(), re.MULTILINE
        )
        if version is None:
            raise RuntimeError(f"{go_mod} pins no {module}")
        path = REPO / ".cache" / "bin" / f"{name}-{version.group(1)}" / name
    if not path.exists():
        raise FileNotFoundError(f"{name} not found at {path}: run `make deps`")
    return path


def run(
    argv: Sequence[str | Path],
    *,
    what: str,
    timeout: float | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
) -> str:
    """What a tool printed on stdout; a non-zero exit raises RuntimeError naming ``what``
    with the end of what it said on stderr. ``env`` is added to this process's own."""
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env={**os.environ, **env} if env is not None else None,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout
