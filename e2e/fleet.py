"""Walk a whole fleet from an empty control plane to a routed model, through the real CLI.

Every XR is rendered by ``crossplane render`` with the functions running as
processes. Between passes this module plays the API server and the
controllers, and nothing more: it feeds each XR's composed resources back as
observed resources (Ready, with what real controllers would fill in: a
Gateway address, trust-manager ConfigMaps holding real PEM certificates),
applies each XR's status so the others read it as required resources, adds
the XRs that XRs compose (a ModelDeployment's ModelEndpoints) and deletes the
ones no longer composed. It repeats until nothing changes, and fails loudly
if the fleet does not settle or oscillates.
"""

import base64
import copy
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e import render
from e2e.pki import KeyPair, ca

Obj = dict[str, Any]
XRKey = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name

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
MAX_PASSES = 16


def as_stored(secret: Obj) -> Obj:
    """A Secret as the API server stores it: ``stringData`` folded into base64 ``data``."""
    stored = {k: v for k, v in secret.items() if k != "stringData"}
    data = dict(stored.get("data") or {})
    for k, v in (secret.get("stringData") or {}).items():
        data[k] = base64.b64encode(str(v).encode()).decode()
    stored["data"] = data
    return stored


def key_of(obj: Obj) -> XRKey:
    meta = obj.get("metadata") or {}
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def describe(key: XRKey) -> str:
    kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


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


@dataclass
class PassReport:
    number: int
    rows: list[tuple[str, str, int]]  # XR, conditions, composed count
    changed: bool


