"""``e2e.driver.Driver`` on the real control plane: the shared drills against real API servers.

Edits go to the control plane's API server as kubectl sends them; what the
drills read comes from the workload clusters' API servers (the
AIGatewayRoutes, their Backends and the HTTPRoutes AI Gateway's controller
generated from them; each cluster gateway's client-validation policy and
its ConfigMap) and from the control plane (XRs, Objects). Settling polls
until the drill's facts hold on the clusters, then until the fleet
converges; each wait is bounded and fails with what is left.
"""

import dataclasses
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from e2e.driver import Check, Ref, Route, remote_ref, routes_of, trusted_bundle
from e2e.fleet import XRKey, describe, key_of
from fleetgate.core.constants import SYSTEM_NAMESPACE as NAMESPACE
from plane import controlplane
from plane.clusters import Cluster
from plane.kube import ApiError, Kube, Obj
from sim.loop import fingerprint

AIGW = "aigateway.envoyproxy.io/v1beta1"
EG = "gateway.envoyproxy.io/v1alpha1"
GWAPI = "gateway.networking.k8s.io/v1"
ROUTE_KINDS = [
    (AIGW, "AIGatewayRoute"),
    (AIGW, "AIServiceBackend"),
    (EG, "Backend"),
    (AIGW, "BackendSecurityPolicy"),
    # Who may call a model: the policy on the HTTPRoute generated from its route.
    (EG, "SecurityPolicy"),
    # How much: the route's limits, and its gateway's.
    (EG, "BackendTrafficPolicy"),
]
# What controllers on a workload cluster make for a remote object, found by owner
# reference: the HTTPRoute and HTTPRouteFilters AI Gateway generates from a route.
GENERATED_KINDS = [(GWAPI, "HTTPRoute"), (EG, "HTTPRouteFilter")]
HOLD_TIMEOUT_S = 180.0
CONVERGE_TIMEOUT_S = 240.0
INTERVAL_S = 2.0


class DrillError(RuntimeError):
    pass


class Settled(NamedTuple):
    """How long after its change a settled wait's facts held, and the fleet converged."""

    what: str
    held: float
    converged: float


def _identity(obj: Obj) -> str:
    """uid and generation; for kinds without a generation, uid and a digest of the content."""
    meta = obj.get("metadata") or {}
    if "generation" in meta:
        return f"{meta.get('uid')}:{meta['generation']}"
    content = {k: v for k, v in obj.items() if k not in {"metadata", "status"}}
    return f"{meta.get('uid')}:{fingerprint(content)}"


def _remote_ref(obj: Obj) -> Ref:
    ref = remote_ref(obj)
    assert ref is not None, f"Object {obj['metadata']['name']} manages no manifest"
    return ref


