"""Faults nobody chose, on the converged fleet: processes die, a cluster's API server goes
away, Fleetgate's packages are upgraded and rolled back, the control plane's storage
restarts (issue 34).

Each fault starts from the converged fleet and ends converged. Around it:

* before and after, every composed object on the control plane (XRs, Objects)
  and every remote object on the workload clusters, by uid: none may be gone,
  and none made again (a new uid);
* every second while it lasts and until the fleet converged again, the
  routing table the reachable workload clusters hold: no route withdrawn, no
  backend lost;
* afterwards, the secret search over the whole control plane.

Each fault makes a change while it lasts or right after, as a team would go
on working: it must land, and is undone, so the fault ends with every XR's
spec as examples/fleet applied it. After an API server was away, a workload
cluster's process that exited is started again, and Envoy Gateway, which
keeps running with its provider stopped once it lost its leader lease, is
restarted when its liveness probe fails, as its kubelet would; the run says
which.
"""

import dataclasses
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.driver import Ref
from e2e.fleet import XRKey
from e2e.realplane import secretdrills
from e2e.realplane.realdriver import ControlPlane
from fleetgate.core import reachability
from fleetgate.core.constants import SYSTEM_NAMESPACE
from package import build
from plane import calls, controlplane, envoygateway, packages
from plane.clusters import Cluster
from plane.kube import ApiError, condition, wait_for
from plane.processes import Process, Supervisor
from plane.stack import Stack
from schemas import xrds
from sim import catalog

REPO = Path(__file__).resolve().parents[2]
SAMPLE_S = 1.0
CONVERGE_TIMEOUT_S = 300.0
LAND_TIMEOUT_S = 240.0
RESTART_TIMEOUT_S = 60.0
# The workload cluster whose API server goes away: it holds the internal gateway, and
# the public gateway on eu-west-1 routes to its models (examples/fleet).
SILENT_CLUSTER = "us-east-1"
OUTAGE_S = 180.0
# How long provider-kubernetes may take to say the cluster is gone once an Object there
# changes (it learns it only by reconciling one: a change, or its 10-minute poll).
NOTICE_TIMEOUT_S = 120.0
# The kubelet's default failureThreshold, at a shorter period than the chart's 20s: the
# drill waits on it.
LIVENESS_FAILURES = 3
LIVENESS_PERIOD_S = 2.0
PUBLIC_CHAT: XRKey = ("ModelService", "team-a", "chat")
INTERNAL_GATEWAY: XRKey = ("InferenceGateway", "", "internal")
# Each gateway of examples/fleet and the workload cluster it runs on.
GATEWAYS = {("InferenceGateway", "", "public"): "eu-west-1", INTERNAL_GATEWAY: SILENT_CLUSTER}
DEFAULT_RETRIES = xrds.field("InferenceGateway", "spec.failover.retries")["default"]
PROMETHEUS_RULE = ("monitoring.coreos.com/v1", "PrometheusRule")

RouteTable = dict[tuple[str, str], frozenset[str]]  # (cluster, AIGatewayRoute) → hostnames


@dataclass
class Plane:
    """What a fault acts on: the processes, the stack (package runtime, registry,
    Crossplane), the controlplane."""

    sup: Supervisor
    stack: Stack
    driver: ControlPlane
    needles: dict[str, str]
    said: list[str] = field(default_factory=list)  # what the fault saw, to print
    ended_at: float | None = None  # when the fault was over (the process back)

    def say(self, line: str) -> None:
        self.said.append(line)

    def ended(self) -> None:
        self.ended_at = time.monotonic()


@dataclass(frozen=True)
class Fault:
    name: str
    # Inflicts the fault and returns once it is over (the process back); problems it saw.
    act: Callable[[Plane], list[str]]
    # A workload cluster whose routes cannot be read while it lasts.
    silent: str = ""


@dataclass(frozen=True)
class Outcome:
    fault: str
    seconds: float  # from the end of the fault until its changes landed and all converged
    problems: list[str]
    said: list[str]
    samples: int  # routing tables read while it lasted
    unread: int  # reads an API server did not answer (it or its etcd restarting)


def table(driver: ControlPlane, skip: str = "") -> RouteTable:
    """Each route's hostnames, as the workload clusters but ``skip`` hold them."""
    reachable = dataclasses.replace(
        driver, workloads={n: c for n, c in driver.workloads.items() if n != skip}
    )
    return {(r.cluster, r.name): frozenset(r.hostnames()) for r in reachable.routes()}


