"""compose-model-deployment: place a model on the fleet and publish where it serves.

The steps, in order:

1. read the deployment, what it recorded last time (its choice and its
   placements) and the Composition's provider catalog;
2. require every InferenceCluster; every ModelDeployment only while replicas
   needing GPUs wait for a place (for the GPUs other deployments use:
   ``placement.needs_capacity``), so a deployment placed in full or without
   GPUs is not woken by every other deployment's write (issue 35);
3. choose the engine and the serving provider (given, recorded, or selected
   by the catalog's rules among the providers the candidate clusters run);
4. check ``spec.provider.overrides`` (deny-list, the provider's roots, strict
   decoding);
5. resolve the engine: served model name first in its env, image, port;
6. place the replicas on clusters;
7. per placed cluster: the provider's workload and an HTTPRoute on the
   cluster gateway, and, once that serves, a ModelEndpoint on the control
   plane;
8. report: status (choice, placements, replicas), Scheduled, ReplicasReady
   (``IncompatibleUpstream`` when a cluster's API server refused a field),
   readiness.

Whatever stops a step (a lookup not answered yet, no runnable choice, a
refused override) keeps everything composed before as it was, and says why.
"""

import datetime
from collections.abc import Sequence
from typing import NamedTuple

from fleetgate.core import names
from fleetgate.core.constants import (
    API_VERSION,
    LABEL_DEPLOYMENT,
    LABEL_PREFIX,
    SYSTEM_NAMESPACE,
)
from fleetgate.core.errors import InputError
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.kinds.deployment import ModelDeployment
from fleetgate.core.objects import remote_object
from fleetgate.core.observed import Observed
from fleetgate.core.reconcile import Reconcile, Selector, dump
from fleetgate.core.verdict import Verdict
from fleetgate.model_deployment import (
    catalog,
    endpoints,
    engine,
    fleet,
    naming,
    overrides,
    placement,
    routing,
    scaler,
    upstream,
)
from fleetgate.model_deployment.providers import PROVIDERS
from fleetgate.model_deployment.providers.base import Provider, RemotePart, Workload
from fleetgate.model_deployment.selection import Choice, choose
from fleetgate.model_deployment.state import DeploymentStatus, gpus_used_by_peers, own_status

CLUSTERS = "clusters"
DEPLOYMENTS = "deployments"
SERVICES = "services"
SCHEDULED = "Scheduled"
REPLICAS_READY = "ReplicasReady"
SCALED_TO_ZERO = "ScaledToZero"
INCOMPATIBLE = "IncompatibleUpstream"
ROUTE_PART = "route"
ENDPOINT_PART = "endpoint"
WAITING = Verdict.no(
    "WaitingForClusters", "waiting for Crossplane to look up InferenceClusters and ModelDeployments"
)
WAITING_FOR_SERVICES = Verdict.no(
    "WaitingForServices",
    "waiting for Crossplane to look up the ModelServices whose demand scales it",
)


class Placed(NamedTuple):
    """How one placed cluster is doing after this pass."""

    cluster: str
    replicas: int  # its placement
    ready: int  # engine replicas ready
    waiting: tuple[str, ...]  # what keeps its endpoint back, empty when published
    endpoint_ready: bool
    refused: tuple[str, ...] = ()  # objects the cluster's API server refused a field of
    notes: tuple[str, ...] = ()  # how the provider took the spec
    running: int | None = None  # replicas its scaler asks for now; None: its placement
    last_request: str | None = None  # when its scaler last saw demand

    @property
    def wanted(self) -> int:
        """Replicas that should run there now."""
        return self.replicas if self.running is None else self.running

    @property
    def asleep(self) -> bool:
        """Scaled to zero on purpose: its engine is where it should be, and its endpoint
        stays, marked asleep."""
        return self.running == 0


