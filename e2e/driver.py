"""One interface to a fleet, whether emulated in-process or running on a real control plane.

The drills (e2e/fleetdrills.py) are written once against ``Driver``: they
change the fleet the way a user does (patch an XR's spec, delete an XR,
apply one again), let it settle, and read what the workload clusters hold
(the routes each gateway's cluster serves, the client CAs each cluster
trusts, which objects exist). ``Emulation`` drives the offline walk's
``e2e.fleet.Fleet``; ``e2e.realplane.realdriver.ControlPlane`` drives the
real API servers. What a route or a trust bundle *is* is read here, from
manifests, by the same code for both.
"""

import copy
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple, Protocol

from e2e.fleet import Fleet, Obj, XRKey
from fleetgate.core import governance, names
from fleetgate.core.constants import CALLER_HEADER, ENDPOINT_HEADER, TOTAL_TOKENS_KEY
from sim.controllers import merge_patch
from sim.loop import fingerprint

Check = Callable[[], list[str]]
MODEL_HEADER = "x-ai-eg-model"


class Ref(NamedTuple):
    """One object somewhere in the fleet; ``cluster`` "" is the control plane."""

    cluster: str  # a workload cluster, by its provider config name
    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = self.cluster or "control-plane"
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{where}: {self.kind} {ns}{self.name}"


@dataclass(frozen=True)
class Backend:
    """One backendRef of a route, resolved to what the gateway dials."""

    name: str
    priority: int
    weight: int
    model: str
    hostname: str
    port: int
    tls: dict[str, Any]
    removes_caller: bool
    credential: bool
    prefix: str
    # The ModelEndpoint, as the backendRef names it to AI Gateway's metrics.
    endpoint: str = ""


@dataclass(frozen=True)
class Route:
    service: XRKey
    gateway: str  # the InferenceGateway's name (its Gateway's, once the XR is gone)
    url: str
    backends: list[Backend]
    cluster: str = ""  # where the AIGatewayRoute is, by provider config name
    name: str = ""  # the AIGatewayRoute's
    # Hostnames the HTTPRoute generated from this route sends to, where a
    # controller generates one (AI Gateway's, on the control plane); None
    # in the emulation, which has no such controller.
    programmed: tuple[str, ...] | None = None
    # Who may call the model here, from the SecurityPolicy on the route; None:
    # every caller the gateway authenticates.
    callers: tuple[str, ...] | None = None
    # How much each caller may use here: the route's own limits, then the
    # gateway's (shared by its routes), each as a sentence.
    limits: tuple[str, ...] = ()

    def hostnames(self) -> set[str]:
        return {b.hostname for b in self.backends} | set(self.programmed or ())

    def tried_after(self, model: str) -> bool:
        """Whether every backend serving ``model`` waits on a later priority than every
        other backend (a sleeping deployment's endpoints, parked): False when none serves
        it or nothing else is routed."""
        its = [b.priority for b in self.backends if b.model == model]
        others = [b.priority for b in self.backends if b.model != model]
        return bool(its and others) and min(its) > max(others)

    def tried_first(self, model: str) -> bool:
        """Whether a backend serving ``model`` is on the first priority Envoy tries."""
        first = min((b.priority for b in self.backends), default=None)
        return any(b.model == model and b.priority == first for b in self.backends)


class Driver(Protocol):
    """What a drill may do to a fleet and read from it."""

    def xrs(self) -> dict[XRKey, Obj]:
        """Every XR on the control plane, status included."""
        ...

    def source(self, key: XRKey) -> Obj:
        """The XR as examples/fleet applies it."""
        ...

    def patch_spec(self, key: XRKey, spec: Obj) -> None:
        """``kubectl patch --type merge -p '{"spec": ...}'``."""
        ...

    def delete(self, key: XRKey) -> None:
        """``kubectl delete --wait=false``: what follows is garbage collection's."""
        ...

    def apply(self, obj: Obj) -> None:
        """``kubectl apply --server-side``."""
        ...

    def settle(self, what: str, holds: Check, tolerate: Collection[XRKey] = ()) -> list[str]:
        """Wait until ``holds()`` finds nothing wrong and the fleet converged; what is wrong.

        ``tolerate``: XRs that may stay not Ready once converged (their state
        is what ``holds`` asserts). Bounded: on the real control plane a wait
        that runs out fails loudly with what is left.
        """
        ...

    def routes(self) -> list[Route]:
        """Every model route the gateways' clusters hold, resolved to backends."""
        ...

    def trusted_client_cas(self) -> dict[str, str | None]:
        """InferenceCluster name → the client CAs its gateway trusts (None: no validation)."""
        ...

    def owned(self, owner: XRKey) -> set[Ref]:
        """Everything ``owner`` composed, transitively: XRs, Objects, their remote objects."""
        ...

    def held(self, refs: Iterable[Ref] | None = None) -> dict[Ref, str]:
        """Which of ``refs`` exist now (None: all the fleet composed), each with its identity.

        The identity changes when the object is recreated or its spec or data
        is changed, and not when only its status is.
        """
        ...

    def named(self, prefix: str) -> list[tuple[Ref, Obj]]:
        """Objects on the workload clusters whose name starts with ``prefix``, with metadata."""
        ...

    def remote(self, ref: Ref) -> Obj | None:
        """The object on its workload cluster as the cluster holds it; None if it is not there."""
        ...

    def note(self, text: str) -> None:
        """Say something a reader of the run should know (the emulation keeps quiet)."""
        ...


