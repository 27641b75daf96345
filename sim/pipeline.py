"""Crossplane's side of a function call: the request, requirements resolved, the XR's status.

As Crossplane's function runner does: a call, then every requirement the
function declared resolved from what the control plane holds and the call
made again until they stop changing (``reconcile``, ``reconcile_example``);
and the status Crossplane writes to an XR from the answer (``xr_status``,
``xr_ready``).
"""

import copy
from collections.abc import Callable, Iterable
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.runner import Composer, run_composer
from sim.catalog import Example, registry
from sim.controllers import as_stored, condition

Obj = dict[str, Any]

# --- requirements, resolved as Crossplane's function runner resolves them -------------

# Crossplane stops asking once requirements are stable; it gives up after a few rounds.
MAX_ROUNDS = 5
Answer = Callable[[fnv1.RunFunctionRequest], fnv1.RunFunctionResponse]
Unresolved = Callable[[fnv1.ResourceSelector], bool]


def selects(selector: fnv1.ResourceSelector, obj: Obj) -> bool:
    """Whether Crossplane would return ``obj`` for ``selector``."""
    meta = obj.get("metadata") or {}
    if (obj.get("apiVersion"), obj.get("kind")) != (selector.api_version, selector.kind):
        return False
    if selector.HasField("namespace") and meta.get("namespace", "") != selector.namespace:
        return False
    if selector.WhichOneof("match") == "match_name":
        return bool(meta.get("name") == selector.match_name)
    labels = meta.get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.match_labels.labels.items())


def resolve(selector: fnv1.ResourceSelector, world: Iterable[Obj]) -> list[Obj]:
    """What Crossplane returns for ``selector``: matching objects, sorted by namespace and name."""
    found = [obj for obj in world if _selected(selector, obj)]
    return sorted(found, key=lambda o: (_meta(o, "namespace"), _meta(o, "name")))


def _selected(selector: fnv1.ResourceSelector, obj: Obj) -> bool:
    """``selects``; a malformed object (labels not a map) of the kind asked for is handed over."""
    try:
        return selects(selector, obj)
    except AttributeError:
        return (obj.get("apiVersion"), obj.get("kind")) == (selector.api_version, selector.kind)


def _meta(obj: Obj, key: str) -> str:
    meta = obj.get("metadata")
    return str(meta.get(key) or "") if isinstance(meta, dict) else ""


def request(
    xr: Obj,
    *,
    observed: dict[str, Obj] | None = None,
    required: dict[str, list[Obj]] | None = None,
    input: Obj | None = None,
    tag: str = "emulation",
) -> fnv1.RunFunctionRequest:
    """A request as Crossplane sends it: the XR, observed and required resources, input."""
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=tag))
    req.observed.composite.resource.update(xr)
    for name in sorted(observed or {}):
        req.observed.resources[name].resource.update((observed or {})[name])
    for key in sorted(required or {}):
        items = req.required_resources[key]
        for obj in (required or {})[key]:
            items.items.add().resource.update(obj)
    if input is not None:
        req.input.update(input)
    return req


def reconcile(
    answer: Answer,
    xr: Obj,
    world: list[Obj],
    observed: dict[str, Obj] | None = None,
    *,
    unresolved: Unresolved | None = None,
    input: Obj | None = None,
    tag: str = "emulation",
    strict: bool = False,
) -> tuple[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse]:
    """One reconcile of ``xr``: call, resolve the requirements from ``world``, call again,
    until the requirements stop changing (as Crossplane does, for ``MAX_ROUNDS`` at
    most: ``strict`` raises when they did not settle by then, else the last answer is
    returned). Requirements whose selector ``unresolved`` picks stay unresolved, as
    when Crossplane has not looked them up yet."""
    resolved: dict[str, list[Obj]] = {}
    req = request(xr, observed=observed, input=input, tag=tag)
    rsp = answer(req)
    for _ in range(MAX_ROUNDS):
        wanted = {
            key: resolve(sel, world)
            for key, sel in rsp.requirements.resources.items()
            if unresolved is None or not unresolved(sel)
        }
        if wanted == resolved:
            break
        resolved = wanted
        req = request(xr, observed=observed, required=resolved, input=input, tag=tag)
        rsp = answer(req)
    else:
        if strict:
            raise RuntimeError(f"the requirements of {describe(xr)} did not settle")
    return req, rsp


