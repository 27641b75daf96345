"""Envoy AI Gateway's own evaluation of cost expressions, on the expressions Fleetgate writes.

AI Gateway's external processor computes a response's cost from an
``llmRequestCosts`` CEL expression with its ``internal/llmcostcel`` package: it
compiles the expression and refuses one that fails on all-zero counts
(``NewProgram``), binds the token counts as uint32, and takes a non-negative
integer result (``EvaluateProgram``). ``make deps`` builds that package at the
pinned tag into a small command (tools/aigateway/_llmcostcel/main.go); this
module asks it, one JSON line per expression.
"""

import json
import subprocess
from pathlib import Path
from typing import IO, Any

from tools import pinned

TOOLS_GO_MOD = pinned.REPO / "tools" / "aigateway" / "go.mod"


class CostError(ValueError):
    """AI Gateway refused the expression or could not evaluate it: its words."""


def binary() -> Path:
    """The evaluator at the pinned AI Gateway tag (``make deps``)."""
    return pinned.binary("llmcostcel", TOOLS_GO_MOD, "github.com/envoyproxy/ai-gateway")


class Evaluator:
    """One running evaluator; ``cost`` asks it, ``close`` (or leaving a ``with``) stops it."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [str(binary())], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def cost(self, expression: str, backend: str = "", **tokens: int) -> int:
        """What AI Gateway counts for a response on ``backend`` with ``tokens`` (the
        variables it binds: input_tokens, cached_input_tokens, output_tokens...)."""
        stdin, stdout = self._pipes()
        stdin.write(json.dumps({"expression": expression, "backend": backend, **tokens}) + "\n")
        stdin.flush()
        answer: dict[str, Any] = json.loads(stdout.readline())
        if "error" in answer:
            raise CostError(answer["error"])
        return int(answer["cost"])

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        if self._process.stdin is None or self._process.stdout is None:
            raise RuntimeError("the evaluator has no pipes")
        return self._process.stdin, self._process.stdout

    def close(self) -> None:
        self._pipes()[0].close()
        self._process.wait(timeout=10)

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *raised: object) -> None:
        self.close()