# --- reading manifests, for both drivers ----------------------------------------


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def cold_start_unhidden(service: Obj | None) -> bool:
    """Whether a ModelService says every endpoint it may route can sleep, so its callers can
    meet a cold start (condition ColdStartUnhidden)."""
    conditions = ((service or {}).get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "ColdStartUnhidden" and c.get("status") == "True" for c in conditions
    )


def labels(obj: Obj | None) -> dict[str, str]:
    """An object's labels; none for an object that is not there."""
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def routes_of(remote: list[Obj], gateways: dict[str, Obj]) -> list[Route]:
    """The AIGatewayRoutes among ``remote`` (each with ``_providerConfig``), resolved.

    A route's service is the model it matches (``<namespace>/<name>``), its
    gateway the InferenceGateway whose Gateway it attaches to. A backend
    whose AIServiceBackend or Backend is missing reads as a hostname saying so.
    """
    by_gateway_name = {names.fleet_gateway(g): g for g in gateways}
    index = {(m["kind"], m["_providerConfig"], _name(m)): m for m in remote}
    found = []
    for route in (m for m in remote if m["kind"] == "AIGatewayRoute"):
        parent = route["spec"]["parentRefs"][0]["name"]
        gateway = by_gateway_name.get(parent, parent)
        pc = route["_providerConfig"]
        url = ((gateways.get(gateway) or {}).get("status") or {}).get("endpoints", {})
        rule = route["spec"]["rules"][0]
        model = next(
            h["value"]
            for m in rule.get("matches") or []
            for h in m.get("headers") or []
            if h["name"] == MODEL_HEADER
        )
        namespace, _, service = model.partition("/")
        backends = []
        tls: Obj
        ai_spec: Obj
        for ref in rule.get("backendRefs") or []:
            ai = index.get(("AIServiceBackend", pc, ref["name"]))
            backend = index.get(("Backend", pc, ai["spec"]["backendRef"]["name"])) if ai else None
            if ai is None or backend is None:
                missing = "AIServiceBackend" if ai is None else "Backend"
                hostname, port, tls, ai_spec = f"<no {missing} for {ref['name']}>", 0, {}, {}
            else:
                fqdn = backend["spec"]["endpoints"][0]["fqdn"]
                hostname, port = fqdn["hostname"], int(fqdn["port"])
                tls, ai_spec = backend["spec"].get("tls") or {}, ai["spec"]
            policies = [
                m
                for m in remote
                if m["kind"] == "BackendSecurityPolicy"
                and m["_providerConfig"] == pc
                and any(t["name"] == ref["name"] for t in m["spec"]["targetRefs"])
            ]
            backends.append(
                Backend(
                    name=ref["name"],
                    priority=int(ref.get("priority", 0)),
                    weight=int(ref.get("weight", 1)),
                    model=ref.get("modelNameOverride", "(caller's)"),
                    hostname=hostname,
                    port=port,
                    tls=tls,
                    removes_caller=CALLER_HEADER
                    in ((ai_spec.get("headerMutation") or {}).get("remove") or []),
                    credential=bool(policies),
                    prefix=(ai_spec.get("schema") or {}).get("prefix", ""),
                    endpoint=next(
                        (
                            h["value"]
                            for h in (ref.get("headerMutation") or {}).get("set") or []
                            if h["name"] == ENDPOINT_HEADER
                        ),
                        "",
                    ),
                )
            )
        found.append(
            Route(
                ("ModelService", namespace, service),
                gateway,
                url.get("openAI", "?"),
                backends,
                cluster=pc,
                name=_name(route),
                callers=_allowed_callers(remote, pc, _name(route)),
                limits=_limits(remote, pc, _name(route), parent),
            )
        )
    return sorted(found, key=lambda r: (r.service, r.gateway))


