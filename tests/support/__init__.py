"""Builders for RunFunctionRequests and readers of responses, shared by the tests."""

import base64
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.runner import Composer, run_composer
from sim import controllers, loop, pipeline
from sim.catalog import Example
from sim.pipeline import STATUS_NAMES, xr_ready

SEVERITY_NAMES = {
    fnv1.SEVERITY_FATAL: "Fatal",
    fnv1.SEVERITY_WARNING: "Warning",
    fnv1.SEVERITY_NORMAL: "Normal",
}


def request(
    xr: dict[str, Any],
    *,
    required: dict[str, list[dict[str, Any]]] | None = None,
    observed: dict[str, dict[str, Any]] | None = None,
) -> fnv1.RunFunctionRequest:
    """A request as Crossplane sends it (``pipeline.request``): the XR, required and
    observed resources. ``required`` maps a requirement name to what Crossplane resolved
    it to; a name that is absent has not been resolved yet."""
    return pipeline.request(xr, required=required, observed=observed, tag="test")


@dataclass
class Outcome:
    """A response, read back as plain data; with the request it answered, when known."""

    rsp: fnv1.RunFunctionResponse
    req: fnv1.RunFunctionRequest | None = None

    @property
    def secrets(self) -> list[dict[str, Any]]:
        """The Secrets the function was handed as required resources: those the control
        plane holds, as far as this call knows."""
        if self.req is None:
            return []
        found = (
            resource.struct_to_dict(item.resource)
            for resolved in self.req.required_resources.values()
            for item in resolved.items
        )
        return [obj for obj in found if obj.get("kind") == "Secret"]

    @property
    def conditions(self) -> dict[str, tuple[str, str, str]]:
        return {c.type: (STATUS_NAMES[c.status], c.reason, c.message) for c in self.rsp.conditions}

    @property
    def results(self) -> list[tuple[str, str]]:
        return [(SEVERITY_NAMES[r.severity], r.message) for r in self.rsp.results]

    @property
    def fatal(self) -> list[str]:
        return [m for s, m in self.results if s == "Fatal"]

    @property
    def warnings(self) -> list[str]:
        return [m for s, m in self.results if s == "Warning"]

    @property
    def desired(self) -> dict[str, dict[str, Any]]:
        return {
            name: resource.struct_to_dict(r.resource)
            for name, r in self.rsp.desired.resources.items()
        }

    @property
    def composite(self) -> dict[str, Any]:
        return resource.struct_to_dict(self.rsp.desired.composite.resource)

    @property
    def composite_ready(self) -> str:
        return str(fnv1.Ready.Name(self.rsp.desired.composite.ready))

    @property
    def xr_ready(self) -> bool:
        return xr_ready(self.rsp)

    @property
    def requirements(self) -> dict[str, fnv1.ResourceSelector]:
        return dict(self.rsp.requirements.resources)

    def required_secret(self, key: str) -> tuple[str, str]:
        """The name and namespace of the Secret that requirement ``key`` asks for by name."""
        selector = self.requirements[key]
        assert (selector.api_version, selector.kind) == ("v1", "Secret")
        assert selector.HasField("match_name"), "a Secret is required by name"
        return selector.match_name, selector.namespace


def run(compose: Composer, req: fnv1.RunFunctionRequest) -> Outcome:
    """One call of ``compose``; whatever it answers, it never declares the XR ready
    itself (``Reconcile.allow_ready`` says why)."""
    out = Outcome(run_composer(compose, req), req)
    assert out.rsp.desired.composite.ready != fnv1.READY_TRUE, "READY_TRUE for the XR"
    return out


def run_example(example: Example) -> Outcome:
    """One reconcile of an example's XR as Crossplane would run it
    (``pipeline.reconcile_example``), every answer checked as ``run`` checks it."""
    return Outcome(pipeline.reconcile_example(example, lambda fn, req: run(fn, req).rsp))


# The workload clusters' controllers (sim.controllers), one for every offline test of the
# run: the same (cluster, Bundle) holds the same CA in every test, so outputs stay
# comparable across calls.
CONTROLLERS = controllers.World(load_balancers={})


def next_pass(
    desired: dict[str, dict[str, Any]],
    *,
    owner: str,
    answers: dict[str, dict[str, Any]] | None = None,
    not_ready: Iterable[str] = (),
    previous: dict[str, dict[str, Any]] | None = None,
    control_plane: Iterable[dict[str, Any]] = (),
) -> dict[str, dict[str, Any]]:
    """A pass's desired resources as Crossplane observes them on the next pass.

    Each is applied and its cluster's controllers act (``sim.controllers.World``),
    a test's own controllers' ``answers`` merged over what they wrote (by
    resource); each is Ready as its own readiness policy derives it from that,
    unless ``not_ready`` lists it (its provider has not reported it yet). An
    Object's references are filled from the ``control_plane``'s Secrets. What
    ``previous`` holds that is no longer desired is still there.
    """
    observed = CONTROLLERS.observe(
        desired,
        owner=owner,
        answers=answers,
        creating=set(not_ready),
        previous=previous,
        control_plane=control_plane,
    )
    for name, obj in (previous or {}).items():
        observed.setdefault(name, obj)
    return observed


def secret(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    """A Secret as Crossplane would hand it over (values base64 in ``data``)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def settle(
    answer: Callable[[dict[str, dict[str, Any]] | None], Outcome],
    observe: Callable[[Outcome], dict[str, dict[str, Any]]],
    *,
    observed: dict[str, dict[str, Any]] | None = None,
    what: str,
    max_passes: int = 20,
) -> list[Outcome]:
    """One XR reconciled until it rests (``sim.loop.Walk``): each pass ``answer``s with
    what the last pass left ``observe``d (``observed`` before the first). Every pass's
    outcome, in order."""

    def call(_: dict[str, Any], seen: dict[str, dict[str, Any]]) -> loop.Call:
        out = answer(seen or None)
        assert out.req is not None, "an answer in a walk knows its request"
        return loop.Call(out.req, out.rsp)

    def observe_call(_: dict[str, Any], called: loop.Call, __: Any) -> dict[str, dict[str, Any]]:
        return observe(Outcome(called.rsp, called.req))

    walk = loop.Walk({}, call, observe_call, observed=observed or {})
    walk.settle(max_passes=max_passes, what=what)
    return [Outcome(rsp, req) for req, rsp in walk.calls]
