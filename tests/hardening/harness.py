"""Calling the five functions the way Crossplane does, in process, for the hardening suite.

A *world* is everything on the control plane a function may require (XRs of
every kind with their status, Secrets). ``reconcile`` answers one XR like
Crossplane's function runner: first call with nothing resolved, then resolve
every requirement the function declared from the world and call again, until
the requirements stop changing. ``walk`` repeats that pass after pass, feeding
each pass's desired state back as observed state the way the controllers
would (``sim.controllers.World.observe``: each controller's status, Gateway
addresses, trust-manager ConfigMaps with real PEMs, Ready as each readiness
policy derives it) and the XR's status back into the XR.
"""

import base64
import copy
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from e2e.fleet import EXAMPLE, Fleet, XRKey
from fleetgate.core.constants import API_VERSION
from fleetgate.core.runner import Composer, encode, run_composer
from sim import catalog, loop, pipeline
from sim.catalog import COMPOSITION_RESOURCE_NAME
from sim.pipeline import Answer, Unresolved
from tests.support import CONTROLLERS

Obj = dict[str, Any]

# XR kind → its function, from the repository's files (sim.catalog.registry).
KINDS = list(catalog.registry())
SCRIPTS = {kind: fn.name for kind, fn in catalog.registry().items()}
# What Crossplane's function runner lets a response be by default (the SDK's
# --max-send-message-size default, 4 MB).
MESSAGE_LIMIT = 4 * 1024 * 1024
TAG = "hardening"  # every request's meta.tag
INTERNAL_ERROR = "internal error"


def composer(kind: str) -> Composer:
    """The function of ``kind``, imported on first use: one function that does not
    import fails its own cases only."""
    return catalog.registry()[kind].compose


def request(
    xr: Obj,
    *,
    observed: dict[str, Obj] | None = None,
    required: dict[str, list[Obj]] | None = None,
    tag: str = TAG,
) -> fnv1.RunFunctionRequest:
    return pipeline.request(xr, observed=observed, required=required, tag=tag)


@dataclass
class Call:
    """One answered request."""

    req: fnv1.RunFunctionRequest
    rsp: fnv1.RunFunctionResponse

    @property
    def data(self) -> bytes:
        return encode(self.rsp)

    @property
    def fatal(self) -> list[str]:
        return [r.message for r in self.rsp.results if r.severity == fnv1.SEVERITY_FATAL]

    @property
    def messages(self) -> list[str]:
        """Every human-readable text of the response: results and conditions."""
        return [r.message for r in self.rsp.results] + [c.message for c in self.rsp.conditions]

    @property
    def desired(self) -> dict[str, Obj]:
        return {
            name: resource.struct_to_dict(r.resource)
            for name, r in self.rsp.desired.resources.items()
        }

    @property
    def status(self) -> Obj | None:
        return asked_status(self.rsp)


def asked_status(rsp: fnv1.RunFunctionResponse) -> Obj | None:
    """The XR status an answer asks Crossplane to write, if any."""
    status = resource.struct_to_dict(rsp.desired.composite.resource).get("status")
    return status if isinstance(status, dict) else None


def call(compose: Composer, req: fnv1.RunFunctionRequest) -> Call:
    return Call(req, run_composer(compose, req))


