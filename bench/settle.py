"""Reconcile one XR in-process until nothing changes, the way Crossplane would.

Each pass sends the function what Crossplane would: the XR with the status it
wrote last, every requirement it declared resolved against the fleet, and
every resource it composed as observed once the workload clusters'
controllers acted (``sim.controllers.World``: Ready, Gateway addresses, CA
ConfigMaps with real certificates). XRs it composes (a ModelDeployment's
ModelEndpoints) are reconciled by their own function in turn. The request of
the pass that changes nothing is the steady state: the request Crossplane
sends on every reconcile of a settled fleet, and the one worth measuring.
"""

import copy
import hashlib
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from bench.world import CREATED, Obj, Pool
from fleetgate.core.runner import run_composer
from sim import loop, pipeline
from sim.catalog import Function, registry
from sim.controllers import World, generated_name
from sim.loop import fingerprint
from sim.pipeline import STATUS_NAMES

REPO = Path(__file__).resolve().parent.parent
MAX_PASSES = 24


@dataclass
class Settled:
    """The steady state of one XR."""

    request: fnv1.RunFunctionRequest
    response: fnv1.RunFunctionResponse
    xr: Obj  # with the status the function wrote
    passes: int
    children: list["Settled"] = field(default_factory=list)  # the XRs it composes, settled

    @property
    def conditions(self) -> dict[str, str]:
        return {c.type: STATUS_NAMES[c.status] for c in self.response.conditions}


@dataclass
class Reconciler:
    """The control plane for one benchmark fleet: required resources and the clusters' world."""

    pool: Pool
    registry: dict[str, Function] = field(default_factory=registry)
    world: World = field(default_factory=lambda: World(load_balancers={}))
    _children: dict[str, "Settled"] = field(default_factory=dict)

    def settle(self, xr: Obj, *, max_passes: int = MAX_PASSES) -> Settled:
        function = self.registry[xr["kind"]]
        what = f"{xr['kind']} {xr['metadata']['name']}"
        # What the next request carries: Crossplane v2.4 seeds each call with what the
        # step required the last time.
        required: dict[str, list[Obj]] = {}
        children: list[Settled] = []

        def call(xr: Obj, observed: dict[str, Obj]) -> loop.Call:
            req = pipeline.request(xr, required=required, observed=observed, input=function.input)
            rsp = run_composer(function.compose, req)
            if fatal := loop.fatal(rsp):
                raise loop.NotSettledError(f"{what}: {fatal[0]}")
            required.clear()
            required.update(
                {
                    key: self.pool.select(selector)
                    for key, selector in sorted(rsp.requirements.resources.items())
                }
            )
            return loop.Call(req, rsp)

        def observe(xr: Obj, called: loop.Call, _: dict[str, Obj]) -> dict[str, Obj]:
            observed, children[:] = self._observe(xr, called.rsp)
            return observed

        walk = loop.Walk(copy.deepcopy(xr), call, observe, with_status)
        req, rsp = walk.settle(max_passes=max_passes, what=what)
        return Settled(req, rsp, walk.xr, len(walk.calls), list(children))

    def _observe(
        self, xr: Obj, rsp: fnv1.RunFunctionResponse
    ) -> tuple[dict[str, Obj], list[Settled]]:
        """Every desired resource as Crossplane would observe it next pass; the XRs among them."""
        desired = loop.desired(rsp)
        children: list[Settled] = []

        def composite(name: str, obj: Obj) -> Obj:
            children.append(self._child(name, obj, xr))
            return children[-1].xr

        observed = self.world.observe(
            desired,
            owner=xr["metadata"]["name"],
            control_plane=self.pool.objects,
            composite=composite,
        )
        return {name: as_stored(obj, xr) for name, obj in observed.items()}, children

    def _child(self, name: str, desired: Obj, owner: Obj) -> Settled:
        """An XR composed by the XR under test, reconciled by its own function (memoised)."""
        key = fingerprint(desired)
        if key not in self._children:
            child = {k: v for k, v in desired.items() if k != "status"}
            meta = child["metadata"] = dict(child.get("metadata") or {})
            meta.setdefault("name", generated_name(name, desired, owner["metadata"]["name"]))
            if "namespace" in owner["metadata"]:
                meta.setdefault("namespace", owner["metadata"]["namespace"])
            self._children[key] = self.settle(child)
        return self._children[key]