@dataclass
class Fleet:
    """The control plane's state: XRs with their status, and what each composed."""

    world: World
    xrs: dict[XRKey, Obj] = field(default_factory=dict)
    secrets: list[Obj] = field(default_factory=list)
    composed: dict[XRKey, dict[str, Obj]] = field(default_factory=dict)  # as observed
    desired: dict[XRKey, dict[str, Obj]] = field(default_factory=dict)  # as the function said
    results: dict[XRKey, list[Obj]] = field(default_factory=dict)  # last pass's warnings
    owner: dict[XRKey, XRKey] = field(default_factory=dict)  # composed XR -> owning XR
    sources: dict[XRKey, Obj] = field(default_factory=dict)  # XRs as applied, for re-applying
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fleet-")))

    @classmethod
    def load(cls, folder: Path) -> "Fleet":
        world_file = folder / "world.yaml"
        world_spec = yaml.safe_load(world_file.read_text()) if world_file.exists() else {}
        fleet = cls(World(load_balancers=world_spec.get("loadBalancers", {})))
        for path in sorted(folder.glob("*.yaml")):
            if path.name == "world.yaml":
                continue
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    fleet.apply(doc)
        return fleet

    def apply(self, obj: Obj) -> None:
        """``kubectl apply``: an XR or a Secret."""
        if obj["kind"] == "Secret":
            self.secrets = [s for s in self.secrets if key_of(s) != key_of(obj)] + [as_stored(obj)]
        else:
            self.xrs[key_of(obj)] = obj
            self.sources[key_of(obj)] = copy.deepcopy(obj)

    def delete(self, key: XRKey) -> None:
        self.xrs.pop(key, None)
        self.composed.pop(key, None)
        self.desired.pop(key, None)
        for child, parent in list(self.owner.items()):
            if parent == key:
                del self.owner[child]
                self.delete(child)

    def delete_secret(self, namespace: str, name: str) -> None:
        self.secrets = [s for s in self.secrets if key_of(s)[1:] != (namespace, name)]

    def ordered(self) -> list[XRKey]:
        return sorted(self.xrs, key=lambda k: (KIND_ORDER.index(k[0]), k[1], k[2]))

    # --- one pass -------------------------------------------------------------

    def bundles(self) -> set[tuple[str, str]]:
        """(provider config, Bundle name) of every trust-manager Bundle composed so far."""
        found = set()
        for resources in self.composed.values():
            for obj in resources.values():
                manifest = obj.get("spec", {}).get("forProvider", {}).get("manifest") or {}
                if manifest.get("kind") == "Bundle":
                    found.add(
                        (obj["spec"]["providerConfigRef"]["name"], manifest["metadata"]["name"])
                    )
        return found

    def render_one(self, key: XRKey, unavailable: Iterable[XRKey] = ()) -> list[Obj]:
        """Render one XR with everything the control plane holds as required resources."""
        hidden = set(unavailable)
        folder = self.workdir / "-".join(key).replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "xr.yaml").write_text(yaml.safe_dump(self.xrs[key]))
        required = [xr for k, xr in sorted(self.xrs.items()) if k not in hidden] + self.secrets
        (folder / "required.yaml").write_text(yaml.safe_dump_all(required))
        observed = list(self.composed.get(key, {}).values())
        observed_file = folder / "observed.yaml"
        if observed:
            observed_file.write_text(yaml.safe_dump_all(observed))
        elif observed_file.exists():
            observed_file.unlink()
        return render.render(render.Example(folder))

    def run_pass(self, number: int, unavailable: Iterable[XRKey] = ()) -> PassReport:
        before = self.state()
        rows = []
        for key in self.ordered():
            if key not in self.xrs:  # deleted earlier in this pass
                continue
            xr, composed, results = render.split(self.render_one(key, unavailable))
            self.results[key] = results
            self._apply_status(key, xr)
            self._apply_composed(key, composed)
            conditions = " ".join(
                f"{c['type']}={c['status']}"
                for c in self.xrs[key].get("status", {}).get("conditions", [])
                if c["type"] not in {"Synced"}
            )
            rows.append((describe(key), conditions, len(self.composed.get(key, {}))))
        return PassReport(number, rows, changed=self.state() != before)

    def _apply_status(self, key: XRKey, rendered_xr: Obj) -> None:
        status = rendered_xr.get("status")
        if status is not None:
            self.xrs[key] = {**self.xrs[key], "status": status}

    def _apply_composed(self, key: XRKey, composed: list[Obj]) -> None:
        bundles = self.bundles()
        now: dict[str, Obj] = {}
        children = set()
        self.desired[key] = {}
        for desired in composed:
            name = desired["metadata"]["annotations"][COMPOSITION_RESOURCE_NAME]
            self.desired[key][name] = desired
            if desired["kind"] in KIND_ORDER:
                child = self._compose_xr(key, desired)
                children.add(child)
                now[name] = self.xrs[child]
            else:
                now[name] = self.world.realise(desired, bundles)
        for child, parent in list(self.owner.items()):
            if parent == key and child not in children:
                del self.owner[child]
                self.delete(child)
        self.composed[key] = now

    def _compose_xr(self, parent: XRKey, desired: Obj) -> XRKey:
        """An XR composed by another: created or updated, its status kept."""
        meta = desired["metadata"]
        obj = {k: v for k, v in desired.items() if k != "status"}
        obj["metadata"] = {k: v for k, v in meta.items() if k not in {"generateName"}}
        obj["metadata"].setdefault("name", self.world._generated_name(desired))
        obj["metadata"].setdefault("namespace", parent[1])
        child = key_of(obj)
        if child in self.xrs and "status" in self.xrs[child]:
            obj["status"] = self.xrs[child]["status"]
        self.xrs[child] = obj
        self.owner[child] = parent
        return child

    def state(self) -> str:
        return fingerprint(
            {
                "xrs": {"|".join(k): v for k, v in self.xrs.items()},
                "composed": {"|".join(k): v for k, v in self.composed.items()},
            }
        )

    def converge(
        self,
        *,
        unavailable: Iterable[XRKey] = (),
        max_passes: int = MAX_PASSES,
        echo: bool = False,
        start: int = 1,
    ) -> list[PassReport]:
        """Run passes until nothing changes; raise if it never settles or oscillates."""
        seen: list[str] = [self.state()]
        reports = []
        for number in range(start, start + max_passes):
            report = self.run_pass(number, unavailable)
            reports.append(report)
            if echo:
                print_pass(report)
            state = self.state()
            if not report.changed:
                return reports
            if state in seen[:-1]:
                raise RuntimeError(
                    f"the fleet oscillates: pass {number} returned to an earlier state"
                )
            seen.append(state)
        raise RuntimeError(f"the fleet did not settle in {max_passes} passes")

    # --- reading the result -------------------------------------------------------

    def remote(self, key: XRKey) -> list[Obj]:
        """Every remote manifest an XR composed (through Objects)."""
        out = []
        for obj in self.composed.get(key, {}).values():
            manifest = obj.get("spec", {}).get("forProvider", {}).get("manifest")
            if obj.get("kind") == "Object" and manifest:
                out.append(
                    {**manifest, "_providerConfig": obj["spec"]["providerConfigRef"]["name"]}
                )
        return out

    def everything(self) -> list[Obj]:
        """Every XR and every composed resource, for validation and secret searches."""
        return [*self.xrs.values(), *(o for res in self.composed.values() for o in res.values())]


def print_pass(report: PassReport) -> None:
    print(f"-- pass {report.number}{'' if report.changed else ' (settled)'}")
    width = max((len(r[0]) for r in report.rows), default=10)
    for xr, conditions, count in report.rows:
        print(f"   {xr:<{width}}  {count:>3} composed  {conditions}")
