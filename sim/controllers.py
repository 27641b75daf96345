"""The API server, provider-kubernetes and the workload clusters' controllers.

Composed resources as Crossplane observes them on the next pass once they
are applied and their controllers acted (``World.observe``: each remote
controller's status, Gateway addresses, trust-manager ConfigMaps holding real
PEM certificates, Ready derived from each Object's readiness policy as
provider-kubernetes does; ``applied`` for a scenario's own answers), and
Secrets as the API server stores them.
"""

import base64
import copy
import hashlib
import json
import re
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel

from sim.catalog import COMPOSITION_RESOURCE_NAME, KIND_ORDER
from sim.pki import KeyPair, ca

Obj = dict[str, Any]

# The one time this walk's controllers write: render stamps a fixed time too.
SIMULATED_AT = "2024-01-01T00:00:00Z"
PROVIDER_FINALIZER = "finalizer.managedresource.crossplane.io"
# How this walk's controllers word their conditions (``applied``'s arguments).
SIMULATED: dict[str, Any] = {"reason": "Simulated", "synced": "Simulated", "stamp": SIMULATED_AT}
# --- the API server and the workload clusters' controllers ---------------------------


def as_stored(secret: Obj) -> Obj:
    """A Secret as the API server stores it: ``stringData`` folded into base64 ``data``."""
    stored = {k: v for k, v in secret.items() if k != "stringData"}
    data = dict(stored.get("data") or {})
    for k, v in (secret.get("stringData") or {}).items():
        data[k] = base64.b64encode(str(v).encode()).decode()
    stored["data"] = data
    return stored


def bundles_of(composed: Iterable[Obj]) -> set[tuple[str, str]]:
    """(provider config, name) of every trust-manager Bundle among composed Objects: the
    ConfigMaps trust-manager writes for them hold a CA once observed (``World.remote``)."""
    found = set()
    for obj in composed:
        manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest") or {}
        if isinstance(manifest, dict) and manifest.get("kind") == "Bundle":
            found.add((obj["spec"]["providerConfigRef"]["name"], manifest["metadata"]["name"]))
    return found


