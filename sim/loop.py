"""The one loop: an XR reconciled pass after pass until a pass changes nothing.

``until_settled`` is the stop rule of every walk (one XR's, ``Walk``, or a
whole fleet's, ``e2e.fleet.Fleet``): passes run until one leaves the state as
it found it, and fail at once when they oscillate.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

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


Call = tuple[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse]


def desired(rsp: fnv1.RunFunctionResponse) -> dict[str, Obj]:
    """An answer's desired composed resources, by composition resource name."""
    return {
        name: resource.struct_to_dict(r.resource)
        for name, r in sorted(rsp.desired.resources.items())
    }


def fatal(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]


@dataclass
class Walk:
    """One XR reconciled pass after pass, the way Crossplane and the controllers would.

    Each pass ``call``s the function with the XR and what the last pass left
    observed (the call resolves the requirements it needs). Unless the answer
    is fatal, the controllers then ``observe`` the call's desired resources,
    given what was observed before, as the next pass will see them (the
    request too: the Secrets it carried), and the XR takes
    the ``status`` Crossplane writes back from the answer (by default none).
    The state Crossplane carries from pass to pass is the XR, the observed
    resources and the requirements the function declared: ``settle`` stops at
    the first pass that leaves all three as it found them.
    """

    xr: Obj
    call: Callable[[Obj, dict[str, Obj]], Call]
    observe: Callable[[Obj, Call, dict[str, Obj]], dict[str, Obj]]
    status: Callable[[Obj, fnv1.RunFunctionResponse], Obj] = lambda xr, _: xr
    observed: dict[str, Obj] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    def step(self) -> Call:
        req, rsp = self.call(self.xr, self.observed)
        self.calls.append((req, rsp))
        if not fatal(rsp):
            self.observed = self.observe(self.xr, (req, rsp), self.observed)
            self.xr = self.status(self.xr, rsp)
        return req, rsp

    def state(self) -> str:
        requirements = self.calls[-1][1].requirements if self.calls else None
        declared = {k: str(v) for k, v in requirements.resources.items()} if requirements else {}
        return fingerprint({"xr": self.xr, "observed": self.observed, "requirements": declared})

    def settle(self, *, max_passes: int, what: str) -> Call:
        """Passes until one changes nothing (``until_settled``); that pass's call."""

        def run_pass(_: int) -> str:
            self.step()
            return self.state()

        until_settled(run_pass, self.state(), max_passes=max_passes, what=what)
        return self.calls[-1]
