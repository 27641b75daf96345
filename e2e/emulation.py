"""Crossplane, its API server and the workload clusters' controllers, played once for everyone.

Every offline consumer (the unit, hardening and gRPC tests, the benchmarks,
the render walk and the e2e drivers) needs the same three things, and takes
them from here so that they cannot drift apart:

* the function registry: each XR kind with the function its Composition's
  (single) step runs, that function's console script, the XRD and the
  Composition, read from ``apis/``, ``compositions/`` and ``pyproject.toml``;
* the examples: ``examples/**/xr.yaml`` folders with their required and
  observed resources and what they expect;
* observation: a composed resource as Crossplane hands it back on the next
  pass once the controllers acted (``World.realise``: Ready, Gateway
  addresses, trust-manager ConfigMaps holding real PEM certificates, each
  remote controller's status), and Secrets as the API server stores them.
"""

import base64
import copy
import hashlib
import importlib
import json
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from e2e.pki import KeyPair, ca
from fleetgate.core.runner import Composer

Obj = dict[str, Any]

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

COMPOSITION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
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


def as_stored(secret: Obj) -> Obj:
    """A Secret as the API server stores it: ``stringData`` folded into base64 ``data``."""
    stored = {k: v for k, v in secret.items() if k != "stringData"}
    data = dict(stored.get("data") or {})
    for k, v in (secret.get("stringData") or {}).items():
        data[k] = base64.b64encode(str(v).encode()).decode()
    stored["data"] = data
    return stored


def without_times(value: Any) -> Any:
    """``value`` without lastTransitionTime: render stamps a fixed time, real servers do not."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "lastTransitionTime"}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def fingerprint(value: Any) -> str:
    return hashlib.sha256(json.dumps(without_times(value), sort_keys=True).encode()).hexdigest()


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

    def realise(self, desired: Obj, bundles: set[tuple[str, str]]) -> Obj:
        """The desired object as Crossplane would observe it once its controllers acted."""
        observed = copy.deepcopy(desired)
        meta = observed.setdefault("metadata", {})
        meta.setdefault("name", self._generated_name(desired))
        if observed["kind"] == "Object" and "forProvider" in observed.get("spec", {}):
            pc = observed["spec"].get("providerConfigRef", {}).get("name", "")
            manifest = self._remote(observed["spec"]["forProvider"]["manifest"], pc, bundles)
            observed["status"] = {
                "atProvider": {"manifest": manifest},
                "conditions": [_cond("Ready"), _cond("Synced")],
            }
        elif observed["kind"] not in KIND_ORDER:
            observed["status"] = {"conditions": [_cond("Ready"), _cond("Synced")]}
        return observed

    def _generated_name(self, desired: Obj) -> str:
        anno = (desired.get("metadata") or {}).get("annotations") or {}
        base = str((desired.get("metadata") or {}).get("generateName", "composed-"))
        suffix = hashlib.sha256(str(anno.get(COMPOSITION_RESOURCE_NAME, "")).encode()).hexdigest()
        return base + suffix[:5]

    def _remote(self, manifest: Obj, provider_config: str, bundles: set[tuple[str, str]]) -> Obj:
        remote = copy.deepcopy(manifest)
        kind = remote.get("kind")
        name = (remote.get("metadata") or {}).get("name", "")
        status: Obj | None = None
        if kind == "Gateway":
            address = self.address(provider_config, name)
            kind_of = (
                "IPAddress"
                if address.replace(".", "").replace(":", "").isalnum()
                and (address[0].isdigit() or ":" in address)
                else "Hostname"
            )
            status = {
                "addresses": [{"type": kind_of, "value": address}],
                "conditions": [_cond("Accepted"), _cond("Programmed")],
            }
        elif kind == "ConfigMap" and (provider_config, name) in bundles and "data" not in remote:
            # trust-manager wrote the Bundle's target; the function only observes it.
            remote["data"] = {"ca.crt": self.ca_for(provider_config, name).cert_pem.decode()}
        elif kind in {"HTTPRoute", "InferencePool"}:
            status = {
                "parents": [
                    {
                        "parentRef": {"name": "parent"},
                        "controllerName": "sim",
                        "conditions": [_cond("Accepted"), _cond("ResolvedRefs")],
                    }
                ]
            }
        elif kind in {"SecurityPolicy", "ClientTrafficPolicy", "BackendTrafficPolicy"}:
            status = {
                "ancestors": [
                    {
                        "ancestorRef": {"name": "parent"},
                        "controllerName": "sim",
                        "conditions": [_cond("Accepted")],
                    }
                ]
            }
        elif kind == "EnvoyPatchPolicy":
            status = {"ancestors": [patch_applied(remote, _simulated)]}
        elif kind == "Deployment":
            replicas = (remote.get("spec") or {}).get("replicas", 1)
            status = {
                "replicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
                "conditions": [_cond("Available"), _cond("Progressing")],
            }
        elif kind == "Bundle":
            status = {"conditions": [_cond("Synced")]}
        elif kind in {"Certificate", "Issuer", "Release"}:
            status = {"conditions": [_cond("Ready")]}
        elif kind in {"Backend", "AIGatewayRoute", "AIServiceBackend", "BackendSecurityPolicy"}:
            status = {"conditions": [_cond("Accepted")]}
        if status is not None:
            remote["status"] = status
        return remote


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
    return {
        "type": type_,
        "status": status,
        "reason": "Simulated",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }


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