def uids(driver: ControlPlane) -> dict[Ref, str]:
    """Every composed object on the control plane and every remote one, by uid."""
    return {ref: identity.split(":", 1)[0] for ref, identity in driver.held().items()}


def _specs(driver: ControlPlane) -> dict[XRKey, Any]:
    """Every XR's spec: a change a fault made while it lasted is undone by its end."""
    return {key: xr.get("spec") for key, xr in driver.xrs().items()}


class Sampler(threading.Thread):
    """The routing table every second: each route held before, with every backend."""

    def __init__(self, driver: ControlPlane, before: RouteTable) -> None:
        super().__init__(daemon=True, name="fault-sampler")
        self.driver, self.before = driver, before
        self.skip = ""  # a cluster not to read (its API server is away)
        self.start_at = time.monotonic()
        self.done = threading.Event()
        self.samples = 0
        self.unread = 0
        self.problems: dict[str, float] = {}  # problem → first seen, seconds in

    def run(self) -> None:
        while not self.done.wait(SAMPLE_S):
            skip = self.skip
            try:
                now = table(self.driver, skip)
            except (ApiError, OSError):  # a restarting API server or etcd: nothing to judge
                self.unread += 1
                continue
            self.samples += 1
            at = time.monotonic() - self.start_at
            for key, hostnames in self.before.items():
                if key[0] == skip:
                    continue
                if key not in now:
                    problem = f"route {key[1]} on {key[0]} withdrawn"
                elif lost := hostnames - now[key]:
                    problem = f"route {key[1]} on {key[0]} lost {', '.join(sorted(lost))}"
                else:
                    continue
                self.problems.setdefault(problem, at)

    def stop(self) -> list[str]:
        self.done.set()
        self.join()
        return [f"{at:.0f}s in: {p}" for p, at in sorted(self.problems.items(), key=lambda i: i[1])]


def endure(fault: Fault, plane: Plane) -> Outcome:
    """Inflict ``fault`` on the converged fleet and judge what it did (module docstring)."""
    driver = plane.driver
    plane.said, plane.ended_at = [], None
    before, routes, specs = uids(driver), table(driver), _specs(driver)
    sampler = Sampler(driver, routes)
    sampler.skip = fault.silent
    sampler.start()
    controlplane.converge(driver.cp, CONVERGE_TIMEOUT_S, echo=False)  # where every fault starts
    problems = fault.act(plane)
    sampler.skip = ""
    over = plane.ended_at or time.monotonic()
    try:
        controlplane.converge(driver.cp, CONVERGE_TIMEOUT_S, echo=False)
    except TimeoutError as err:
        problems.append(str(err))
    seconds = time.monotonic() - over
    problems += sampler.stop()
    after = wait_for("every object to read again", lambda: uids(driver), RESTART_TIMEOUT_S)
    for ref, uid in sorted(before.items()):
        where = ref.cluster or "the control plane"
        if ref not in after:
            problems.append(f"{ref.kind} {ref.namespace}/{ref.name} on {where} is gone")
        elif after[ref] != uid:
            problems.append(f"{ref.kind} {ref.namespace}/{ref.name} on {where} was made again")
    now = wait_for("the routes to read again", lambda: table(driver), RESTART_TIMEOUT_S)
    problems += [
        f"route {k[1]} on {k[0]} differs after the fault" for k in routes if now.get(k) != routes[k]
    ]
    now_specs = _specs(driver)
    problems += [
        f"{k[0]} {k[2]}'s spec differs after the fault"
        for k in specs
        if now_specs.get(k) != specs[k]
    ]
    problems += controlplane.secrets_at_rest(driver.cp, plane.needles)
    return Outcome(fault.name, seconds, problems, plane.said, sampler.samples, sampler.unread)


# --- the faults ---------------------------------------------------------------------


def _kill(proc: Process, sig: signal.Signals) -> None:
    os.killpg(proc.popen.pid, sig)
    proc.popen.wait()