def compose(rec: Reconcile) -> None:
    md = rec.composite(ModelDeployment)
    namespace, name = _identity(md)
    previous = own_status(rec.observed_composite)
    rec.set_status(servedModelName=engine.served_model_name(namespace, name))
    offered = catalog.load(rec)

    found = _fleet(rec, md)
    if found is None:
        _hold(rec, md, previous, WAITING)
        return
    by_name, views = found

    selection = choose(
        md.spec, previous, offered, placement.installed(views.values(), _request(md))
    )
    for problem in selection.rule_errors:
        rec.warning(problem, "SelectionRuleError")
    choice = selection.outcome
    if isinstance(choice, Verdict):
        _hold(rec, md, previous, choice)
        return
    provider = PROVIDERS[choice.provider]

    shape = _workload(rec, md, choice, provider)
    if isinstance(shape, Verdict):
        _hold(rec, md, previous, shape)
        return
    rec.set_status(
        engine={"type": choice.engine, "selectedReason": choice.engine_reason},
        provider={"name": choice.provider, "selectedReason": choice.provider_reason},
    )

    refused = {
        c: why
        for c, cluster in by_name.items()
        if (why := _refuses_cluster(md, provider, shape, cluster)) is not None
    }
    request = _request(md, choice)._replace(refused=refused)
    earlier = [(p.cluster, p.replicas) for p in previous.placements]
    if placement.needs_capacity(request, views.values(), earlier):
        used = _gpus_used(rec, md)
        if used is None:
            _hold(rec, md, previous, WAITING)
            return
        views = {n: v._replace(gpus_used=used.get(n, 0)) for n, v in views.items()}
    plan = placement.place(request, views.values(), earlier)
    scaling = _scaling(rec, md, plan.placements, by_name)
    if scaling is None:
        _hold(rec, md, previous, WAITING_FOR_SERVICES)
        return
    placed = [
        _compose_cluster(
            rec,
            md=md,
            cluster=by_name[c],
            view=views[c],
            provider=provider,
            shape=shape,
            replicas=n,
            scaled=scaling.get(c),
        )
        for c, n in plan.placements
    ]
    _report(rec, md, plan, placed)


def _refuses_cluster(
    md: ModelDeployment, provider: Provider, shape: Workload, cluster: InferenceCluster
) -> str | None:
    """Why a new replica may not go to ``cluster``; None when it may."""
    scaling = md.spec.scaling
    if scaling and scaling.min_replicas == 0 and not cluster.spec.stack.metrics.prometheus_address:
        return (
            "spec.stack.metrics.prometheusAddress is not set: a deployment that scales to zero "
            "reads its demand there"
        )
    return provider.refuses_cluster(shape, cluster)


def _scaling(
    rec: Reconcile,
    md: ModelDeployment,
    placements: Sequence[tuple[str, int]],
    clusters: dict[str, InferenceCluster],
) -> dict[str, scaler.Scaled] | None:
    """Each placed cluster's scaler, for a deployment with spec.scaling (none without);
    None until Crossplane looked up the ModelServices whose demand it follows."""
    if md.spec.scaling is None:
        return {}
    namespace, _ = _identity(md)
    services = rec.require_by_name(
        SERVICES, Selector(API_VERSION, "ModelService", namespace=namespace), scaler.RoutingService
    )
    if services is None:
        return None
    spread = scaler.bounds(md.spec.scaling, md.spec.replicas, placements)
    scaled = {}
    for c, n in placements:
        prometheus = clusters[c].spec.stack.metrics.prometheus_address
        if not prometheus:
            # Placed while it had one: a scaler there could read no demand, and one at
            # zero would never wake. Its share runs fixed until the address is back.
            rec.warning(
                f"cluster {c} has no spec.stack.metrics.prometheusAddress: its {n} replica(s) "
                "run fixed, without a scaler",
                "ScalerWithoutMetrics",
            )
            continue
        labels = _endpoint_labels(md, clusters[c])
        scaled[c] = scaler.Scaled(spread[c], prometheus, scaler.routing_to(services, labels))
    return scaled


def _fleet(
    rec: Reconcile, md: ModelDeployment
) -> tuple[dict[str, InferenceCluster], dict[str, placement.ClusterView]] | None:
    """Every cluster by name, and as placement sees it before counting other deployments'
    GPUs; None until Crossplane looked them up."""
    clusters = rec.require_all(
        CLUSTERS, Selector(API_VERSION, "InferenceCluster"), InferenceCluster
    )
    if clusters is None:
        return None
    by_name = fleet.by_name(clusters)
    now = datetime.datetime.now(datetime.UTC)
    return by_name, {n: fleet.view(c, now) for n, c in by_name.items()}


