"""What the control plane's API server turns away, and the message a user reads.

* A ModelService outside its XRD's CEL rules (an endpoint priority past 63)
  is refused with the XRD's own message (apis/modelservices/definition.yaml).
* A ModelRoute written by anyone but Crossplane is refused by
  package/install/modelroute-guard.yaml (a hand-made route would bypass a
  gateway's serviceSelector), while the ModelRoutes Crossplane composes for
  the example fleet were admitted.

Each is tried as the administrator would (neither is Crossplane), and nothing
refused may be stored.
"""

import copy
from dataclasses import dataclass

from plane.clusters import Cluster
from plane.controlplane import API, name_of
from plane.kube import ApiError, Obj


@dataclass(frozen=True)
class Refusal:
    name: str
    obj: Obj
    message: str  # what the API server's answer must say


def refusals(cp: Cluster, docs: list[Obj]) -> list[Refusal]:
    """The attempts, made from the example fleet's objects, so only what is tried is wrong.

    The hand-written ModelRoute copies the spec of one Crossplane composed: a
    schema-valid object, so it is the guard that refuses it (the API server
    validates the schema before it runs validating admission policies).
    """
    service = copy.deepcopy(next(d for d in docs if d["kind"] == "ModelService"))
    service["metadata"] = {**service["metadata"], "name": "priority-out-of-range"}
    service["spec"]["endpoints"][0]["priority"] = 64
    composed = cp.admin.list(API, "ModelRoute")[0]
    route = {
        "apiVersion": API,
        "kind": "ModelRoute",
        "metadata": {"name": "written-by-hand", "namespace": composed["metadata"]["namespace"]},
        "spec": copy.deepcopy(composed["spec"]),
    }
    return [
        Refusal(
            "a ModelService breaking its XRD's CEL rule",
            service,
            "spec.endpoints[].priority must be from 0 to 63",
        ),
        Refusal(
            "a ModelRoute written by hand",
            route,
            "ModelRoutes are composed by ModelServices; create or change the ModelService instead.",
        ),
    ]


def attempt(cp: Cluster, refusal: Refusal) -> str | None:
    """Try it; None if refused with the message and not stored, else what went wrong."""
    meta = refusal.obj["metadata"]
    try:
        cp.admin.create(refusal.obj)
    except ApiError as err:
        if refusal.message not in err.message:
            return f"{refusal.name}: refused, but not with {refusal.message!r}: {err.message}"
    else:
        cp.admin.delete(
            refusal.obj["apiVersion"], refusal.obj["kind"], meta["name"], meta["namespace"]
        )
        return f"{refusal.name}: admitted ({name_of(refusal.obj)})"
    if cp.admin.get(
        refusal.obj["apiVersion"], refusal.obj["kind"], meta["name"], meta["namespace"]
    ):
        return f"{refusal.name}: refused, yet stored"
    return None