def _restarted(plane: Plane, killed: dict[str, Process]) -> None:
    """Wait until the package runtime runs each revision in ``killed`` again."""

    def back() -> bool:
        return all(
            plane.stack.runtime.started[rev] is not proc
            and plane.stack.runtime.started[rev].popen.poll() is None
            for rev, proc in killed.items()
        )

    wait_for("the package runtime to start the killed processes again", back, RESTART_TIMEOUT_S)


def _runtime_processes(plane: Plane, prefix: str) -> dict[str, Process]:
    return {rev: p for rev, p in plane.stack.runtime.started.items() if p.name.startswith(prefix)}


def _lands(plane: Plane, what: str, cluster: str, kind: tuple[str, str], text: str) -> None:
    """Wait until an object of ``kind`` on ``cluster`` holds ``text``: the change landed."""
    kube = plane.driver.workloads[cluster].admin

    def landed() -> bool:
        return any(text in json.dumps(o) for o in kube.list(*kind, SYSTEM_NAMESPACE))

    start = time.monotonic()
    wait_for(f"{what} to reach {cluster}", landed, LAND_TIMEOUT_S)
    plane.say(f"{what}: on {cluster} after {time.monotonic() - start:.0f}s")


def _alert_threshold(plane: Plane, threshold: str | None) -> Callable[[], None]:
    """Change team-a/chat's failover alert threshold (None: back to examples/fleet's), as
    its team would; the wait for the change to reach the PrometheusRule on the public
    gateway's cluster."""
    if threshold is None:
        threshold = plane.driver.source(PUBLIC_CHAT)["spec"]["failoverAlert"]["threshold"]
    plane.driver.patch_spec(PUBLIC_CHAT, {"failoverAlert": {"threshold": threshold}})
    return lambda: _lands(
        plane,
        f"the failover alert threshold {threshold}",
        "eu-west-1",
        PROMETHEUS_RULE,
        f'> {threshold}"',  # the end of the alert's expression
    )


def _alert_threshold_changes(plane: Plane, threshold: str) -> None:
    """A change right after a fault, which must land; then back, so the fault ends with
    the fleet as applied."""
    _alert_threshold(plane, threshold)()
    _alert_threshold(plane, None)()


def _gateway_retries(plane: Plane, gateway: XRKey, retries: int | None) -> Callable[[], None]:
    """Set a gateway's retries (None: back to examples/fleet's), as its platform team
    would; the wait for its failover BackendTrafficPolicy to carry them. Envoy Gateway
    must accept the new policy before the gateway is Ready again: the fleet converges only
    once the controller on its cluster works."""
    applied = (plane.driver.source(gateway)["spec"].get("failover") or {}).get("retries")
    # None removes the field: the XRD's default, as for a gateway that never set it.
    wanted = applied if retries is None else retries
    plane.driver.patch_spec(gateway, {"failover": {"retries": wanted}})
    expected = DEFAULT_RETRIES if wanted is None else wanted
    return lambda: _lands(
        plane,
        f"{gateway[2]} gateway's retries {expected}",
        GATEWAYS[gateway],
        ("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy"),
        f'"numRetries": {expected}',
    )


def functions_killed(plane: Plane) -> list[str]:
    """A change, and every function process killed (SIGKILL) before it could be composed."""
    lands = _alert_threshold(plane, "0.12")
    killed = _runtime_processes(plane, "function-")
    for proc in killed.values():
        _kill(proc, signal.SIGKILL)
    plane.say(f"killed {len(killed)} function processes right after a change to team-a/chat")
    _restarted(plane, killed)
    plane.ended()
    lands()
    _alert_threshold(plane, None)()
    return []


def provider_restarted(plane: Plane) -> list[str]:
    """provider-kubernetes stopped as a deleted pod is (SIGTERM) and started again; a watch
    on every Object sees each version written meanwhile, none with a Secret value."""
    versions = secretdrills.Versions(plane.driver.cp, "")
    versions.start()
    stopped = _runtime_processes(plane, "provider-")
    for proc in stopped.values():
        _kill(proc, signal.SIGTERM)
    _restarted(plane, stopped)
    plane.ended()
    _alert_threshold_changes(plane, "0.13")
    controlplane.converge(plane.driver.cp, CONVERGE_TIMEOUT_S, echo=False)
    return versions.holding(plane.needles, "while provider-kubernetes restarted")