def _gpus_used(rec: Reconcile, md: ModelDeployment) -> dict[str, int] | None:
    """GPUs other deployments use on each cluster; None until Crossplane looked them up."""
    peers = rec.require(DEPLOYMENTS, Selector(API_VERSION, "ModelDeployment"))
    if peers is None:
        return None
    namespace, name = _identity(md)
    used, unreadable = gpus_used_by_peers(peers, namespace, name)
    for problem in unreadable:
        rec.warning(f"GPU use of {problem}", "PeerUnreadable")
    return used


def _workload(
    rec: Reconcile, md: ModelDeployment, choice: Choice, provider: Provider
) -> Workload | Verdict:
    """The deployment as the provider will run it (replicas: the fleet's), or why it cannot."""
    decoded = overrides.check(
        md.spec.provider.overrides,
        provider,
        choice.engine,
        md.spec.serving_mode,
        provider.sizing_paths,
    )
    if isinstance(decoded, list):
        return Verdict.no("OverrideRejected", overrides.summary(decoded))
    if md.spec.scaling is not None and not provider.scales:
        return Verdict.no(
            "ProviderCannotScale",
            f"provider {provider.name} cannot scale: spec.scaling needs Direct, LLMD or KAITO",
        )
    if not provider.starts_engine:
        for warning in engine.served_name_warnings(md.spec.engine):
            rec.warning(warning, "ServedModelName")
    namespace, name = _identity(md)
    served = engine.served_model_name(namespace, name)
    image = provider.default_image(choice.engine)
    shape = Workload(
        name=naming.workload(namespace, name),
        namespace=SYSTEM_NAMESPACE,
        labels=_remote_labels(namespace, name),
        engine=engine.resolve(md.spec.engine, choice.engine, served, image),
        gpus=md.spec.resources.gpu.count or 0,
        replicas=md.spec.replicas,
        model=md.spec.model.name,
        served=served,
        mode=md.spec.serving_mode,
        overrides=decoded,
    )
    unfit = provider.check(shape)
    if unfit is not None:
        return Verdict.no("ProviderCannotServe", f"provider {provider.name} {unfit}")
    return shape


def _identity(md: ModelDeployment) -> tuple[str, str]:
    if not md.metadata.namespace:
        raise InputError(
            "invalid ModelDeployment: metadata.namespace: a ModelDeployment is namespaced"
        )
    return md.metadata.namespace, md.metadata.name


def _fleet_replicas(md: ModelDeployment) -> int:
    """The replicas placement promises capacity for: the most the deployment may run."""
    return md.spec.replicas if md.spec.scaling is None else md.spec.scaling.max_replicas


def _request(md: ModelDeployment, choice: Choice | None = None) -> placement.Request:
    """What placement needs; without a choice, for finding where providers are installed."""
    return placement.Request(
        replicas=_fleet_replicas(md),
        gpus=placement.gpus_per_replica(md.spec.resources.gpu.count or 0, md.spec.serving_mode),
        gpu_type=md.spec.resources.gpu.type,
        provider=choice.provider if choice else "",
        selector=md.spec.placement.cluster_selector.match_labels,
        key=f"{md.metadata.namespace}/{md.metadata.name}",
    )


def _remote_labels(namespace: str, name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "fleetgate",
        LABEL_DEPLOYMENT: names.label_value(name),
        f"{LABEL_PREFIX}namespace": namespace,
    }


