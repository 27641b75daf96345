"""Drills that change the fleet's XRs, written once for the offline walk and the real control plane.

Each drill edits the fleet as a user would (through ``Driver``), waits for
what must follow on the workload clusters, lets the fleet converge, and
returns what went wrong (empty when the drill held). They run in order on
one fleet, each leaving it as the next expects: the drained cluster is made
schedulable again and the deleted gateway applied again from examples/fleet;
the ModelService deleted last stays deleted.

What "converged" means after each is decided from the documented behaviour
(api.md, docs/contract.md):

* a drain keeps every XR Ready: the drained cluster keeps its gateway and
  hostname (only ``Schedulable`` turns False, reason ``Draining``), and its
  replicas move to the other cluster, which has the GPUs;
* undoing it moves nothing back (placement keeps what runs: no churn), so
  the same clusters keep serving and the drained one is Schedulable again;
* a deleted gateway leaves a service that only it selected not routed:
  ``RoutingReady=False``, reason ``NoGatewaySelectsService`` ("a gateway
  that selects the service but cannot serve it yet is reported, never
  silently skipped"), and that service is not Ready until the gateway is back.
"""

import tempfile
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from e2e.driver import Driver, Ref, Route, published_client_cas, trust_problems
from e2e.fleet import Obj, XRKey, describe
from fleetgate.core import names
from fleetgate.core.constants import SYSTEM_NAMESPACE as NAMESPACE
from fleetgate.core.kinds.service import FailoverAlert
from fleetgate.core.metrics import COST_RATE
from fleetgate.inference_cluster.stack import EG_NAMESPACE
from fleetgate.model_service.alerts import FAILOVER_ACTIVE, PROMETHEUS_RULE_VERSION
from fleetgate.model_service.naming import Service, alerts_rule_name
from oracles import promtool

Drill = Callable[[Driver], list[str]]
CLUSTER_LABEL = "fleetgate.dev/cluster"
GATEWAY_LABEL = "fleetgate.dev/gateway"  # on each ModelRoute, the gateway it routes on
SHOWN = 8  # objects named in a problem, at most


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


def deployments_per_cluster(driver: Driver) -> dict[str, int]:
    """How many ModelDeployments have a replica on each cluster (what a drain of it moves)."""
    found: dict[str, int] = {}
    for placed in _placements(driver).values():
        for cluster, _ in placed:
            found[cluster] = found.get(cluster, 0) + 1
    return dict(sorted(found.items()))


def _left(what: str, refs: Iterable[object]) -> list[str]:
    found = sorted(str(r) for r in refs)
    if not found:
        return []
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return [f"{what}: {', '.join(found[:SHOWN])}{more}"]


# --- the fleet as applied ---------------------------------------------------------------


def spread(driver: Driver) -> list[str]:
    """Each ModelDeployment's replicas are spread over the clusters it could run on.

    A fleet applied at once must not pack a deployment onto whichever cluster
    turned Schedulable first (placement rule 4: a joining cluster is waited
    for). Could run on: matches the cluster selector and runs the chosen
    provider; the example's clusters have the GPUs for every replica, so
    capacity is left out. Nothing is edited.
    """
    clusters = {k[2]: xr for k, xr in driver.xrs().items() if k[0] == "InferenceCluster"}
    problems = []
    for key, placed in _placements(driver).items():
        xr = driver.xrs()[key]
        selector = ((xr.get("spec") or {}).get("placement") or {}).get("clusterSelector") or {}
        wanted = selector.get("matchLabels") or {}
        provider = ((xr.get("status") or {}).get("provider") or {}).get("name")
        eligible = [
            name
            for name, c in sorted(clusters.items())
            if all(
                ((c.get("metadata") or {}).get("labels") or {}).get(k) == v
                for k, v in wanted.items()
            )
            and provider in ((c.get("spec") or {}).get("providers") or [])
        ]
        counts = dict(placed)
        held = [counts.get(name, 0) for name in eligible]
        if held and max(held) - min(held) > 1:
            shown = ", ".join(f"{n}={counts.get(n, 0)}" for n in eligible)
            problems.append(f"{describe(key)} packed, not spread: {shown}")
    return problems


# --- a cluster drained ----------------------------------------------------------------