# The packages again, carrying another version (make upgrade-packages, before the control
# plane starts: its network namespace reaches no package index).
UPGRADE_TO = os.environ.get("UPGRADE_VERSION", "v0.1.1")
UPGRADE_DIST = REPO / os.environ.get("UPGRADE_DIST", ".cache/package-upgrade")
UPGRADE_TIMEOUT_S = 300.0


def packages_upgraded(plane: Plane) -> list[str]:
    """Fleetgate's packages built again as UPGRADE_TO (the version they carry is the
    change: make upgrade-packages), pushed, and installed as a platform team upgrades
    (packages.upgrade); every XR reconciled through the new functions; then rolled back
    the same way."""
    cp = plane.driver.cp
    pushed = packages.publish_fleetgate(plane.stack.registry, plane.stack.registry_ca, UPGRADE_DIST)
    if pushed != UPGRADE_TO:
        return [f"{UPGRADE_DIST} holds {pushed}, not {UPGRADE_TO}: run make upgrade-packages"]
    plane.say(f"pushed the packages of {UPGRADE_TO} (make upgrade-packages)")
    for version in (UPGRADE_TO, build.project_version()):
        start = time.monotonic()
        packages.upgrade(cp, version)
        wait_for(
            f"every Fleetgate package's active revision to be {version}, healthy",
            lambda version=version: packages.running(cp, version),
            UPGRADE_TIMEOUT_S,
            interval=2.0,
        )
        plane.say(
            f"every Function and the Configuration on {version} "
            f"after {time.monotonic() - start:.0f}s"
        )
        _every_xr_reconciles(plane, version)
    plane.ended()
    _alert_threshold_changes(plane, "0.15")
    return []


def _every_xr_reconciles(plane: Plane, version: str) -> None:
    """Ask every XR to reconcile (an annotation, as kubectl annotate writes it) and wait until
    Crossplane has called each function at least once per XR it composes, by its own count
    (plane/calls.py): with one step per Composition, each reconcile is a call."""
    cp = plane.driver.cp
    port = plane.stack.crossplane.metrics_port
    function_of = _function_per_kind()
    wanted: dict[str, int] = {}
    before = calls.scrape(port)
    for xr in controlplane.xrs(cp):
        if xr["kind"] == "ModelRoute":  # only Crossplane may write one (modelroute-guard)
            continue
        meta = xr["metadata"]
        note = {"metadata": {"annotations": {"fleetgate.dev/e2e-upgrade": version}}}
        cp.admin.merge_patch(
            controlplane.API, xr["kind"], meta["name"], meta.get("namespace", ""), note
        )
        name = function_of[xr["kind"]]
        wanted[name] = wanted.get(name, 0) + 1

    def reconciled() -> bool:
        now = calls.scrape(port)
        return all(now.get(f, 0) - before.get(f, 0) >= n for f, n in wanted.items())

    wait_for(
        f"every XR to reconcile through the {version} functions", reconciled, CONVERGE_TIMEOUT_S
    )
    plane.say(
        f"every XR reconciled on {version}: "
        + ", ".join(f"{f} ≥ {n}" for f, n in sorted(wanted.items()))
    )


def _function_per_kind() -> dict[str, str]:
    """XR kind → the Function object its Composition's pipeline calls, as packaged."""
    packaged = build.function_references(f"{packages.UPSTREAM}/fleetgate")
    return {kind: packaged[fn.name] for kind, fn in catalog.registry().items()}


def _unreachable_reports(plane: Plane) -> dict[str, str]:
    """Each XR's ClusterReachable False message, by XR."""
    found = {}
    for xr in controlplane.xrs(plane.driver.cp):
        cond = condition(xr, reachability.CONDITION) or {}
        if cond.get("status") == "False":
            found[controlplane.name_of(xr)] = str(cond.get("message", ""))
    return found