def describe(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


def reconcile_example(
    example: Example,
    run: Callable[[Composer, fnv1.RunFunctionRequest], fnv1.RunFunctionResponse] = run_composer,
) -> fnv1.RunFunctionResponse:
    """An example's XR answered in process, as ``crossplane render`` would have it answered:
    its Composition step's input, requirements resolved from ``required.yaml``, and the
    composed resources of ``observed.yaml``. ``run`` calls the function (a test's own
    checks on every answer)."""
    fn = registry()[example.xr["kind"]]
    world = [as_stored(d) if d.get("kind") == "Secret" else d for d in example.required]
    _, rsp = reconcile(
        lambda req: run(fn.compose, req),
        example.xr,
        world,
        example.observed,
        input=fn.input,
        strict=True,
    )
    return rsp


STATUS_NAMES = {
    fnv1.STATUS_CONDITION_TRUE: "True",
    fnv1.STATUS_CONDITION_FALSE: "False",
    fnv1.STATUS_CONDITION_UNKNOWN: "Unknown",
}


def xr_ready(rsp: fnv1.RunFunctionResponse) -> bool:
    """Whether Crossplane v2.2 marks the XR Ready after this response.

    The function's verdict for the XR if it gave one; otherwise every
    composed resource must be marked READY_TRUE (crossplane v2.2.0
    internal/controller/apiextensions/composite/reconciler.go:813-851,
    composition_functions.go:527-531; ``crossplane render`` the same,
    cmd/crank/render/render.go:372-423).
    """
    ready = rsp.desired.composite.ready
    if ready != fnv1.READY_UNSPECIFIED:
        return bool(ready == fnv1.READY_TRUE)
    return all(r.ready == fnv1.READY_TRUE for r in rsp.desired.resources.values())


def xr_status(
    rsp: fnv1.RunFunctionResponse, *, stamp: str | None = None, synced: bool = False
) -> Obj:
    """The status Crossplane writes to an XR from its function's response.

    The desired status, each condition the function set (its message only
    when it has one: the field is ``omitempty``), and Ready as Crossplane
    derives it (``xr_ready``); with ``synced`` the Synced of a reconcile that
    succeeded. ``stamp`` is every condition's lastTransitionTime, when given.
    """
    written = resource.struct_to_dict(rsp.desired.composite.resource).get("status")
    status = dict(written) if isinstance(written, dict) else {}
    conditions = []
    for c in rsp.conditions:
        found = condition(c.type, STATUS_NAMES[c.status], c.reason, None)
        if c.message:
            found["message"] = c.message
        if stamp is not None:
            found["lastTransitionTime"] = stamp
        conditions.append(found)
    conditions.append(condition("Ready", str(xr_ready(rsp)), "Available", stamp))
    if synced:
        conditions.append(condition("Synced", "True", "ReconcileSuccess", stamp))
    status["conditions"] = conditions
    return status


SYSTEM_CONDITIONS = frozenset({"Ready", "Synced", "Healthy", "UpToDate", "Responsive"})


def after_failed_reconcile(xr: Obj) -> Obj:
    """``xr`` as Crossplane leaves it when its pipeline fails (a function unreachable
    or answering fatally): each condition a function set turns Unknown, reason
    FatalError; status fields stay (v2.4.0 internal/controller/apiextensions/
    composite/reconciler.go:790-802; the system types: its apis module v2.4.0,
    apiextensions/v1/conditions.go:152-160 and core/v2/condition.go:144-151)."""
    failed = copy.deepcopy(xr)
    for c in failed.get("status", {}).get("conditions", []):
        if c["type"] not in SYSTEM_CONDITIONS:
            c.update(
                status="Unknown",
                reason="FatalError",
                message="A fatal error occurred before the status of this condition "
                "could be determined.",
            )
    return failed
