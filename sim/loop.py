"""When a walk stops: passes run until one changes nothing, and fail at once when
they oscillate (``until_settled``, the one stop rule of every walk).
"""

import hashlib
import json
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

TIMES = frozenset({"lastTransitionTime", "lastUpdateTime"})  # a condition's clock fields


def without_times(value: Any) -> Any:
    """``value`` without a condition's times: render stamps a fixed time, real servers do not."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def fingerprint(value: Any) -> str:
    return hashlib.sha256(json.dumps(without_times(value), sort_keys=True).encode()).hexdigest()


# --- passes, until the control plane is at rest ----------------------------------------


class NotSettledError(RuntimeError):
    """Passes kept changing what the control plane holds, or a function refused its input."""


def until_settled(
    run_pass: Callable[[int], str], before: str, *, max_passes: int, what: str, start: int = 1
) -> int:
    """Run passes until one leaves the state as it found it; the number of that pass.

    ``run_pass(number)`` runs one pass (every XR reconciled once, its composed
    resources observed) and returns the ``fingerprint`` of the state after it;
    ``before`` is the state's before the first. A real control plane at rest
    is where a reconcile changes nothing: that pass's request is what
    Crossplane sends from then on. A pass that returns to an older state
    oscillates and never will: raised at once, as is running out of passes.
    """
    seen = [before]
    for number in range(start, start + max_passes):
        state = run_pass(number)
        if state == seen[-1]:
            return number
        if state in seen:
            raise NotSettledError(f"{what} oscillates: pass {number} returned to an earlier state")
        seen.append(state)
    raise NotSettledError(f"{what} did not settle in {max_passes} passes")