def _ref(obj: Obj) -> Ref:
    meta = obj["metadata"]
    return Ref("", obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


@dataclass
class ControlPlane:
    cp: Cluster
    workloads: dict[str, Cluster]  # by name, which is also its ClusterProviderConfig's
    docs: list[Obj]  # examples/fleet as applied
    # How long a wait may take, and how often it looks: a fleet of hundreds of services
    # (bench/fleetscale.py) waits longer and looks less often than the example controlplane.
    hold_timeout_s: float = HOLD_TIMEOUT_S
    converge_timeout_s: float = CONVERGE_TIMEOUT_S
    interval_s: float = INTERVAL_S
    timings: list[Settled] = field(default_factory=list)
    _since: float = field(default_factory=time.monotonic)

    # --- edits ------------------------------------------------------------------

    def xrs(self) -> dict[XRKey, Obj]:
        return {key_of(xr): xr for xr in controlplane.xrs(self.cp)}

    def source(self, key: XRKey) -> Obj:
        return next(d for d in self.docs if d["kind"] != "Secret" and key_of(d) == key)

    def patch_spec(self, key: XRKey, spec: Obj) -> None:
        self._since = time.monotonic()
        self.cp.admin.merge_patch(controlplane.API, key[0], key[2], key[1], {"spec": spec})

    def delete(self, key: XRKey) -> None:
        self._since = time.monotonic()
        self.cp.admin.delete(controlplane.API, key[0], key[2], key[1])

    def apply(self, obj: Obj) -> None:
        self._since = time.monotonic()
        self.cp.admin.apply(obj, manager="kubectl")

    def note(self, text: str) -> None:
        print(f"  {text}")

    # --- waiting ------------------------------------------------------------------

    def settle(self, what: str, holds: Check, tolerate: Collection[XRKey] = ()) -> list[str]:
        start = self._since
        problems = self._poll(holds, self.hold_timeout_s)
        if problems:
            # What the control plane says of itself is where to look next.
            meanwhile = self._poll(lambda: controlplane.not_converged(self.cp), 0) or ["nothing"]
            raise DrillError(
                f"{what}: not so {self.hold_timeout_s:.0f}s after the change; still:\n  "
                + "\n  ".join(problems)
                + "\nand not converged meanwhile:\n  "
                + "\n  ".join(meanwhile)
            )
        held = time.monotonic() - start
        tolerated = tuple(f"{describe(k)}: " for k in tolerate)

        def converged() -> list[str]:
            return [p for p in controlplane.not_converged(self.cp) if not p.startswith(tolerated)]

        left = self._poll(converged, self.converge_timeout_s)
        if left:
            raise DrillError(
                f"{what}: held, but the fleet did not converge in {self.converge_timeout_s:.0f}s; "
                "still:\n  " + "\n  ".join(left)
            )
        took = time.monotonic() - start
        also = (
            f" (not Ready, as expected: {', '.join(map(describe, tolerate))})" if tolerate else ""
        )
        print(f"  {what}: held after {held:.0f}s, converged after {took:.0f}s{also}")
        self.timings.append(Settled(what, held, took))
        return holds()

    def _poll(self, check: Check, timeout: float) -> list[str]:
        """Poll ``check`` until it finds nothing wrong; what it last found, if time ran out."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                problems = check()
            except (ApiError, OSError) as err:
                problems = [f"reading the fleet failed: {err}"]
            if not problems or time.monotonic() > deadline:
                return problems
            time.sleep(self.interval_s)

    # --- reading the clusters ---------------------------------------------------------

    def _kube(self, cluster: str) -> Kube:
        return self.cp.admin if not cluster else self.workloads[cluster].admin

    def routes(self) -> list[Route]:
        remote: list[Obj] = []
        for name, cluster in self.workloads.items():
            for api_version, kind in ROUTE_KINDS:
                for obj in cluster.admin.list(api_version, kind, NAMESPACE):
                    remote.append({**obj, "_providerConfig": name})
        gateways = {k[2]: xr for k, xr in self.xrs().items() if k[0] == "InferenceGateway"}
        backends = {
            (m["_providerConfig"], m["metadata"]["name"]): m
            for m in remote
            if m["kind"] == "Backend"
        }
        found = []
        for route in routes_of(remote, gateways):
            generated = self.workloads[route.cluster].admin.get(
                GWAPI, "HTTPRoute", route.name, NAMESPACE
            )
            refs = [
                ref["name"]
                for rule in ((generated or {}).get("spec") or {}).get("rules") or []
                for ref in rule.get("backendRefs") or []
                if ref.get("kind") == "Backend"
            ]
            hostnames = tuple(
                backends[(route.cluster, ref)]["spec"]["endpoints"][0]["fqdn"]["hostname"]
                if (route.cluster, ref) in backends
                else f"<no Backend {ref}>"
                for ref in refs
            )
            found.append(dataclasses.replace(route, programmed=hostnames))
        return found

    def trusted_client_cas(self) -> dict[str, str | None]:
        trusted: dict[str, str | None] = {}
        for key, xr in self.xrs().items():
            if key[0] != "InferenceCluster":
                continue
            pc = ((xr.get("status") or {}).get("providerConfigRef") or {}).get("name") or (
                xr["spec"]["credentials"].get("providerConfigName")
            )
            kube = self.workloads[pc].admin
            remote = [
                *kube.list(EG, "ClientTrafficPolicy", NAMESPACE),
                *kube.list("v1", "ConfigMap", NAMESPACE),
            ]
            trusted[key[2]] = trusted_bundle(remote)
        return trusted

    def _composed(self) -> list[Obj]:
        return [*controlplane.xrs(self.cp), *self.cp.admin.list(*controlplane.OBJECT)]

    def owned(self, owner: XRKey) -> set[Ref]:
        everything = self._composed()
        children: dict[str, list[Obj]] = {}
        for obj in everything:
            for ref in obj["metadata"].get("ownerReferences") or []:
                children.setdefault(ref["uid"], []).append(obj)
        root = next(o for o in everything if key_of(o) == owner)
        found: set[Ref] = set()
        remote: list[Ref] = []
        queue = [root["metadata"]["uid"]]
        while queue:
            for child in children.get(queue.pop(), []):
                found.add(_ref(child))
                queue.append(child["metadata"]["uid"])
                if child["kind"] == "Object":
                    remote.append(_remote_ref(child))
        found |= set(remote)
        uids = {(ref.cluster, uid.split(":")[0]) for ref, uid in self.held(remote).items()}
        for name, cluster in self.workloads.items():
            for api_version, kind in GENERATED_KINDS:
                for obj in cluster.admin.list(api_version, kind, NAMESPACE):
                    owners = obj["metadata"].get("ownerReferences") or []
                    if any((name, o["uid"]) in uids for o in owners):
                        meta = obj["metadata"]
                        found.add(Ref(name, api_version, kind, meta["namespace"], meta["name"]))
        return found

    def held(self, refs: Iterable[Ref] | None = None) -> dict[Ref, str]:
        if refs is None:
            composed = self._composed()
            refs = [_ref(o) for o in composed] + [
                _remote_ref(o) for o in composed if o["kind"] == "Object"
            ]
        found = {}
        for ref in refs:
            obj = self._kube(ref.cluster).get(ref.api_version, ref.kind, ref.name, ref.namespace)
            if obj is not None:
                found[ref] = _identity(obj)
        return found

    def remote(self, ref: Ref) -> Obj | None:
        return self._kube(ref.cluster).get(ref.api_version, ref.kind, ref.name, ref.namespace)

    def named(self, prefix: str) -> list[tuple[Ref, Obj]]:
        found = []
        for name, cluster in self.workloads.items():
            for obj in cluster.admin.every_object("Event"):
                meta = obj["metadata"]
                if meta["name"].startswith(prefix):
                    ns = meta.get("namespace", "")
                    found.append(
                        (Ref(name, obj["apiVersion"], obj["kind"], ns, meta["name"]), meta)
                    )
        return found
