"""Drills that change the fleet's XRs, written once for the offline walk and the real control plane.

Each drill edits the fleet as a user would (through ``Driver``), waits for
what must follow on the workload clusters, lets the fleet converge, and
returns what went wrong (empty when the drill held). They run in order on
one fleet, each leaving it as the next expects: the drained cluster is made
schedulable again.


What "converged" means after each is decided from the documented behaviour
(api.md, README "Behaviour the API contract leaves open"):

* a drain keeps every XR Ready: the drained cluster keeps its gateway and
  hostname (only ``Schedulable`` turns False, reason ``Draining``), and its
  replicas move to the other cluster, which has the GPUs;
* undoing it moves nothing back (placement keeps what runs: no churn), so
  the same clusters keep serving and the drained one is Schedulable again;
"""

from collections.abc import Callable

from e2e.driver import Driver, Route
from e2e.fleet import Obj, XRKey, describe
from fleetgate.core import names

Drill = Callable[[Driver], list[str]]
CLUSTER_LABEL = "fleetgate.dev/cluster"


def _condition(xr: Obj | None, type_: str) -> Obj:
    for cond in ((xr or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def _clusters(driver: Driver) -> list[str]:
    return sorted(k[2] for k in driver.xrs() if k[0] == "InferenceCluster")


def _placements(driver: Driver) -> dict[XRKey, list[tuple[str, int]]]:
    return {
        key: sorted(
            (p["cluster"], int(p["replicas"]))
            for p in (xr.get("status") or {}).get("placements") or []
        )
        for key, xr in driver.xrs().items()
        if key[0] == "ModelDeployment"
    }


# --- a cluster drained ----------------------------------------------------------------


def drain(driver: Driver, prefer: str = "us.east") -> list[str]:
    """A drained cluster leaves every route and the other keeps serving; undone, nothing moves.

    The cluster drained is ``prefer`` when a route sends to it, else one that
    a route sends to: on a real control plane a ModelDeployment may have
    placed all its replicas on whichever cluster turned Schedulable first,
    and draining a cluster that serves nothing would prove nothing.
    """
    routes = driver.routes()
    serving = [c for c in _clusters(driver) if _routed_to(routes, c)]
    if not serving:
        return ["no route sends to any InferenceCluster before the drain"]
    cluster = prefer if prefer in serving else serving[0]
    key: XRKey = ("InferenceCluster", "", cluster)
    driver.note(f"draining InferenceCluster {cluster} (routes send to: {', '.join(serving)})")
    driver.patch_spec(key, {"schedulable": False})
    problems = driver.settle(
        f"InferenceCluster {cluster} drained: no route sends to it, the others serve",
        lambda: _drained(driver, cluster),
    )
    placed = _placements(driver)
    driver.patch_spec(key, {"schedulable": True})
    problems += driver.settle(
        f"InferenceCluster {cluster} schedulable again: nothing moved",
        lambda: _undrained(driver, cluster, placed),
    )
    return problems


def _routed_to(routes: list[Route], cluster: str) -> bool:
    return any(names.cluster_hostname(cluster) in r.hostnames() for r in routes)


def _schedulable(driver: Driver, cluster: str, status: str, reason: str | None) -> list[str]:
    cond = _condition(driver.xrs().get(("InferenceCluster", "", cluster)), "Schedulable")
    if cond.get("status") != status or (reason and cond.get("reason") != reason):
        want = f"{status}{f' ({reason})' if reason else ''}"
        got = f"{cond.get('status', 'absent')} ({cond.get('reason', '')})"
        return [f"InferenceCluster {cluster} is Schedulable={got}, not {want}"]
    return []


def _drained(driver: Driver, cluster: str) -> list[str]:
    problems = _schedulable(driver, cluster, "False", "Draining")
    for other in _clusters(driver):
        if other != cluster:
            problems += _schedulable(driver, other, "True", None)
    label = names.label_value(cluster)
    problems += [
        f"{describe(key)} still publishes an endpoint on {cluster}"
        for key, xr in driver.xrs().items()
        if key[0] == "ModelEndpoint"
        and ((xr.get("metadata") or {}).get("labels") or {}).get(CLUSTER_LABEL) == label
    ]
    problems += [
        f"{describe(key)} still places replicas on {cluster}"
        for key, placed in _placements(driver).items()
        if any(c == cluster for c, _ in placed)
    ]
    drained = names.cluster_hostname(cluster)
    others = {names.cluster_hostname(c) for c in _clusters(driver)} - {drained}
    routes = driver.routes()
    if not routes:
        problems.append("no route is left")
    for route in routes:
        where = f"{describe(route.service)} on {route.gateway}"
        if drained in route.hostnames():
            problems.append(f"{where} still routes to {cluster}")
        if not route.hostnames() & others:
            problems.append(f"{where} lost the other cluster")
    return problems


def _undrained(
    driver: Driver, cluster: str, placed: dict[XRKey, list[tuple[str, int]]]
) -> list[str]:
    problems = _schedulable(driver, cluster, "True", None)
    now = _placements(driver)
    problems += [
        f"{describe(key)} moved replicas: {placed.get(key)} → {now.get(key)}"
        for key in sorted(set(placed) | set(now))
        if placed.get(key) != now.get(key)
    ]
    hosts = {names.cluster_hostname(c) for c in _clusters(driver)}
    problems += [
        f"{describe(r.service)} on {r.gateway} reaches no cluster"
        for r in driver.routes()
        if not r.hostnames() & hosts
    ]
    return problems


DRILLS: dict[str, Drill] = {
    "a drained cluster leaves the routes; the other keeps serving": drain,
}