@dataclass
class World:
    """What the workload clusters' controllers and load balancers would do.

    ``load_balancers`` maps a cluster's provider config name to the kind of
    address its load balancers hand out: ``{"hostname": "lb.example.net"}``
    or ``{"ip": "203.0.113.10"}`` (each Gateway gets its own, derived from it).
    ``idle`` names the KEDA ScaledObjects (``namespace/name``, on whichever cluster)
    whose triggers have read no demand for longer than their cooldown (``keda``).
    """

    load_balancers: dict[str, dict[str, str]]
    cas: dict[tuple[str, str], KeyPair] = field(default_factory=dict)
    idle: set[str] = field(default_factory=set)

    def ca_for(self, provider_config: str, bundle: str) -> KeyPair:
        """The CA cert-manager issued behind a Bundle on a cluster (made once per run)."""
        ident = (provider_config, bundle)
        if ident not in self.cas:
            self.cas[ident] = ca(f"{bundle} on {provider_config}"[:64])
        return self.cas[ident]

    def address(self, provider_config: str, gateway: str) -> str:
        spec = self.load_balancers.get(provider_config, {"ip": "198.51.100.1"})
        salt = int(hashlib.sha256(gateway.encode()).hexdigest()[:4], 16) % 200 + 10
        if "hostname" in spec:
            return f"{gateway[:40]}.{spec['hostname']}"
        if ":" in spec["ip"]:
            return f"{spec['ip'].rsplit(':', 1)[0]}:{salt:x}"
        return f"{spec['ip'].rsplit('.', 1)[0]}.{salt}"

    def observe(
        self,
        desired: Mapping[str, Obj],
        *,
        owner: str,
        previous: Mapping[str, Obj] | None = None,
        bundles: set[tuple[str, str]] | None = None,
        control_plane: Iterable[Obj] = (),
        ready_replicas: Mapping[str, int] | None = None,
        answers: Mapping[str, Obj] | None = None,
        creating: Container[str] = (),
        exists: Callable[[str], bool] = lambda _: True,
        composite: Callable[[str, Obj], Obj] | None = None,
    ) -> dict[str, Obj]:
        """Composed resources (keyed by composition resource name) as Crossplane observes
        them on the next pass, once applied and their controllers acted (``observe_one``).

        ``bundles`` are the trust-manager Bundles the fleet holds (by default
        those among ``desired``); what ``exists`` leaves out was never created.
        A scenario's own controllers speak through ``answers`` (by resource, a
        merge patch over its remote object: ``None`` where they wrote nothing)
        and ``creating`` (resources their provider has not reported Ready yet).
        """
        trust = bundles if bundles is not None else bundles_of(desired.values())
        held = list(control_plane)
        was = previous or {}
        scaled = keda(desired, self.idle)
        return {
            key: self.observe_one(
                key,
                manifest,
                owner=owner,
                bundles=trust,
                control_plane=held,
                name=((was.get(key) or {}).get("metadata") or {}).get("name"),
                ready_replicas=(ready_replicas or {}).get(key),
                answer=(answers or {}).get(key),
                acted=scaled.get(key),
                creating=key in creating,
                composite=composite,
            )
            for key, manifest in desired.items()
            if exists(key)
        }

    def observe_one(
        self,
        key: str,
        desired: Obj,
        *,
        owner: str,
        bundles: set[tuple[str, str]],
        control_plane: Iterable[Obj] = (),
        name: str | None = None,
        ready_replicas: int | None = None,
        answer: Obj | None = None,
        creating: bool = False,
        composite: Callable[[str, Obj], Obj] | None = None,
        acted: Obj | None = None,
    ) -> Obj:
        """One composed resource as Crossplane observes it once its controllers acted.

        It keeps ``name`` (the one the API server gave it before) or gets one
        generated from its ``generateName`` or ``owner``, and carries its
        composition resource name. An Object's remote object is applied with
        its references filled in from the ``control_plane``'s Secrets, left as
        the cluster's controllers leave it (``remote``; ``ready_replicas`` of a
        workload ready; a scenario's ``answer`` merged over it), and reported
        sanitised, with the Ready its readiness policy derives from it, as
        provider-kubernetes does. A composed XR is what ``composite`` makes of
        it (its own function's answer), by default Ready. Nothing is Ready
        while ``creating``. ``acted`` is what a scaler wrote over the applied
        remote object (a merge patch) before the other controllers report on it.
        """
        spec = desired.get("spec") or {}
        if desired.get("kind") == "Object" and "forProvider" in spec:
            pc = spec.get("providerConfigRef", {}).get("name", "")
            manifest = patched(
                spec["forProvider"]["manifest"], spec.get("references") or [], control_plane
            )
            if acted is not None:
                manifest = merge_patch(manifest, acted)
            remote = merge_patch(self.remote(manifest, pc, bundles, ready_replicas), answer or {})
            ready = not creating and object_ready(desired, remote)
            observed = applied(desired, remote=sanitized(remote), ready=ready, **SIMULATED)
        elif desired.get("kind") in KIND_ORDER and composite is not None:
            # A copy: the composed XR's own record is not this observation of it.
            observed = copy.deepcopy(composite(key, desired))
        else:
            observed = applied(desired, ready=not creating, **SIMULATED)
        meta = observed.setdefault("metadata", {})
        meta.setdefault("name", name or generated_name(key, desired, owner))
        meta.setdefault("annotations", {})[COMPOSITION_RESOURCE_NAME] = key
        return observed

    def remote(
        self,
        manifest: Obj,
        provider_config: str,
        bundles: set[tuple[str, str]],
        ready_replicas: int | None = None,
    ) -> Obj:
        """A remote object as its cluster holds it once applied (its first generation) and
        its controllers acted (``remote_status``), a Gateway with the address its load
        balancer gave it.

        A shallow copy: only top-level keys (metadata, status, a ConfigMap's
        data) are written, and ``applied`` deep-copies what it records."""
        remote = dict(manifest)
        remote["metadata"] = {**(manifest.get("metadata") or {}), "generation": GENERATION}
        name = remote["metadata"].get("name", "")
        if remote.get("kind") == "ConfigMap" and (provider_config, name) in bundles:
            if "data" not in remote:  # trust-manager wrote the Bundle's target
                remote["data"] = {"ca.crt": self.ca_for(provider_config, name).cert_pem.decode()}
            return remote
        address = self.address(provider_config, name) if remote.get("kind") == "Gateway" else None
        status = remote_status(remote, ready_replicas, address=address)
        if status:
            remote["status"] = status
        return remote