def _compose_cluster(
    rec: Reconcile,
    *,
    md: ModelDeployment,
    cluster: InferenceCluster,
    view: placement.ClusterView,
    provider: Provider,
    shape: Workload,
    replicas: int,
    scaled: scaler.Scaled | None,
) -> Placed:
    """The workload, its scaler and route on ``cluster``; its ModelEndpoint once they serve."""
    cluster_name = cluster.metadata.name
    parts, notes = _parts(
        md, cluster=cluster, provider=provider, shape=shape, replicas=replicas, scaled=scaled
    )
    observed = {p.part: rec.observed(naming.resource(cluster_name, p.part)) for p in parts}
    ready = min(provider.ready_replicas(observed, replicas), replicas)
    refused = _refused(cluster_name, parts, observed)
    endpoint_key = naming.resource(cluster_name, ENDPOINT_PART)
    placed = Placed(cluster_name, replicas, ready, (), False, refused, notes)
    if scaled is not None:
        parts = scaler.leave_replicas(parts, observed)
        placed = placed._replace(
            running=scaler.running(parts, observed, scaled.bounds),
            last_request=scaler.last_request(observed),
        )

    provider_config = cluster.status.provider_config_ref.name
    if not provider_config:
        # Transient (the cluster's status is being rewritten): what runs stays.
        kept = _keep_cluster(rec, cluster_name)
        return placed._replace(
            waiting=("the cluster's providerConfigRef",),
            endpoint_ready=endpoint_key in kept and rec.observed(endpoint_key).ready,
        )
    _compose_workload(rec, cluster_name, parts, observed, provider_config)
    # Asleep, or waking after sleeping: no engine serves, yet the endpoint stays, marked,
    # so that the routes leave it out without forgetting it (scaler.py).
    dormant = placed.ready == 0 and (placed.asleep or rec.observed(endpoint_key).exists)
    waiting = _endpoint_waits_for(
        rec, parts, observed, view, endpoint_key, dormant=scaled is not None and dormant
    )
    hostname = cluster.status.gateway.hostname
    if waiting or not hostname:
        return placed._replace(waiting=tuple(waiting))
    labels = _endpoint_labels(md, cluster)
    if scaled is not None:
        labels |= scaler.endpoint_labels(scaled.bounds, asleep=dormant)
    return placed._replace(endpoint_ready=_compose_endpoint(rec, md, cluster, hostname, labels))


def _parts(
    md: ModelDeployment,
    *,
    cluster: InferenceCluster,
    provider: Provider,
    shape: Workload,
    replicas: int,
    scaled: scaler.Scaled | None,
) -> tuple[tuple[RemotePart, ...], tuple[str, ...]]:
    """What runs on ``cluster``: the provider's objects, their scaler and the route to
    them; and the provider's notes on how it took the spec."""
    namespace, name = _identity(md)
    start = replicas if scaled is None else scaled.bounds.start
    workload = provider.for_cluster(shape._replace(replicas=start), cluster)
    rendered = provider.render(workload)
    route = routing.http_route(
        workload, namespace=namespace, name=name, backend=rendered.backend_ref
    )
    parts = (*rendered.parts, RemotePart(ROUTE_PART, route))
    if scaled is not None and md.spec.scaling is not None:
        parts += (scaler.part(workload, rendered.parts, md.spec.scaling, scaled),)
        if scaled.bounds.low == 0:
            waking = routing.waking_policy(workload, namespace=namespace, name=name)
            parts += (RemotePart(routing.WAKING_PART, waking),)
    return parts, rendered.notes


def _compose_workload(
    rec: Reconcile,
    cluster: str,
    parts: tuple[RemotePart, ...],
    observed: dict[str, Observed],
    provider_config: str,
) -> None:
    """Each part as an Object on the cluster, marked ready as it was observed."""
    for part in parts:
        obj = remote_object(
            manifest=part.manifest,
            provider_config=provider_config,
            readiness_query=part.readiness_query,
            # Watched where readiness is read from the remote object: an engine
            # turning ready publishes its endpoint without waiting for a poll.
            watch=None,
        )
        rec.compose(naming.resource(cluster, part.part), obj, ready=observed[part.part].ready)


def _endpoint_waits_for(
    rec: Reconcile,
    parts: tuple[RemotePart, ...],
    observed: dict[str, Observed],
    view: placement.ClusterView,
    endpoint_key: str,
    *,
    dormant: bool = False,
) -> list[str]:
    """What keeps the cluster's ModelEndpoint back; empty when it may be published. A
    ``dormant`` engine (scaled to zero or waking) does not."""
    published = rec.observed(endpoint_key).exists
    waiting = (
        [
            p.part
            for p in parts
            if not (dormant and p.scaled) and not _still_ready(observed[p.part], published)
        ]
        if any(state.exists for state in observed.values())
        else ["its workload to be created"]
    )
    # A cluster whose Schedulable Crossplane just marked Unknown is read as it was
    # when its endpoint was published: withdrawing the endpoint would take the model
    # off every gateway (and delete the ModelEndpoint) for a function's restart.
    closed = placement.closed(
        view._replace(schedulable=True) if view.undetermined and published else view
    )
    if closed is not None:
        waiting.insert(0, f"cluster {closed}")
    return waiting


