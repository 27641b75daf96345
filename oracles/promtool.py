"""Prometheus's own rule engine, promtool, on the rules Fleetgate composes.

``check`` parses rule files as Prometheus loads them (PromQL, templates,
durations); ``unit_test`` runs ``promtool test rules`` on a test file whose
input series are shaped as the upstream exporters emit them.
"""

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tools import pinned

TOOLS_GO_MOD = pinned.REPO / "tools" / "promtool" / "go.mod"
TIMEOUT_S = 120


def promtool() -> Path:
    """The pinned promtool (``make deps``)."""
    return pinned.binary("promtool", TOOLS_GO_MOD, "github.com/prometheus/prometheus")


def _run(*args: str, cwd: Path) -> str:
    """promtool's output; a non-zero exit raises with everything it said."""
    done = subprocess.run(
        [str(promtool()), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    said = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"promtool {' '.join(args)} failed:\n{said}")
    return said


def rule_file(groups: list[dict[str, Any]], folder: Path, name: str = "rules.yaml") -> Path:
    """A Prometheus rule file of a PrometheusRule's ``spec.groups`` (the same schema)."""
    path = folder / name
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def check(*rule_files: Path) -> str:
    """``promtool check rules``: each file loads as Prometheus would load it."""
    return _run("check", "rules", *(str(p) for p in rule_files), cwd=rule_files[0].parent)


def unit_test(rules: Path, tests: list[dict[str, Any]], *, interval: str = "1m") -> str:
    """``promtool test rules`` of ``tests`` (its test-group schema) against ``rules``."""
    # Fuzzy: floats compared to within a few ulps, as rates of prices are not exact.
    spec = {
        "rule_files": [rules.name],
        "evaluation_interval": interval,
        "fuzzy_compare": True,
        "tests": tests,
    }
    path = rules.parent / "tests.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return _run("test", "rules", path.name, cwd=rules.parent)