def _uid(*parts: str) -> str:
    return str(uuid.UUID(hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]))


def as_stored(obj: Obj, owner: Obj) -> Obj:
    """A composed resource as the API server hands it back: with what the server adds.

    Metadata (the owner's namespace, uid, versions, owner reference,
    finalizer) on the resource, and on the remote object provider-kubernetes
    copies into an Object's status (the object as its cluster returned it,
    v1.2.1 internal/controller/namespaced/object/object.go:510-526) the same
    plus the managed fields of the server-side apply that wrote it
    (``applied_fields``: v1.2.1 applies server-side unless told not to,
    cmd/provider/main.go:96). The controllers' own managed fields (their
    status writes) are left out: real requests can be somewhat larger.
    """
    meta = obj.setdefault("metadata", {})
    owner_meta = owner["metadata"]
    if "namespace" in owner_meta:  # a namespaced XR composes into its namespace
        meta.setdefault("namespace", owner_meta["namespace"])
    name = str(meta.get("name", ""))
    meta.update(
        uid=_uid(obj["kind"], name),
        resourceVersion="1234567",
        generation=1,
        creationTimestamp=CREATED,
        ownerReferences=[
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner_meta["name"],
                "uid": _uid(owner["kind"], owner_meta["name"]),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        finalizers=["finalizer.managedresource.crossplane.io"],
    )
    manifest = (obj.get("status") or {}).get("atProvider", {}).get("manifest")
    if isinstance(manifest, dict):
        applied = {k: v for k, v in manifest.items() if k != "status"}
        remote = manifest.setdefault("metadata", {})
        remote.update(
            uid=_uid("remote", obj["kind"], name),
            resourceVersion="7654321",
            generation=1,
            creationTimestamp=CREATED,
            managedFields=[
                {
                    # provider-kubernetes applies as one field owner per Object
                    # (namespaced/object/object.go:493, ssaFieldOwner).
                    "manager": f"provider-kubernetes/{name}",
                    "operation": "Apply",
                    "apiVersion": manifest.get("apiVersion", ""),
                    "time": CREATED,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": applied_fields(applied),
                }
            ],
        )
    return obj


# What the API server keeps out of every manager's field set: an object's
# identity and the metadata it owns itself (k8s.io/apimachinery v0.35.4
# pkg/util/managedfields/internal/stripmeta.go:38-51).
_STRIPPED = {
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    "metadata.creationTimestamp",
    "metadata.selfLink",
    "metadata.uid",
    "metadata.clusterName",
    "metadata.generation",
    "metadata.managedFields",
    "metadata.resourceVersion",
}


def applied_fields(applied: Obj, path: str = "") -> Obj:
    """The FieldsV1 set a server-side apply of ``applied`` gives its manager.

    Every field it sets, as ``f:<name>`` entries nested like the object. Each
    list counts as one atomic field: for lists keyed by a merge key the API
    server records an entry per item (``k:{...}``), a little larger.
    """
    fields: Obj = {}
    for key, value in applied.items():
        at = f"{path}.{key}" if path else key
        if at in _STRIPPED:
            continue
        nested = applied_fields(value, at) if isinstance(value, dict) and value else {}
        if nested or not isinstance(value, dict) or not value:
            fields[f"f:{key}"] = nested
    return fields


def with_status(xr: Obj, called: loop.Call) -> Obj:
    """The XR as Crossplane writes it back: the desired status, conditions, Ready and Synced."""
    return {**xr, "status": pipeline.xr_status(called.rsp, stamp=CREATED, synced=True)}