def drain(driver: Driver, prefer: str = "us.east") -> list[str]:
    """A drained cluster leaves every route and the other keeps serving; undone, nothing moves.

    The cluster drained is ``prefer`` when a route sends to it, else one that
    a route sends to: draining a cluster that serves nothing would prove
    nothing, and ``spread`` (run before) is where packing is reported.
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


# --- a gateway deleted -----------------------------------------------------------------


def gateway_deleted(driver: Driver, gateway: str = "internal") -> list[str]:
    """Its objects leave its cluster, the clusters stop trusting its CA, its routes go.

    Then it is applied again from examples/fleet and the fleet converges with
    it, so later drills start from the whole fleet.
    """
    key: XRKey = ("InferenceGateway", "", gateway)
    source = driver.source(key)
    ca = published_client_cas(driver.xrs()).get(gateway)
    owned = driver.owned(key)
    served = {r.service for r in driver.routes() if _on(r, gateway)}
    problems = [f"InferenceGateway {gateway} has published no client CA"] if not ca else []
    if not any(ref.cluster for ref in owned):
        problems.append(f"InferenceGateway {gateway} composed nothing onto a cluster")
    if not served:
        problems.append(f"no route is on InferenceGateway {gateway} before its deletion")
    orphaned = {
        s for s in served if not any(r.service == s for r in driver.routes() if not _on(r, gateway))
    }
    driver.delete(key)
    problems += driver.settle(
        f"InferenceGateway {gateway} deleted: its objects gone, its CA untrusted, its routes gone",
        lambda: _gateway_gone(driver, key, owned, ca or "", orphaned),
        tolerate=orphaned,
    )
    driver.apply(source)
    problems += driver.settle(
        f"InferenceGateway {gateway} applied again: trusted, and routing what it routed",
        lambda: _gateway_back(driver, gateway, served),
    )
    return problems


def _on(route: Route, gateway: str) -> bool:
    return route.gateway in {gateway, names.fleet_gateway(gateway)}


def _trust(driver: Driver) -> list[str]:
    return trust_problems(published_client_cas(driver.xrs()), driver.trusted_client_cas())


def left_by_ai_gateway(ref: Ref, gateway: str) -> bool:
    """One of the filter-configuration Secrets AI Gateway v1.1.0 writes for a Gateway into
    its Envoy's namespace (``<gateway>-<namespace>``, and the bundle's index and parts
    under that prefix, internal/controller/secret_name.go:47-78) and never deletes: its
    Gateway controller returns on a Gateway not found (gateway.go:88-95) and the Secrets
    carry no owner. Not Fleetgate's to remove; SECURITY.md says so."""
    return (
        ref.kind == "Secret"
        and ref.namespace == EG_NAMESPACE
        and ref.name.startswith(f"{gateway}-{NAMESPACE}")
    )


def _gateway_gone(
    driver: Driver, key: XRKey, owned: set[Ref], ca: str, orphaned: set[XRKey]
) -> list[str]:
    xrs = driver.xrs()
    problems = [f"{describe(key)} still exists"] if key in xrs else []
    problems += _left(f"still there after {describe(key)} was deleted", driver.held(owned))
    problems += [
        f"InferenceCluster {cluster} still trusts the client CA of deleted {describe(key)}"
        for cluster, bundle in sorted(driver.trusted_client_cas().items())
        if ca and ca.strip() in (bundle or "")
    ]
    problems += _trust(driver)
    # Its CA and client keys included: cert-manager runs with
    # --enable-certificate-owner-ref, so they go with their Certificates and a
    # gateway applied again under the name gets new keys, never the old ones.
    problems += [
        f"{ref} is still named for deleted {describe(key)}"
        for ref, _ in driver.named(names.fleet_gateway(key[2]))
        if not left_by_ai_gateway(ref, names.fleet_gateway(key[2]))
    ]
    problems += [
        f"{describe(r.service)} still has a route on deleted {describe(key)}"
        for r in driver.routes()
        if _on(r, key[2])
    ]
    problems += [
        f"{describe(k)} of deleted {describe(key)} remains"
        f" ({_condition(xr, 'Ready').get('reason', 'not Ready')})"
        for k, xr in sorted(xrs.items())
        if k[0] == "ModelRoute"
        and ((xr.get("metadata") or {}).get("labels") or {}).get(GATEWAY_LABEL)
        == names.label_value(key[2])
    ]
    for service in sorted(orphaned):
        cond = _condition(xrs.get(service), "RoutingReady")
        if (cond.get("status"), cond.get("reason")) != ("False", "NoGatewaySelectsService"):
            problems.append(
                f"{describe(service)} is RoutingReady={cond.get('status', 'absent')} "
                f"({cond.get('reason', '')}), not False (NoGatewaySelectsService)"
            )
    return problems


def _gateway_back(driver: Driver, gateway: str, served: set[XRKey]) -> list[str]:
    problems = _trust(driver)
    if gateway not in published_client_cas(driver.xrs()):
        problems.append(f"InferenceGateway {gateway} has published no client CA again")
    now = {r.service for r in driver.routes() if _on(r, gateway)}
    problems += [
        f"{describe(s)} has no route on InferenceGateway {gateway} again" for s in served - now
    ]
    return problems