def _compose_endpoint(
    rec: Reconcile,
    md: ModelDeployment,
    cluster: InferenceCluster,
    hostname: str,
    labels: dict[str, str],
) -> bool:
    """The cluster's ModelEndpoint on the control plane; whether it is ready."""
    namespace, name = _identity(md)
    cluster_name = cluster.metadata.name
    endpoint = endpoints.model_endpoint(
        namespace=namespace,
        deployment=name,
        cluster=cluster_name,
        hostname=hostname,
        served_model=engine.served_model_name(namespace, name),
        labels=dict(sorted(labels.items())),
    )
    key = naming.resource(cluster_name, ENDPOINT_PART)
    ready = rec.observed(key).ready
    rec.compose(key, endpoint, ready=ready)
    return ready


def _endpoint_labels(md: ModelDeployment, cluster: InferenceCluster) -> dict[str, str]:
    """The labels of the ModelEndpoint for ``cluster``, which ModelServices select by."""
    return endpoints.endpoint_labels(
        md.spec.template.metadata.labels,
        cluster.spec.placement.metadata.labels,
        md.metadata.name,
        cluster.metadata.name,
    )


def _still_ready(observed: Observed, published: bool) -> bool:
    """Whether a workload part lets the cluster's endpoint be (or stay) published.

    Ready says yes, an explicit Ready=False or a missing object says no. An
    object observed without any Ready condition (its status momentarily
    missing, as when a provider restarts) says nothing: an endpoint already
    published stays, rather than flapping every route to this cluster.
    """
    if not observed.exists:
        return False
    if observed.ready or observed.has_condition("Ready", "False"):
        return observed.ready
    return published


def _refused(
    cluster: str, parts: tuple[RemotePart, ...], observed: dict[str, Observed]
) -> tuple[str, ...]:
    """The cluster's refusals of fields Fleetgate writes, one sentence per object."""
    found = []
    for part in parts:
        fields = upstream.refused_fields(observed[part.part])
        if fields is not None:
            remote = observed[part.part].remote
            manifest = remote.to_dict(only=upstream.IDENTITY) if remote.exists else part.manifest
            found.append(upstream.describe(cluster, manifest, fields))
    return tuple(found)


def _keep_cluster(rec: Reconcile, cluster: str) -> set[str]:
    return set(rec.keep_all(naming.resource_prefix(cluster)))


def _hold(rec: Reconcile, md: ModelDeployment, previous: DeploymentStatus, why: Verdict) -> None:
    """Compose nothing new: keep every resource composed before and the status that says so."""
    rec.keep_all()
    # What runs keeps the record of how it was chosen.
    if previous.engine.type is not None:
        rec.set_status(engine=dump(previous.engine))
    if previous.provider.name is not None:
        rec.set_status(provider=dump(previous.provider))
    rec.set_status(
        placements=[{"cluster": p.cluster, "replicas": p.replicas} for p in previous.placements],
        replicas={
            "desired": md.spec.replicas if md.spec.scaling is None else previous.replicas.desired,
            "ready": previous.replicas.ready,
        },
    )
    if md.spec.scaling is not None and previous.scaling.state is not None:
        rec.set_status(scaling=dump(previous.scaling))
    rec.report(SCHEDULED, why)
    rec.warning(f"nothing new composed: {why.message}", why.reason)
    rec.allow_ready(False)
    rec.set_waiting(True)


