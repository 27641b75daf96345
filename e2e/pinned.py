"""Where ``make`` puts a tool built from a Go module a ``tools/**/go.mod`` pins.

The Makefile builds each under ``.cache/bin/<name>-<version>/<name>`` (its
``pinned`` macro reads the version the same way); an environment variable
named after the tool overrides the path. Missing, it is an error, never a
skip: these tools judge what the functions compose, and a check that quietly
does not run judges nothing.
"""

import os
import re
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