# What a rule's response cost counts, by metadata key, and its unit's size.
_COUNTED = {key: ("cost", scale) for scale, key in governance.COST_KEYS.items()} | {
    TOTAL_TOKENS_KEY: ("tokens", 1)
}


def _limit(rule: Obj) -> str:
    """A rate-limit rule as a sentence: how much, per what, for whom."""
    amount = int(rule["limit"]["requests"])
    key = (((rule.get("cost") or {}).get("response") or {}).get("metadata") or {}).get("key")
    what, scale = _COUNTED.get(str(key), ("requests", 1))
    shown = f"{Decimal(amount) / scale:f}" if scale > 1 else str(amount)
    how_much = f"cost {shown}" if what == "cost" else f"{shown} {what}"
    headers = (rule.get("clientSelectors") or [{}])[0].get("headers") or []
    pattern = next((h["value"] for h in headers if h.get("type") == "RegularExpression"), None)
    who = (
        "each caller"
        if pattern is None
        else "each of " + ", ".join(pattern[2:-2].replace("\\.", ".").split("|"))
    )
    where = " across the gateway" if rule.get("shared") else ""
    return f"{how_much}/{rule['limit']['unit']} for {who}{where}"


def _limits(remote: list[Obj], pc: str, route: str, gateway: str) -> tuple[str, ...]:
    """The limits on ``route``: its own policy's, then its gateway's."""
    found = []
    for target in (("HTTPRoute", route), ("Gateway", gateway)):
        for m in remote:
            targets = (m.get("spec") or {}).get("targetRefs") or []
            if m["kind"] != "BackendTrafficPolicy" or m["_providerConfig"] != pc:
                continue
            if any((t.get("kind"), t.get("name")) == target for t in targets):
                rules = ((m["spec"].get("rateLimit") or {}).get("global") or {}).get("rules")
                found += [_limit(rule) for rule in rules or []]
    return tuple(found)


def _allowed_callers(remote: list[Obj], pc: str, route: str) -> tuple[str, ...] | None:
    """The callers a SecurityPolicy on the HTTPRoute generated for ``route`` allows, if any."""
    for m in remote:
        targets = (m.get("spec") or {}).get("targetRefs") or []
        if (
            m["kind"] == "SecurityPolicy"
            and m["_providerConfig"] == pc
            and any(t.get("kind") == "HTTPRoute" and t.get("name") == route for t in targets)
        ):
            rules = (m["spec"].get("authorization") or {}).get("rules") or []
            return tuple(
                value
                for rule in rules
                if rule.get("action") == "Allow"
                for header in (rule.get("principal") or {}).get("headers") or []
                if header.get("name") == CALLER_HEADER
                for value in header.get("values") or []
            )
    return None


def trusted_bundle(remote: list[Obj]) -> str | None:
    """The client CAs a cluster gateway validates against, from the objects on its cluster.

    The ClientTrafficPolicy on the cluster gateway with client validation, and
    the ConfigMap its first caCertificateRef names (``ca.crt``); None when no
    such policy exists, "" when the ConfigMap holds nothing yet.
    """
    for policy in remote:
        spec = policy.get("spec") or {}
        refs = ((spec.get("tls") or {}).get("clientValidation") or {}).get("caCertificateRefs")
        targets = spec.get("targetRefs") or []
        if policy["kind"] != "ClientTrafficPolicy" or not refs:
            continue
        if not any(t.get("name") == names.CLUSTER_GATEWAY for t in targets):
            continue
        bundle = next(
            (m for m in remote if m["kind"] == "ConfigMap" and _name(m) == refs[0]["name"]), None
        )
        return str(((bundle or {}).get("data") or {}).get("ca.crt", ""))
    return None


def published_client_cas(xrs: dict[XRKey, Obj]) -> dict[str, str]:
    """InferenceGateway name → the client CA it published, for those that did."""
    return {
        k[2]: xr["status"]["clientCACertificate"]
        for k, xr in sorted(xrs.items())
        if k[0] == "InferenceGateway" and (xr.get("status") or {}).get("clientCACertificate")
    }


def trust_problems(published: dict[str, str], trusted: dict[str, str | None]) -> list[str]:
    """Each cluster gateway trusts exactly the client CAs the fleet gateways published."""
    want = "".join(ca if ca.endswith("\n") else ca + "\n" for _, ca in sorted(published.items()))
    problems = []
    for cluster, bundle in sorted(trusted.items()):
        if bundle is None:
            problems.append(f"InferenceCluster {cluster} validates no client certificates")
        elif bundle != want:
            problems.append(
                f"InferenceCluster {cluster} trusts {bundle!r:.80}, "
                f"not the {len(published)} published CAs"
            )
    return problems