def keda(desired: Mapping[str, Obj], idle: Container[str]) -> dict[str, Obj]:
    """What KEDA v2.20.0's operator writes on the remote objects of ``desired`` (composed
    Objects by resource name), as merge patches by resource name: the replicas it sets
    on a ScaledObject's target, and the ScaledObject's status.

    One in ``idle`` has read no demand past its cooldown: its target is scaled to
    ``minReplicaCount`` and it is Active False, ScalerNotActive
    (pkg/scaling/executor/scale_scaledobjects.go:86-106, 175-223). Any other is Active
    and its target keeps what was applied (KEDA scales only from zero to the minimum,
    :73-75; the HPA's sizing above that is not played). Both are Ready
    (:44, apis/keda/v1alpha1/condition_types.go:40-43) and keep a ``lastActiveTime``.
    A target is looked for on the ScaledObject's own cluster.
    """
    manifests = {
        key: (obj.get("spec") or {}).get("forProvider", {}).get("manifest") or {}
        for key, obj in desired.items()
        if obj.get("kind") == "Object"
    }

    def where(key: str, kind: object, namespace: object, name: object) -> tuple[object, ...]:
        config = (desired[key].get("spec") or {}).get("providerConfigRef", {}).get("name")
        return config, kind, namespace, name

    by_name = {
        where(key, m.get("kind"), m["metadata"].get("namespace"), m["metadata"].get("name")): key
        for key, m in manifests.items()
        if isinstance(m.get("metadata"), dict)
    }
    acts: dict[str, Obj] = {}
    for key, m in manifests.items():
        if (m.get("apiVersion"), m.get("kind")) != ("keda.sh/v1alpha1", "ScaledObject"):
            continue
        meta, spec = m.get("metadata") or {}, m.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        asleep = f"{meta.get('namespace')}/{meta.get('name')}" in idle
        target = by_name.get(where(key, ref.get("kind"), meta.get("namespace"), ref.get("name")))
        if asleep and target is not None:
            acts[target] = {"spec": {"replicas": int(spec.get("minReplicaCount", 0))}}
        active = ("False", "ScalerNotActive") if asleep else ("True", "ScalerActive")
        ready = {"type": "Ready", "status": "True", "reason": "ScaledObjectReady"}
        acts[key] = {
            "status": {
                "scaleTargetKind": f"{ref.get('apiVersion')}.{ref.get('kind')}",
                "lastActiveTime": SIMULATED_AT,
                "conditions": [ready, {"type": "Active", "status": active[0], "reason": active[1]}],
            }
        }
    return acts


def patched(manifest: Obj, references: Iterable[Obj], control_plane: Iterable[Obj]) -> Obj:
    """``manifest`` with an Object's ``references[].patchesFrom`` filled in from the
    control plane's Secrets, as provider-kubernetes does before it applies it.

    Only what the functions compose: a Secret's ``data[key]`` into ``data[key]``.
    A reference whose Secret or key is missing leaves the manifest as composed.
    """
    out = dict(manifest)
    secrets = {
        (s["metadata"].get("namespace"), s["metadata"].get("name")): s.get("data") or {}
        for s in control_plane
        if s.get("kind") == "Secret" and isinstance(s.get("metadata"), dict)
    }
    for ref in references:
        source = ref.get("patchesFrom") or {}
        key = re.fullmatch(r"data\[(.+)\]", str(source.get("fieldPath", "")))
        target = re.fullmatch(r"data\[(.+)\]", str(ref.get("toFieldPath", "")))
        if source.get("kind") != "Secret" or key is None or target is None:
            continue
        value = secrets.get((source.get("namespace"), source.get("name")), {}).get(key[1])
        if value is not None:
            out["data"] = {**(out.get("data") or {}), target[1]: value}
    return out


