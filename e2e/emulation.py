"""Crossplane, its API server and the workload clusters' controllers, played once for everyone.

Every offline consumer (the unit, hardening and gRPC tests, the benchmarks,
the render walk and the e2e drivers) needs the same things, and takes
them from here so that they cannot drift apart:

* the function registry: each XR kind with the function its Composition's
  (single) step runs, that function's console script, the XRD and the
  Composition, read from ``apis/``, ``compositions/`` and ``pyproject.toml``;
* the examples: ``examples/**/xr.yaml`` folders with their required and
  observed resources and what they expect;
* Crossplane's side of a call: requirements resolved from what the control
  plane holds (``reconcile``, ``reconcile_example``) and the status it writes
  to an XR from the answer (``xr_status``, ``xr_ready``);
* when to stop: passes run until one changes nothing, and fail at once when
  they oscillate (``until_settled``, the one stop rule of every walk);
* observation: composed resources as Crossplane hands them back on the next
  pass once the controllers acted (``World.observe``: each remote
  controller's status, Gateway addresses, trust-manager ConfigMaps holding
  real PEM certificates, Ready derived from each Object's readiness policy
  as provider-kubernetes does; ``applied`` for a scenario's own answers),
  and Secrets as the API server stores them.
"""

import base64
import copy
import hashlib
import importlib
import json
import re
import tomllib
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import yaml
from celpy.adapter import json_to_cel
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from e2e.pki import KeyPair, ca
from fleetgate.core.runner import Composer, run_composer

Obj = dict[str, Any]

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# The line width the examples' YAML is written with (e2e.example_cas rewrites
# the CAs in them, e2e.snapshots the observed state).
EXAMPLE_WIDTH = 100

COMPOSITION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
# The one time this walk's controllers write: render stamps a fixed time too.
SIMULATED_AT = "2024-01-01T00:00:00Z"
PROVIDER_FINALIZER = "finalizer.managedresource.crossplane.io"
# How this walk's controllers word their conditions (``applied``'s arguments).
SIMULATED: dict[str, Any] = {"reason": "Simulated", "synced": "Simulated", "stamp": SIMULATED_AT}
# Dependency order: each kind reads what the kinds before it publish, so one
# pass usually carries a change all the way through.
KIND_ORDER = [
    "InferenceCluster",
    "InferenceGateway",
    "ModelDeployment",
    "ModelEndpoint",
    "ModelService",
    "ModelRoute",  # composed by a ModelService, one per serving gateway
]


# --- the API server and the workload clusters' controllers ---------------------------


def as_stored(secret: Obj) -> Obj:
    """A Secret as the API server stores it: ``stringData`` folded into base64 ``data``."""
    stored = {k: v for k, v in secret.items() if k != "stringData"}
    data = dict(stored.get("data") or {})
    for k, v in (secret.get("stringData") or {}).items():
        data[k] = base64.b64encode(str(v).encode()).decode()
    stored["data"] = data
    return stored


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
    """

    load_balancers: dict[str, dict[str, str]]
    cas: dict[tuple[str, str], KeyPair] = field(default_factory=dict)

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
        while ``creating``.
        """
        spec = desired.get("spec") or {}
        if desired.get("kind") == "Object" and "forProvider" in spec:
            pc = spec.get("providerConfigRef", {}).get("name", "")
            manifest = patched(
                spec["forProvider"]["manifest"], spec.get("references") or [], control_plane
            )
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
    return _condition(type_, status, "Simulated", SIMULATED_AT)


# --- the function registry ----------------------------------------------------------


@dataclass(frozen=True)
class Function:
    """An XR kind and what serves it, as the repository's files say."""

    kind: str
    name: str  # the Function's name, which is also its console script: compose-...
    script: str  # the console script's target: "fleetgate.<package>.main:cli"
    xrd: Path
    composition: Path
    input: Obj | None = None  # the Composition step's input, sent with every request

    @property
    def compose(self) -> Composer:
        """The function's composer, imported on first use: one that does not import
        fails its own callers only."""
        module = importlib.import_module(self.script.split(":")[0])
        compose: Composer = module.compose
        return compose


@cache
def registry() -> dict[str, Function]:
    """XR kind → the function its Composition's step runs, in ``KIND_ORDER``."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    steps = {}
    for path in sorted((REPO / "compositions").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "Composition":
                steps[doc["spec"]["compositeTypeRef"]["kind"]] = (path, doc["spec"]["pipeline"][0])
    found = {}
    for xrd in sorted((REPO / "apis").glob("*/definition.yaml")):
        kind = yaml.safe_load(xrd.read_text())["spec"]["names"]["kind"]
        composition, step = steps[kind]
        name = step["functionRef"]["name"]
        found[kind] = Function(kind, name, scripts[name], xrd, composition, step.get("input"))
    if sorted(found) != sorted(KIND_ORDER):
        raise RuntimeError(f"KIND_ORDER {KIND_ORDER} does not list the XRDs' kinds {sorted(found)}")
    return {kind: found[kind] for kind in KIND_ORDER}


# --- the examples ---------------------------------------------------------------------


def documents(path: Path) -> list[Obj]:
    """Every document of a YAML file, none when it does not exist."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d] if path.exists() else []


@dataclass(frozen=True)
class Example:
    """An example folder: ``xr.yaml``, and optionally ``required.yaml`` (resources the
    function asks Crossplane for), ``observed.yaml`` (composed resources as they exist)
    and ``expect.yaml`` (what the tests check)."""

    path: Path
    xr_file: str = "xr.yaml"

    @property
    def name(self) -> str:
        inside = self.path.is_relative_to(EXAMPLES)
        return str(self.path.relative_to(EXAMPLES)) if inside else str(self.path)

    @property
    def xr(self) -> Obj:
        data: Obj = yaml.safe_load((self.path / self.xr_file).read_text())
        return data

    @property
    def type(self) -> Function:
        return registry()[self.xr["kind"]]

    def optional(self, filename: str) -> Path | None:
        path = self.path / filename
        return path if path.exists() else None

    @property
    def required(self) -> list[Obj]:
        return documents(self.path / "required.yaml")

    @property
    def observed(self) -> dict[str, Obj]:
        """The observed resources by composition resource name, as Crossplane sends them."""
        return {
            d["metadata"]["annotations"][COMPOSITION_RESOURCE_NAME]: d
            for d in documents(self.path / "observed.yaml")
        }

    @property
    def expect(self) -> Obj:
        path = self.optional("expect.yaml")
        return yaml.safe_load(path.read_text()) if path else {}


def discover(root: Path = EXAMPLES) -> list[Example]:
    return [Example(p.parent) for p in sorted(root.rglob("xr.yaml"))]


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
        found = _condition(c.type, STATUS_NAMES[c.status], c.reason, None)
        if c.message:
            found["message"] = c.message
        if stamp is not None:
            found["lastTransitionTime"] = stamp
        conditions.append(found)
    conditions.append(_condition("Ready", str(xr_ready(rsp)), "Available", stamp))
    if synced:
        conditions.append(_condition("Synced", "True", "ReconcileSuccess", stamp))
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
        _condition("Ready", str(ready), why, stamp),
        _condition("Synced", "True", synced, stamp),
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


def _condition(type_: str, status: str, reason: str, stamp: str | None) -> Obj:
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
            _condition("NamesAccepted", "True", "NoConflicts", SIMULATED_AT),
            _condition("Established", "True", "InitialNamesAccepted", SIMULATED_AT),
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
        found = _condition(type_, str(status), reason, SIMULATED_AT)
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
