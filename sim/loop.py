"""The one loop: an XR reconciled pass after pass until a pass changes nothing.

``Walk.step`` is the one place where a function's desired resources go to
the controllers and come back as the next pass's observed resources: one
XR's walk steps pass after pass, and a whole fleet's pass
(``e2e.fleet.Fleet``) steps the walk of every XR once. ``until_settled`` is
the stop rule of both: passes run until one leaves the state as it found it,
and fail at once when they oscillate.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

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


class Answer(Protocol):
    """What a walk reads of a call's answer, however the function was called: in
    process or over gRPC (``Call``), or by ``crossplane render`` (``e2e.render.Rendered``)."""

    @property
    def fatal(self) -> list[str]:
        """The messages of its fatal results: the pass failed and changes nothing."""
        ...

    @property
    def declared(self) -> dict[str, str]:
        """The requirements Crossplane carries to the next pass, by key."""
        ...


A = TypeVar("A", bound=Answer)


class Call(NamedTuple):
    """A request and the function's answer to it."""

    req: fnv1.RunFunctionRequest
    rsp: fnv1.RunFunctionResponse

    @property
    def fatal(self) -> list[str]:
        return fatal(self.rsp)

    @property
    def declared(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.rsp.requirements.resources.items()}


def desired(rsp: fnv1.RunFunctionResponse) -> dict[str, Obj]:
    """An answer's desired composed resources, by composition resource name."""
    return {
        name: resource.struct_to_dict(r.resource)
        for name, r in sorted(rsp.desired.resources.items())
    }


def fatal(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]


@dataclass
class Walk(Generic[A]):
    """One XR reconciled pass after pass, the way Crossplane and the controllers would.

    Each pass ``call``s the function with the XR and what the last pass left
    observed (the call resolves the requirements it needs). Unless the answer
    is fatal, the controllers then ``observe`` the answer's desired resources,
    given what was observed before, as the next pass will see them (the
    request too: the Secrets it carried), and the XR takes
    the ``status`` Crossplane writes back from the answer (by default none).
    The state Crossplane carries from pass to pass is the XR, the observed
    resources and the requirements the function declared: ``settle`` stops at
    the first pass that leaves all three as it found them.

    The answer is whatever the call returns (``A``: an ``Answer``): a
    ``Call`` when the function is called with a request, what ``crossplane
    render`` printed when a fleet is walked through the CLI.
    """

    xr: Obj
    call: Callable[[Obj, dict[str, Obj]], A]
    observe: Callable[[Obj, A, dict[str, Obj]], dict[str, Obj]]
    status: Callable[[Obj, A], Obj] = lambda xr, _: xr
    observed: dict[str, Obj] = field(default_factory=dict)
    calls: list[A] = field(default_factory=list)

    def step(self) -> A:
        answer = self.call(self.xr, self.observed)
        self.calls.append(answer)
        if not answer.fatal:
            self.observed = self.observe(self.xr, answer, self.observed)
            self.xr = self.status(self.xr, answer)
        return answer

    def state(self) -> str:
        declared = self.calls[-1].declared if self.calls else {}
        return fingerprint({"xr": self.xr, "observed": self.observed, "requirements": declared})

    def settle(self, *, max_passes: int, what: str) -> A:
        """Passes until one changes nothing (``until_settled``); that pass's answer."""

        def run_pass(_: int) -> str:
            self.step()
            return self.state()

        until_settled(run_pass, self.state(), max_passes=max_passes, what=what)
        return self.calls[-1]