def api_server_away(plane: Plane) -> list[str]:
    """The silent cluster's API server stopped for OUTAGE_S, its data kept in etcd; a change
    to its gateway made meanwhile. What the XRs say of it, and that the change lands."""
    problems = []
    cluster = plane.driver.workloads[SILENT_CLUSTER]
    start = time.monotonic()
    plane.sup.pause(f"{SILENT_CLUSTER}-kube-apiserver")
    lands = _gateway_retries(plane, INTERNAL_GATEWAY, 5)
    try:
        reports = wait_for(
            f"an XR to report {reachability.CONDITION} False",
            lambda: _unreachable_reports(plane),
            NOTICE_TIMEOUT_S,
            interval=2.0,
        )
        plane.say(f"reported after {time.monotonic() - start:.0f}s:")
        for xr, message in sorted(reports.items()):
            plane.say(f"  {xr}: {reachability.CONDITION} False: {message}")
            if f"cluster {SILENT_CLUSTER} " not in message or "eu-west-1" in message:
                problems.append(f"{xr} blames the wrong cluster: {message}")
    except TimeoutError as err:
        problems.append(str(err))
    time.sleep(max(0.0, start + OUTAGE_S - time.monotonic()))
    plane.sup.resume(f"{SILENT_CLUSTER}-kube-apiserver")
    _serving(plane, [cluster])
    plane.ended()
    plane.say(f"{SILENT_CLUSTER}'s API server back after {time.monotonic() - start:.0f}s")
    lands()
    controlplane.converge(plane.driver.cp, CONVERGE_TIMEOUT_S, echo=False)
    _gateway_retries(plane, INTERNAL_GATEWAY, None)()
    try:
        wait_for(
            f"every XR to stop reporting {reachability.CONDITION} False",
            lambda: not _unreachable_reports(plane),
            CONVERGE_TIMEOUT_S,
            interval=2.0,
        )
    except TimeoutError as err:
        problems.append(f"{err}: {_unreachable_reports(plane)}")
    return problems


def crossplane_restarted(plane: Plane) -> list[str]:
    """Crossplane stopped (SIGTERM) and started again; a change made after it is composed."""
    plane.sup.restart("crossplane")
    plane.ended()
    _alert_threshold_changes(plane, "0.14")
    return []


def etcd_restarted(plane: Plane) -> list[str]:
    """etcd stopped and started again on its data: every API server loses its storage."""
    plane.sup.restart("etcd")
    _serving(plane, [plane.driver.cp, *plane.driver.workloads.values()])
    plane.ended()
    # Both Envoy Gateways judge a change after it; then back to examples/fleet's values.
    for gateway in GATEWAYS:
        _gateway_retries(plane, gateway, 4)()
    controlplane.converge(plane.driver.cp, CONVERGE_TIMEOUT_S, echo=False)
    for gateway in GATEWAYS:
        _gateway_retries(plane, gateway, None)()
    return []


def _serving(plane: Plane, clusters: list[Cluster]) -> None:
    """Wait until each of ``clusters`` serves reads again, then start what exited meanwhile."""
    # The built-in kinds come first; a CRD's storage answers 429 "storage is
    # (re)initializing" for a while after: wait until the routes read.
    wait_for(
        f"the API servers of {', '.join(c.name for c in clusters)} to serve again",
        lambda: all(c.admin.list("v1", "Namespace") for c in clusters) and table(plane.driver),
        RESTART_TIMEOUT_S,
    )
    revived = plane.sup.revive()
    if revived:
        plane.say(f"exited meanwhile, started again as a kubelet would: {', '.join(revived)}")
    for cluster in clusters:
        if cluster.name in plane.driver.workloads and not _live(plane, cluster.name):
            plane.sup.restart(f"{cluster.name}-envoy-gateway")
            plane.say(
                f"Envoy Gateway on {cluster.name} failed its liveness probe (its provider "
                "stopped on a lost leader lease): restarted, as the kubelet would"
            )


def _live(plane: Plane, cluster: str) -> bool:
    """Envoy Gateway's liveness as the kubelet judges it: dead after LIVENESS_FAILURES
    probes in a row fail (the chart sets no failureThreshold: the kubelet's default)."""
    for attempt in range(LIVENESS_FAILURES):
        if envoygateway.live(plane.sup, cluster):
            return True
        if attempt + 1 < LIVENESS_FAILURES:
            time.sleep(LIVENESS_PERIOD_S)
    return False


FAULTS = [
    Fault("function processes killed during a change", functions_killed),
    Fault("provider-kubernetes restarted", provider_restarted),
    Fault(
        f"{SILENT_CLUSTER}'s API server away for {OUTAGE_S:.0f}s", api_server_away, SILENT_CLUSTER
    ),
    Fault(f"Fleetgate upgraded to {UPGRADE_TO} and rolled back", packages_upgraded),
    Fault("Crossplane restarted", crossplane_restarted),
    Fault("etcd restarted, its data kept", etcd_restarted),
]