def reconcile(
    kind: str,
    xr: Obj,
    world: list[Obj],
    observed: dict[str, Obj] | None = None,
    unresolved: Unresolved | None = None,
    *,
    answer: Answer | None = None,
) -> Call:
    """One reconcile of ``xr``: call, resolve the requirements from ``world``, call again.

    The function of ``kind`` answers in process unless ``answer`` is given
    (over gRPC, say). Requirements whose selector ``unresolved`` picks stay
    unresolved, as when Crossplane has not looked them up yet.
    """

    def in_process(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
        return run_composer(composer(kind), req)

    req, rsp = pipeline.reconcile(
        answer or in_process, xr, world, observed, unresolved=unresolved, tag=TAG
    )
    return Call(req, rsp)


@dataclass
class Walk(loop.Walk[loop.Call]):
    """Passes of one XR of ``kind`` over one ``world`` (``sim.loop.Walk``), answered in
    process: each call resolves its requirements from the world (``reconcile``), the
    controllers observe (``sim.controllers.World.observe``) and the XR takes the status
    it asked for."""

    kind: str = ""
    world: list[Obj] = field(default_factory=list)

    @classmethod
    def of(cls, kind: str, xr: Obj, world: list[Obj]) -> "Walk":
        def call(xr: Obj, observed: dict[str, Obj]) -> loop.Call:
            answered = reconcile(kind, xr, world, observed)
            return loop.Call(answered.req, answered.rsp)

        def observe(xr: Obj, called: loop.Call, was: dict[str, Obj]) -> dict[str, Obj]:
            owner = xr["metadata"]["name"]
            desired = loop.desired(called.rsp)
            return CONTROLLERS.observe(desired, owner=owner, previous=was, control_plane=world)

        def status(xr: Obj, called: loop.Call) -> Obj:
            asked = asked_status(called.rsp)
            return xr if asked is None else {**xr, "status": asked}

        return cls(copy.deepcopy(xr), call, observe, status, kind=kind, world=world)

    @property
    def answered(self) -> list[Call]:
        """Every pass's call, in order."""
        return [Call(req, rsp) for req, rsp in self.calls]

    @property
    def last(self) -> Call:
        return Call(*self.calls[-1])

    def step(self) -> Call:  # type: ignore[override]  # the same call, as a Call
        return Call(*super().step())


def walk(kind: str, xr: Obj, world: list[Obj], passes: int) -> Walk:
    walked = Walk.of(kind, xr, world)
    for _ in range(passes):
        walked.step()
    return walked


def shuffled(req: fnv1.RunFunctionRequest, seed: int) -> fnv1.RunFunctionRequest:
    """``req`` with every required list and the observed map in another order.

    Crossplane promises no order for either: a function's answer must not
    depend on it.
    """
    rng = random.Random(seed)
    out = fnv1.RunFunctionRequest()
    out.meta.CopyFrom(req.meta)
    out.observed.composite.CopyFrom(req.observed.composite)
    names = list(req.observed.resources)
    rng.shuffle(names)
    for name in names:
        out.observed.resources[name].CopyFrom(req.observed.resources[name])
    keys = list(req.required_resources)
    rng.shuffle(keys)
    for key in keys:
        items = list(req.required_resources[key].items)
        rng.shuffle(items)
        target = out.required_resources[key]
        target.SetInParent()
        for item in items:
            target.items.add().CopyFrom(item)
    return out


# --- Secrets -----------------------------------------------------------------------


def secret(name: str, namespace: str, data: dict[str, str], **meta: Any) -> Obj:
    """A Secret as the API server hands it out: values base64 in ``data``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def xr(kind: str, name: str, spec: Obj, *, namespace: str | None = None, **extra: Any) -> Obj:
    """An XR of ``kind`` as the API server stores it."""
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(extra.pop("metadata", {}))
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec, **extra}


# --- a whole fleet, in process ----------------------------------------------------------


@dataclass
class InProcessFleet(Fleet):
    """``e2e.fleet.Fleet`` with each XR answered in process instead of by ``crossplane render``.

    The fleet logic (statuses applied, composed XRs added and removed,
    convergence) is the walk's own; only the render is replaced, by
    ``reconcile`` and a rendering of its answer as ``crossplane render``
    prints it. Fast enough to settle a fleet per test.
    """

    calls: list[Call] = field(default_factory=list)  # every answer, in order

    def render_one(self, key: XRKey, unavailable: Iterable[XRKey] = ()) -> list[Obj]:
        hidden = set(unavailable)
        world = [xr for k, xr in sorted(self.xrs.items()) if k not in hidden] + self.secrets
        xr = self.xrs[key]
        answered = reconcile(key[0], xr, world, dict(self.composed.get(key, {})))
        self.calls.append(answered)
        if answered.fatal:
            raise RuntimeError(f"{key}: {answered.fatal}")
        return rendered(xr, answered)


def settle(folder: Path = EXAMPLE) -> InProcessFleet:
    """The fleet in ``folder`` (by default examples/fleet), walked until it settled."""
    fleet = InProcessFleet.load(folder)
    assert isinstance(fleet, InProcessFleet)
    fleet.converge()
    return fleet


def rendered(xr: Obj, answered: Call) -> list[Obj]:
    """An answer as ``crossplane render --include-function-results`` prints it."""
    rsp = answered.rsp
    desired = answered.desired
    status = pipeline.xr_status(rsp)
    out: list[Obj] = [{**xr, "status": status}]
    meta = xr.get("metadata") or {}
    for name in sorted(desired):
        obj = desired[name]
        obj_meta = obj.setdefault("metadata", {})
        obj_meta.setdefault("annotations", {})[COMPOSITION_RESOURCE_NAME] = name
        if "name" not in obj_meta:
            obj_meta["generateName"] = f"{meta.get('name')}-"
        out.append(obj)
    out += [
        {
            "apiVersion": "render.crossplane.io/v1beta1",
            "kind": "Result",
            "severity": fnv1.Severity.Name(r.severity),
            "message": r.message,
        }
        for r in rsp.results
    ]
    return out