# --- a ModelService deleted --------------------------------------------------------------


def service_deleted(
    driver: Driver, namespace: str = "team-a", name: str = "chat-internal"
) -> list[str]:
    """Its ModelRoutes, their Objects and the remote objects go; nothing else is touched."""
    key: XRKey = ("ModelService", namespace, name)
    owned = driver.owned(key)
    problems = []
    if not any(ref.kind == "ModelRoute" for ref in owned):
        problems.append(f"{describe(key)} composed no ModelRoute")
    if not any(ref.cluster for ref in owned):
        problems.append(f"{describe(key)} composed nothing onto a cluster")
    before = _at_rest(driver)
    driver.delete(key)
    problems += driver.settle(
        f"{describe(key)} deleted: its ModelRoutes, Objects and remote objects gone",
        lambda: _service_gone(driver, key, owned),
    )
    after = driver.held()
    touched = [
        ref
        for ref, identity in before.items()
        if ref not in owned
        and (ref.kind, ref.namespace, ref.name) != key
        and after.get(ref) != identity
    ]
    problems += _left(f"changed or gone with {describe(key)}, though not its own", touched)
    return problems


# How many reads of what the fleet holds a baseline may take to find two that agree.
AT_REST_READS = 10


def _at_rest(driver: Driver) -> dict[Ref, str]:
    """What the fleet holds, once two reads a settle apart agree. The last drill's
    changes may still be landing after its fleet converged (a route made anew on a
    gateway is written again as its endpoints join), and a baseline taken then would
    blame them on this drill."""
    held = driver.held()
    for _ in range(AT_REST_READS):
        driver.settle("the fleet at rest", lambda: [])
        now = driver.held()
        if now == held:
            break
        held = now
    return held


def _service_gone(driver: Driver, key: XRKey, owned: set[Ref]) -> list[str]:
    problems = [f"{describe(key)} still exists"] if key in driver.xrs() else []
    problems += _left(f"still there after {describe(key)} was deleted", driver.held(owned))
    problems += [
        f"a route for deleted {describe(key)} remains on {r.gateway}"
        for r in driver.routes()
        if r.service == key
    ]
    return problems


def access_restricted(
    driver: Driver, namespace: str = "team-a", name: str = "chat", public: str = "public"
) -> list[str]:
    """A service's callers narrowed: only they on the gateway with auth, none where there is none.

    Restricting ``chat`` (served by ``public``, which authenticates callers,
    and by ``internal``, which does not) leaves it routed on ``public`` with
    exactly those callers in its policy, accepted by Envoy Gateway (the
    ModelRoute is Ready only once its SecurityPolicy and its rate-limit
    policy are), and withdraws it from ``internal`` (``GatewayWithoutAuth``).
    A caller removed is gone from the policy, a limit narrowed to it goes with
    it; lifting the restriction routes it on both again, with the gateway's
    limits only.
    """
    key: XRKey = ("ModelService", namespace, name)
    problems = []
    # Each limit, and how the routing table reads it back.
    per_caller = ({"requests": 3, "per": "Minute"}, "3 requests/Minute for each caller")
    team_b = (
        {"tokens": 1000, "per": "Day", "callers": ["team-b"]},
        "1000 tokens/Day for each of team-b",
    )
    # team-b's limit goes with team-b.
    for callers, limits in (
        (["team-a", "team-b"], [per_caller, team_b]),
        (["team-a"], [per_caller]),
    ):
        own = [read for _, read in limits]
        driver.patch_spec(
            key, {"access": {"callers": callers, "limits": [limit for limit, _ in limits]}}
        )
        problems += driver.settle(
            f"{describe(key)} restricted to {', '.join(callers)}: only they on {public}, "
            "each within its limits",
            partial(restricted, driver, key, public, tuple(callers), tuple(own)),
            tolerate=[key],
        )
    driver.patch_spec(key, {"access": None})
    problems += driver.settle(
        f"{describe(key)} open again: routed on every gateway selecting it",
        lambda: restricted(driver, key, public, None, ()),
    )
    return problems


