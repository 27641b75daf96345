"""Walk a whole fleet from an empty control plane to a routed model, through the real CLI.

Every XR is rendered by ``crossplane render`` with the functions running as
processes. A pass steps each XR's ``sim.loop.Walk`` once, in ``KIND_ORDER``,
so the controllers' part is the one every offline walk shares: each XR's
composed resources observed (Ready, with what real controllers would fill
in: a Gateway address, trust-manager ConfigMaps holding real PEM
certificates) and its status applied, so that the others read it as
required resources. Around it this module plays the API server: it adds the
XRs that XRs compose (a ModelDeployment's ModelEndpoints) and deletes the
ones no longer composed. Passes repeat until nothing changes
(``sim.loop.until_settled``), and fail loudly if the fleet does not settle or
oscillates.
"""

import copy
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e import render
from fleetgate.core.secrets import is_holder
from sim import catalog, controllers, loop
from sim.catalog import COMPOSITION_RESOURCE_NAME, EXAMPLES, KIND_ORDER
from sim.controllers import World, as_stored, generated_name
from sim.loop import fingerprint

Obj = dict[str, Any]
XRKey = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name

MAX_PASSES = 16
EXAMPLE = EXAMPLES / "fleet"  # the example fleet, as docs/real-plane.md applies it


def key_of(obj: Obj) -> XRKey:
    meta = obj.get("metadata") or {}
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def describe(key: XRKey) -> str:
    kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


@dataclass
class PassReport:
    number: int
    rows: list[tuple[str, str, int]]  # XR, conditions, composed count
    changed: bool
    state: str  # the fleet's fingerprint after the pass (Fleet.state)


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
    def load(cls, folder: Path = EXAMPLE) -> "Fleet":
        """The fleet ``kubectl apply -f <folder>/`` applies, in the world beside it."""
        fleet = cls(load_world(folder))
        for doc in documents(folder):
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
        return controllers.bundles_of(o for res in self.composed.values() for o in res.values())

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
        return render.render(catalog.Example(folder))

    def run_pass(self, number: int, unavailable: Iterable[XRKey] = ()) -> PassReport:
        before = self.state()
        rows = []
        for key in self.ordered():
            if key not in self.xrs:  # deleted earlier in this pass
                continue
            self.reconcile(key, unavailable)
            conditions = " ".join(
                f"{c['type']}={c['status']}"
                for c in self.xrs[key].get("status", {}).get("conditions", [])
                if c["type"] not in {"Synced"}
            )
            rows.append((describe(key), conditions, len(self.composed.get(key, {}))))
        after = self.state()
        return PassReport(number, rows, changed=after != before, state=after)

    def reconcile(self, key: XRKey, unavailable: Iterable[XRKey] = ()) -> None:
        """One pass of one XR: a step of its ``sim.loop.Walk``, answered by ``render_one``.

        The walk is taken up from the fleet's records and written back to
        them, as Crossplane reads an XR and its composed resources from the
        API server on every reconcile: the records are what the drills and
        tests read and edit between passes. ``render_one`` renders from those
        same records, which are what the walk was given.
        """
        walk = loop.Walk(
            self.xrs[key],
            lambda _xr, _observed: render.split(self.render_one(key, unavailable)),
            lambda _xr, answer, _was: self._observe(key, answer),
            with_status,
            observed=self.composed.get(key, {}),
        )
        answer = walk.step()
        self.results[key] = answer.results
        self.xrs[key], self.composed[key] = walk.xr, walk.observed

    def _observe(self, key: XRKey, answer: render.Rendered) -> dict[str, Obj]:
        """What the controllers make of an XR's desired resources (``World.observe``); the
        API server's part too: the XRs it composes created or updated, and those it no
        longer composes deleted with what they composed."""
        desired = {
            d["metadata"]["annotations"][COMPOSITION_RESOURCE_NAME]: d for d in answer.composed
        }
        children = set()

        def composite(name: str, xr: Obj) -> Obj:
            child = self._compose_xr(key, name, xr)
            children.add(child)
            return self.xrs[child]

        self.desired[key] = desired
        observed = self.world.observe(
            desired,
            owner=key[2],
            bundles=self.bundles(),
            control_plane=self.secrets,
            composite=composite,
        )
        for child, parent in list(self.owner.items()):
            if parent == key and child not in children:
                del self.owner[child]
                self.delete(child)
        return observed

    def _compose_xr(self, parent: XRKey, name: str, desired: Obj) -> XRKey:
        """An XR composed by another: created or updated, its status kept."""
        meta = desired["metadata"]
        obj = {k: v for k, v in desired.items() if k != "status"}
        obj["metadata"] = {k: v for k, v in meta.items() if k not in {"generateName"}}
        obj["metadata"].setdefault("name", generated_name(name, desired, parent[2]))
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
        reports = []

        def run_pass(number: int) -> str:
            reports.append(self.run_pass(number, unavailable))
            if echo:
                print_pass(reports[-1])
            return reports[-1].state

        loop.until_settled(
            run_pass, self.state(), max_passes=max_passes, what="the fleet", start=start
        )
        return reports

    # --- reading the result -------------------------------------------------------

    def remote(self, key: XRKey) -> list[Obj]:
        """Every remote manifest an XR composed (through Objects), each once."""
        out = []
        for obj in self.composed.get(key, {}).values():
            manifest = placed(obj)
            if manifest is not None:
                out.append(
                    {**manifest, "_providerConfig": obj["spec"]["providerConfigRef"]["name"]}
                )
        return out

    def everything(self) -> list[Obj]:
        """Every XR and every composed resource, for validation and secret searches."""
        return [*self.xrs.values(), *(o for res in self.composed.values() for o in res.values())]


def with_status(xr: Obj, answer: render.Rendered) -> Obj:
    """The XR with the status Crossplane writes back from its rendered answer, if any."""
    status = answer.xr.get("status")
    return xr if status is None else {**xr, "status": status}


def print_pass(report: PassReport) -> None:
    print(f"-- pass {report.number}{'' if report.changed else ' (settled)'}")
    width = max((len(r[0]) for r in report.rows), default=10)
    for xr, conditions, count in report.rows:
        print(f"   {xr:<{width}}  {count:>3} composed  {conditions}")


def placed(obj: Obj) -> Obj | None:
    """The manifest an Object places on its cluster; None for anything else.

    A projected Secret's holder places nothing of its own: the Secret holds
    what its filler writes.
    """
    if obj.get("kind") != "Object" or is_holder(obj):
        return None
    manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
    return manifest or None


# What the stand-ins' simulated clouds hand out for a fleet, beside it in a
# folder of its own: not a Kubernetes object, so out of ``kubectl apply -f <fleet>/``
# (which reads no subfolder).
WORLD_FILE = Path("world") / "world.yaml"


def documents(folder: Path = EXAMPLE) -> list[Obj]:
    """What ``kubectl apply -f <folder>/`` applies (it reads no subfolder): every
    document of its YAML files, Secrets first, in file order otherwise."""
    docs = [
        doc
        for path in sorted(folder.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    return sorted(docs, key=lambda d: d["kind"] != "Secret")


def load_world(folder: Path = EXAMPLE) -> World:
    path = folder / WORLD_FILE
    spec = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    return World(load_balancers=spec.get("loadBalancers", {}))