def _report(
    rec: Reconcile, md: ModelDeployment, plan: placement.Plan, placed: list[Placed]
) -> None:
    """Status, the conditions, the warnings, and whether the XR may be Ready."""
    desired = sum(p.wanted for p in placed) if md.spec.scaling else md.spec.replicas
    ready = sum(p.ready for p in placed)
    rec.set_status(
        placements=[{"cluster": c, "replicas": n} for c, n in plan.placements],
        replicas={"desired": desired, "ready": ready},
    )
    if md.spec.scaling is not None:
        _report_scaling(rec, placed, desired, ready)
    for note in sorted({n for p in placed for n in p.notes}):
        rec.warning(note, "EngineArgs")
    for cluster, replicas, why in plan.released:
        rec.warning(f"{replicas} replica(s) moved off cluster {cluster}: {why}", "Released")
    rec.report(SCHEDULED, _scheduled(plan, _fleet_replicas(md)))
    for p in placed:
        if p.waiting:
            waits = ", ".join(p.waiting)
            rec.warning(
                f"ModelEndpoint for cluster {p.cluster} withheld: waiting for {waits}",
                "EndpointWithheld",
            )
    rec.report(REPLICAS_READY, _replicas_ready(placed, desired))

    ready_now = (
        plan.unplaced == 0
        and ready == desired
        and all(not p.refused and not p.waiting and (p.endpoint_ready or p.asleep) for p in placed)
    )
    rec.allow_ready(ready_now)
    # Clusters (Schedulable, hostname, drains) and the peers' GPU use are
    # required resources: seen only when the TTL runs out (see core.pacing).
    rec.set_waiting(not ready_now)


def _report_scaling(rec: Reconcile, placed: list[Placed], desired: int, ready: int) -> None:
    """status.scaling and ScaledToZero: whether the deployment sleeps, wakes or serves."""
    state = "Idle" if desired == 0 else "Waking" if ready == 0 else "Active"
    stamps = [p.last_request for p in placed if p.last_request]
    last = max(stamps) if stamps else None
    rec.set_status(scaling={"state": state} | ({"lastRequestTime": last} if last else {}))
    if desired == 0:
        since = f" since {last}" if last else ""
        rec.report(
            SCALED_TO_ZERO,
            Verdict(
                "True",
                "Idle",
                f"no replica runs: no request for the model{since} within spec.scaling.idleAfter; "
                "the next request wakes it while the ModelServices' next tier answers",
            ),
        )
    else:
        rec.report(
            SCALED_TO_ZERO,
            Verdict("False", state, f"{desired} replica(s) wanted now, {ready} ready"),
        )


def _scheduled(plan: placement.Plan, desired: int) -> Verdict:
    """Scheduled: every replica placed, or how many are not and why (also a warning)."""
    spread = ", ".join(f"{c}={n}" for c, n in plan.placements)
    if plan.unplaced == 0:
        message = f"{plan.placed} of {desired} replicas placed" + (f": {spread}" if spread else "")
        return Verdict("True", "AllReplicasPlaced", message)
    why = "; ".join(f"{c}: {w}" for c, w in plan.why_not) or "no InferenceClusters exist"
    joining = sum(n for _, n in plan.held) == plan.unplaced
    reason = (
        "WaitingForJoiningClusters"
        if joining
        else "InsufficientCapacity"
        if plan.candidates
        else "NoCandidateClusters"
    )
    message = (
        f"{plan.placed} of {desired} replicas placed"
        + (f" ({spread})" if spread else "")
        + f"; {plan.unplaced} "
        + ("wait for clusters joining the fleet" if joining else "could not be placed")
        + f": {why}"
    )
    return Verdict("False", reason, message, warn=True)


def _replicas_ready(placed: list[Placed], desired: int) -> Verdict:
    """ReplicasReady: every replica ready and published, or what keeps them back.

    A cluster's refusal of a field Fleetgate writes comes first and is also a
    warning: a person must act. Crossplane owns the XR's Ready condition (held
    not ready by ``_report``); this condition is the function's and carries
    the reason.
    """
    refused = [r for p in placed for r in p.refused]
    if refused:
        return Verdict("False", INCOMPATIBLE, "; ".join(refused), warn=True)
    if placed and desired == 0 and all(p.asleep for p in placed):
        return Verdict("True", "ScaledToZero", "no replica runs until a request wakes it")
    ready = sum(p.ready for p in placed)
    withheld = [p for p in placed if p.waiting]
    if ready == desired and not withheld:
        return Verdict(
            "True",
            "AllReplicasReady",
            f"{ready} of {desired} replicas ready, serving from {len(placed)} cluster(s)",
        )
    waits = "; ".join(f"{p.cluster}: {', '.join(p.waiting)}" for p in withheld)
    return Verdict(
        "False",
        "ReplicasNotReady" if placed else "NoReplicasPlaced",
        f"{ready} of {desired} replicas ready" + (f"; waiting on {waits}" if waits else ""),
    )