def restricted(
    driver: Driver,
    key: XRKey,
    public: str,
    callers: tuple[str, ...] | None,
    own_limits: tuple[str, ...],
) -> list[str]:
    """``key`` routed on ``public`` to exactly ``callers`` (None: to anyone) within
    ``own_limits`` (then the gateway's) and, restricted, on no gateway without auth,
    which its RoutingReady names."""
    found = {r.gateway: r for r in driver.routes() if r.service == key}
    on = {gateway: r.callers for gateway, r in found.items()}
    problems = []
    if on.get(public, ()) != callers:
        problems.append(f"{describe(key)} on {public} allows {on.get(public, 'no route')}")
    limits = found[public].limits if public in found else ()
    shared = tuple(limit for limit in limits if limit.endswith("across the gateway"))
    if limits != (*own_limits, *shared):
        problems.append(f"{describe(key)} on {public} limits {limits}, not {own_limits}")
    open_gateways = sorted(
        g for g, xr in _gateways(driver).items() if not (xr.get("spec") or {}).get("auth")
    )
    routed = sorted(set(on) & set(open_gateways))
    if callers is not None and routed:
        problems.append(f"{describe(key)} is restricted but routed on {', '.join(routed)}")
    routing = _condition(driver.xrs().get(key), "RoutingReady")
    if callers is not None and (
        routing.get("reason") != "GatewayWithoutAuth"
        or not all(g in str(routing.get("message")) for g in open_gateways)
    ):
        problems.append(f"{describe(key)} RoutingReady does not name {open_gateways}: {routing}")
    route = next(
        (
            xr
            for k, xr in driver.xrs().items()
            if k[0] == "ModelRoute"
            and k[1] == key[1]
            and ((xr.get("metadata") or {}).get("labels") or {}).get(GATEWAY_LABEL) == public
            and (xr.get("spec") or {}).get("model") == f"{key[1]}/{key[2]}"
        ),
        None,
    )
    ready = _condition(route, "Ready")
    if ready.get("status") != "True":
        problems.append(f"the ModelRoute of {describe(key)} on {public} is not Ready: {ready}")
    return problems


def _priced(xrs: dict[XRKey, Obj], route: Route) -> bool:
    """Whether a ModelEndpoint the route sends to has a price."""
    return any(
        "pricing" in xrs.get(("ModelEndpoint", route.service[1], b.endpoint), {}).get("spec", {})
        for b in route.backends
    )


def failover_alerts(driver: Driver) -> list[str]:
    """Each route with a fallback or a priced endpoint, on a gateway that asks for
    PrometheusRules, has its rule on the gateway's cluster (with a fallback: the alert at the
    service's threshold; priced: the service's spend), and Prometheus loads it; no other
    route has one. Changes nothing."""
    xrs = driver.xrs()
    gateways = {k[2]: xr for k, xr in xrs.items() if k[0] == "InferenceGateway"}
    problems, checked = [], 0
    for route in driver.routes():
        spec = gateways.get(route.gateway, {}).get("spec") or {}
        monitored = (spec.get("monitoring") or {}).get("prometheusRules") is True
        fallback, priced = len({b.priority for b in route.backends}) > 1, _priced(xrs, route)
        name = alerts_rule_name(Service(route.service[1], route.service[2]), route.gateway)
        ref = Ref(route.cluster, PROMETHEUS_RULE_VERSION, "PrometheusRule", NAMESPACE, name)
        rule = driver.remote(ref)
        wanted = monitored and (fallback or priced)
        if (rule is not None) != wanted:
            why = "composed, though nothing asks for it there" if rule else "missing"
            problems.append(f"{ref}: {why} ({describe(route.service)})")
        if rule is None or not wanted:
            continue
        checked += 1
        rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
        alert = driver.source(route.service)["spec"].get("failoverAlert") or {}
        threshold = alert.get("threshold", FailoverAlert().threshold)
        active = [
            r["expr"].rsplit(" > ", 1)[-1] for r in rules if r.get("alert") == FAILOVER_ACTIVE
        ]
        if active != ([threshold] if fallback else []):
            problems.append(f"{ref}: {FAILOVER_ACTIVE} at {active}, the service's is {threshold}")
        if any(r.get("record") == COST_RATE for r in rules) != priced:
            problems.append(f"{ref}: spend series {'missing' if priced else 'for no price'}")
        with tempfile.TemporaryDirectory() as folder:
            try:
                promtool.check(promtool.rule_file(rule["spec"]["groups"], Path(folder)))
            except AssertionError as refused:
                problems.append(f"{ref}: Prometheus refuses it: {refused}")
    return problems if checked else [*problems, "no route's failover alerts to check"]


def _gateways(driver: Driver) -> dict[str, Obj]:
    return {k[2]: xr for k, xr in driver.xrs().items() if k[0] == "InferenceGateway"}


DRILLS: dict[str, Drill] = {
    "a route with a fallback carries its failover alerts, loadable by Prometheus": (
        failover_alerts
    ),
    "each deployment is spread over the clusters it could run on": spread,
    "a drained cluster leaves the routes; the other keeps serving": drain,
    "a deleted gateway is no longer trusted by the clusters; its objects go": gateway_deleted,
    "only a restricted service's callers reach it, never through a gateway without auth": (
        access_restricted
    ),
    "a deleted ModelService takes its routes and objects, and nothing else": service_deleted,
}