def merge_patch(target: Obj, patch: Obj) -> Obj:
    """``patch`` over ``target`` as an RFC 7386 JSON merge patch (the API server's
    ``--type merge``): maps merged key by key, a null removing the key."""
    out = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_patch(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def sanitized(remote: Obj) -> Obj:
    """The remote object as ``--sanitize-secrets`` reports it in ``status.atProvider``: a v1
    Secret's data replaced (provider-kubernetes v1.2.1
    internal/controller/namespaced/object/object.go:513-521); Ready is still derived from
    the object itself (object.go:528-532)."""
    if remote.get("kind") == "Secret" and remote.get("apiVersion") == "v1":
        return {**remote, "data": {"redacted": None}}
    return remote


def generated_name(key: str, desired: Obj, owner: str) -> str:
    """The name the API server gives a composed resource: its ``generateName`` (by default
    its owner's name) and a random suffix, here made repeatable from ``key``."""
    prefix = (desired.get("metadata") or {}).get("generateName") or f"{owner}-"
    return prefix + hashlib.sha256(key.encode()).hexdigest()[:5]


def patch_applied(policy: Obj, condition: Callable[[str, str, str], Obj]) -> Obj:
    """What Envoy Gateway v1.8.3 reports for an EnvoyPatchPolicy it accepted and applied.

    One ancestor, the target Gateway in the policy's namespace (internal/
    gatewayapi/envoypatchpolicy.go:67-74, helpers.go:637-645), under the
    gatewayclass controller's name, with Accepted once enabled and valid
    (envoypatchpolicy.go:143, status/policy.go:68-83) and Programmed once the
    patches applied to the xDS (internal/xds/translator/jsonpatch.go:169,
    status/envoypatchpolicy.go:18-35). ``condition(type, reason, message)``
    makes each condition in its writer's style: this walk's fixed time, or the
    control plane's stand-in with the object's generation and the time now.
    """
    target = (policy.get("spec") or {}).get("targetRef") or {}
    return {
        "ancestorRef": {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "namespace": (policy.get("metadata") or {}).get("namespace", ""),
            "name": target.get("name", ""),
        },
        "controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
        "conditions": [
            condition("Accepted", "Accepted", "Policy has been accepted."),
            condition("Programmed", "Programmed", "Patches have been successfully applied."),
        ],
    }


def _simulated(type_: str, reason: str, message: str) -> Obj:
    return {**_cond(type_), "reason": reason, "message": message}


def _cond(type_: str, status: str = "True") -> Obj:
    return condition(type_, status, "Simulated", SIMULATED_AT)


# --- provider-kubernetes and working clusters, per composed Object ---------------------

GENERATION = 1  # of every remote object: applied once


def applied(
    desired: Obj,
    *,
    remote: Obj | None = None,
    ready: bool = True,
    reason: str | None = None,
    synced: str = "ReconcileSuccess",
    stamp: str | None = None,
) -> Obj:
    """A composed resource as Crossplane observes it once provider-kubernetes applied it.

    An Object carries the provider's finalizer and ``remote`` in
    ``status.atProvider.manifest``: the remote
    object as its cluster holds it (by default the manifest as applied, no
    controller having written to it). Every resource has Ready (``reason``, by
    default Available, or Creating while not ready) and Synced (``synced``)
    conditions, with ``stamp`` as their lastTransitionTime when given. Names
    and annotations are the caller's: they say which pass and owner it is.
    """
    obj = finalized(copy.deepcopy(desired))
    status: Obj = {}
    if remote is None and obj.get("kind") == "Object":
        remote = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
    if remote is not None:
        status["atProvider"] = {"manifest": copy.deepcopy(remote)}
    why = reason if reason is not None else ("Available" if ready else "Creating")
    status["conditions"] = [
        condition("Ready", str(ready), why, stamp),
        condition("Synced", "True", synced, stamp),
    ]
    obj["status"] = status
    return obj


def finalized(obj: Obj) -> Obj:
    """``obj`` (in place) with provider-kubernetes' finalizer if it is an Object, as the
    provider's first reconcile of it leaves it (crossplane-runtime v2.0.0-rc.1
    pkg/reconciler/managed/reconciler.go:1272; provider-kubernetes v1.2.1
    internal/controller/namespaced/object/object.go:105, 812-825)."""
    if obj.get("kind") == "Object":
        obj.setdefault("metadata", {})["finalizers"] = [PROVIDER_FINALIZER]
    return obj


def condition(type_: str, status: str, reason: str, stamp: str | None) -> Obj:
    found = {"type": type_, "status": status, "reason": reason}
    if stamp is not None:
        found["lastTransitionTime"] = stamp
    return found


# What the API server itself writes on create, whatever the generation.
SERVER_STATUS: dict[str, Obj] = {
    # kubernetes v1.35.4 pkg/registry/core/namespace/strategy.go:63-67
    "Namespace": {"phase": "Active"},
    # apiextensions-apiserver v0.35.4: pkg/controller/status/naming_controller.go and
    # pkg/controller/establish/establishing_controller.go:157-163; a CRD condition
    # carries no observedGeneration (pkg/apihelpers/helpers.go:76-90 sets none)
    "CustomResourceDefinition": {
        "conditions": [
            condition("NamesAccepted", "True", "NoConflicts", SIMULATED_AT),
            condition("Established", "True", "InitialNamesAccepted", SIMULATED_AT),
        ]
    },
}
# Kinds whose controllers report one condition, True once they acted.
REPORTED_CONDITIONS = {
    "Bundle": "Synced",
    "GatewayClass": "Accepted",  # Envoy Gateway's GatewayClass controller
    **dict.fromkeys(["Certificate", "Issuer", "Release"], "Ready"),
    **dict.fromkeys(
        ["Backend", "AIGatewayRoute", "AIServiceBackend", "BackendSecurityPolicy"], "Accepted"
    ),
}


def remote_status(
    manifest: Obj, ready_replicas: int | None = None, *, address: str | None = None
) -> Obj:
    """What a working cluster's controllers report for a remote object, for its generation.

    The one table of this emulation: each kind's status in its controller's
    shape (``fleetgate.core.readiness`` cites them), every condition stamped
    with the generation it was written for where the API has the field
    (``metav1.Condition``; a Deployment's conditions have none, its status
    carries ``observedGeneration``). ``ready_replicas`` overrides how many of
    a workload's replicas are ready; ``address`` is a Gateway's, from its load
    balancer. A kind no controller reports on gets no status.
    """
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    # Upstream kinds report for the whole workload, not per replica.
    serving = ready_replicas is None or ready_replicas > 0

    def cond(type_: str, status: bool = True, reason: str = "Simulated") -> Obj:
        found = condition(type_, str(status), reason, SIMULATED_AT)
        return {**found, "observedGeneration": GENERATION}

    status: Obj = {}
    match kind:
        case _ if kind in SERVER_STATUS:
            status = copy.deepcopy(SERVER_STATUS[str(kind)])
        case "Deployment":
            want = spec.get("replicas", 1)
            n = want if ready_replicas is None else ready_replicas
            available = n >= want - want // 4  # the default maxUnavailable of 25%
            status = {
                "observedGeneration": GENERATION,
                "replicas": want,
                "readyReplicas": n,
                "availableReplicas": n,
                "conditions": [_cond("Available", str(available)), _cond("Progressing")],
            }
        case "Gateway":
            status = {"conditions": [cond("Accepted"), cond("Programmed")]}
            if address is not None:
                numeric = address.replace(".", "").replace(":", "").isalnum() and (
                    address[0].isdigit() or ":" in address
                )
                kind_of = "IPAddress" if numeric else "Hostname"
                status["addresses"] = [{"type": kind_of, "value": address}]
        case "HTTPRoute" | "InferencePool":
            conditions = [cond("Accepted", reason="Accepted"), cond("ResolvedRefs")]
            parent = {"parentRef": {"name": "parent"}, "controllerName": "sim"}
            status = {"parents": [{**parent, "conditions": conditions}]}
        case "SecurityPolicy" | "ClientTrafficPolicy" | "BackendTrafficPolicy":
            ancestor = {"ancestorRef": {"name": "parent"}, "controllerName": "sim"}
            status = {"ancestors": [{**ancestor, "conditions": [cond("Accepted")]}]}
        case "EnvoyPatchPolicy":
            status = {"ancestors": [patch_applied(manifest, _simulated)]}
        case "InferenceSet":  # KAITO v0.12.0 pkg/inferenceset/inferenceset_controller.go:429-434
            want = spec.get("replicas", 1)
            n = want if ready_replicas is None else ready_replicas
            status = {"replicas": want, **({"readyReplicas": n} if n else {})}
        case "RayService":
            status = {"conditions": [cond("Ready", serving)]}
        case "DynamoGraphDeployment":
            status = {"state": "successful" if serving else "pending"}
        case _ if kind in REPORTED_CONDITIONS:
            status = {"conditions": [cond(REPORTED_CONDITIONS[str(kind)])]}
    return status


def evaluate(cel: str, obj: Obj) -> bool:
    """``cel`` over ``obj`` bound as ``object``, decoded as provider-kubernetes decodes it.

    provider-kubernetes v1.2.1 hands the remote object to CEL through
    ``json.Unmarshal`` into ``map[string]any``
    (internal/controller/namespaced/object/object.go:656-674): every number
    is a float64, generations included.
    """
    decoded = json.loads(json.dumps(obj), parse_int=float)
    return bool(_program(cel).evaluate({"object": json_to_cel(decoded)}))


@cache
def _program(cel: str) -> celpy.Runner:
    """A readiness query compiled once: every pass of every walk evaluates the same few."""
    env = celpy.Environment()
    return env.program(env.compile(cel))


def object_ready(obj: Obj, remote: Obj) -> bool:
    """An Object's Ready as provider-kubernetes derives it from its readiness policy."""
    policy = obj["spec"].get("readiness") or {"policy": "SuccessfulCreate"}  # its default
    if policy["policy"] == "SuccessfulCreate":
        return True
    if policy["policy"] == "DeriveFromCelQuery":
        return evaluate(policy["celQuery"], remote)
    conditions = remote.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