# --- the in-process emulation -------------------------------------------------------


def remote_ref(obj: Obj) -> Ref | None:
    """The remote object a provider-kubernetes Object manages, if ``obj`` is one."""
    manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
    if obj.get("kind") != "Object" or not manifest:
        return None
    meta = manifest.get("metadata") or {}
    return Ref(
        obj["spec"]["providerConfigRef"]["name"],
        manifest["apiVersion"],
        manifest["kind"],
        meta.get("namespace", ""),
        meta["name"],
    )


def _xr_ref(key: XRKey, obj: Obj) -> Ref:
    return Ref("", str(obj.get("apiVersion", "")), key[0], key[1], key[2])


def _identity(obj: Obj) -> str:
    """What changes when an object is recreated or rewritten, not when its status is."""
    return fingerprint({k: v for k, v in obj.items() if k != "status"})


@dataclass
class Emulation:
    """``Driver`` over the offline walk: edits are the Fleet's, settling is converging."""

    fleet: Fleet

    def xrs(self) -> dict[XRKey, Obj]:
        return self.fleet.xrs

    def source(self, key: XRKey) -> Obj:
        return copy.deepcopy(self.fleet.sources[key])

    def patch_spec(self, key: XRKey, spec: Obj) -> None:
        xr = self.fleet.xrs[key]
        self.fleet.xrs[key] = {**xr, "spec": merge_patch(xr.get("spec") or {}, spec)}

    def delete(self, key: XRKey) -> None:
        self.fleet.delete(key)

    def apply(self, obj: Obj) -> None:
        self.fleet.apply(obj)

    def settle(self, what: str, holds: Check, tolerate: Collection[XRKey] = ()) -> list[str]:
        self.fleet.converge()  # raises when it never settles
        return holds()

    def routes(self) -> list[Route]:
        remote = [m for key in self.fleet.ordered() for m in self.fleet.remote(key)]
        gateways = {k[2]: xr for k, xr in self.fleet.xrs.items() if k[0] == "InferenceGateway"}
        return routes_of(remote, gateways)

    def trusted_client_cas(self) -> dict[str, str | None]:
        return {
            key[2]: trusted_bundle(self.fleet.remote(key))
            for key in self.fleet.ordered()
            if key[0] == "InferenceCluster"
        }

    def _everything(self) -> dict[Ref, tuple[XRKey, str]]:
        """Every ref the fleet holds → (the XR that composed it, or itself; identity)."""
        found: dict[Ref, tuple[XRKey, str]] = {}
        for key, xr in self.fleet.xrs.items():
            found[_xr_ref(key, xr)] = (self.fleet.owner.get(key, key), _identity(xr))
        for key, composed in self.fleet.composed.items():
            for obj in composed.values():
                if obj.get("kind") == "Object":
                    ref = Ref("", obj["apiVersion"], "Object", key[1], obj["metadata"]["name"])
                    found[ref] = (key, _identity(obj))
                remote = remote_ref(obj)
                if remote is not None:
                    manifest = obj["spec"]["forProvider"]["manifest"]
                    found[remote] = (key, _identity(manifest))
        return found

    def owned(self, owner: XRKey) -> set[Ref]:
        keys = {owner}
        while True:
            more = {child for child, parent in self.fleet.owner.items() if parent in keys}
            if more <= keys:
                break
            keys |= more
        return {
            ref
            for ref, (by, _) in self._everything().items()
            if by in keys and (ref.kind, ref.namespace, ref.name) != owner
        }

    def held(self, refs: Iterable[Ref] | None = None) -> dict[Ref, str]:
        everything = {ref: identity for ref, (_, identity) in self._everything().items()}
        if refs is None:
            return everything
        return {ref: everything[ref] for ref in refs if ref in everything}

    def named(self, prefix: str) -> list[tuple[Ref, Obj]]:
        return [
            (ref, {"name": ref.name})
            for ref in self._everything()
            if ref.cluster and ref.name.startswith(prefix)
        ]

    def remote(self, ref: Ref) -> Obj | None:
        for composed in self.fleet.composed.values():
            for obj in composed.values():
                if remote_ref(obj) == ref:
                    manifest: Obj = obj["spec"]["forProvider"]["manifest"]
                    return manifest
        return None

    def note(self, text: str) -> None:
        pass
