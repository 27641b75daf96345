"""compose-model-deployment: place a model on the fleet and publish where it serves.

The steps, in order:

1. read the deployment, what it recorded last time (its choice and its
   placements) and the Composition's provider catalog;
2. require every InferenceCluster and every ModelDeployment (for the GPUs
   other deployments use);
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
from dataclasses import dataclass, replace

from fleetgate.core import names
from fleetgate.core.constants import (
    API_VERSION,
    LABEL_DEPLOYMENT,
    LABEL_PREFIX,
    SYSTEM_NAMESPACE,
)
from fleetgate.core.errors import InputError
from fleetgate.core.models import InferenceCluster, ModelDeployment
from fleetgate.core.objects import remote_object
from fleetgate.core.observed import Observed
from fleetgate.core.reconcile import Reconcile, Selector, dump
from fleetgate.model_deployment import (
    catalog,
    endpoints,
    engine,
    fleet,
    naming,
    overrides,
    placement,
    routing,
    upstream,
)
from fleetgate.model_deployment.providers import PROVIDERS
from fleetgate.model_deployment.providers.base import Provider, RemotePart, Workload
from fleetgate.model_deployment.selection import Choice, Unchosen, choose
from fleetgate.model_deployment.state import DeploymentStatus, gpus_used_by_peers, own_status

CLUSTERS = "clusters"
DEPLOYMENTS = "deployments"
SCHEDULED = "Scheduled"
REPLICAS_READY = "ReplicasReady"
INCOMPATIBLE = "IncompatibleUpstream"
ROUTE_PART = "route"
ENDPOINT_PART = "endpoint"
WAITING = Unchosen(
    "WaitingForClusters", "waiting for Crossplane to look up InferenceClusters and ModelDeployments"
)


@dataclass(frozen=True)
class Placed:
    """How one placed cluster is doing after this pass."""

    cluster: str
    replicas: int
    ready: int  # engine replicas ready
    waiting: tuple[str, ...]  # what keeps its endpoint back, empty when published
    endpoint_ready: bool
    refused: tuple[str, ...] = ()  # objects the cluster's API server refused a field of
    notes: tuple[str, ...] = ()  # how the provider took the spec


def compose(rec: Reconcile) -> None:
    md = rec.composite(ModelDeployment)
    namespace, name = _identity(md)
    previous = own_status(rec.observed_composite)
    rec.set_status(servedModelName=engine.served_model_name(namespace, name))
    offered = catalog.load(rec, PROVIDERS)

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
    if isinstance(choice, Unchosen):
        _hold(rec, md, previous, choice)
        return
    provider = PROVIDERS[choice.provider]

    shape = _workload(rec, md, choice, provider)
    if isinstance(shape, Unchosen):
        _hold(rec, md, previous, shape)
        return
    rec.set_status(
        engine={"type": choice.engine, "selectedReason": choice.engine_reason},
        provider={"name": choice.provider, "selectedReason": choice.provider_reason},
    )

    refused = {
        c: why
        for c, cluster in by_name.items()
        if (why := provider.refuses_cluster(shape, cluster)) is not None
    }
    plan = placement.place(
        replace(_request(md, choice), refused=refused),
        views.values(),
        [(p.cluster, p.replicas) for p in previous.placements],
    )
    placed = [
        _compose_cluster(
            rec,
            md=md,
            cluster=by_name[c],
            view=views[c],
            provider=provider,
            shape=shape,
            replicas=n,
        )
        for c, n in plan.placements
    ]
    _report(rec, md, plan, placed)


def _fleet(
    rec: Reconcile, md: ModelDeployment
) -> tuple[dict[str, InferenceCluster], dict[str, placement.ClusterView]] | None:
    """Every cluster by name, and as placement sees it; None until Crossplane looked them up."""
    clusters = rec.require_all(
        CLUSTERS, Selector(API_VERSION, "InferenceCluster"), InferenceCluster
    )
    peers = rec.require(DEPLOYMENTS, Selector(API_VERSION, "ModelDeployment"))
    if clusters is None or peers is None:
        return None
    namespace, name = _identity(md)
    used, unreadable = gpus_used_by_peers(peers, namespace, name)
    for problem in unreadable:
        rec.warning(f"GPU use of {problem}", "PeerUnreadable")
    by_name = fleet.by_name(clusters)
    now = datetime.datetime.now(datetime.UTC)
    return by_name, {n: fleet.view(c, used.get(n, 0), now) for n, c in by_name.items()}


def _workload(
    rec: Reconcile, md: ModelDeployment, choice: Choice, provider: Provider
) -> Workload | Unchosen:
    """The deployment as the provider will run it (replicas: the fleet's), or why it cannot."""
    decoded = overrides.check(
        md.spec.provider.overrides,
        provider,
        choice.engine,
        md.spec.serving_mode,
        provider.sizing_paths,
    )
    if isinstance(decoded, list):
        return Unchosen("OverrideRejected", overrides.summary(decoded))
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
        return Unchosen("ProviderCannotServe", f"provider {provider.name} {unfit}")
    return shape


def _identity(md: ModelDeployment) -> tuple[str, str]:
    if not md.metadata.namespace:
        raise InputError(
            "invalid ModelDeployment: metadata.namespace: a ModelDeployment is namespaced"
        )
    return md.metadata.namespace, md.metadata.name


def _request(md: ModelDeployment, choice: Choice | None = None) -> placement.Request:
    """What placement needs; without a choice, for finding where providers are installed."""
    return placement.Request(
        replicas=md.spec.replicas,
        gpus=placement.gpus_per_replica(md.spec.resources.gpu.count or 0, md.spec.serving_mode),
        gpu_type=md.spec.resources.gpu.type,
        provider=choice.provider if choice else "",
        selector=md.spec.placement.cluster_selector.match_labels,
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
) -> Placed:
    """The workload and route on ``cluster``; its ModelEndpoint once they serve."""
    namespace, name = _identity(md)
    cluster_name = cluster.metadata.name
    workload = provider.for_cluster(replace(shape, replicas=replicas), cluster)
    rendered = provider.render(workload)
    route = routing.http_route(
        workload, namespace=namespace, name=name, backend=rendered.backend_ref
    )
    parts = (*rendered.parts, RemotePart(ROUTE_PART, route))
    observed = {p.part: rec.observed(naming.resource(cluster_name, p.part)) for p in parts}
    ready = min(provider.ready_replicas(observed, replicas), replicas)
    endpoint_key = naming.resource(cluster_name, ENDPOINT_PART)
    refused = _refused(cluster_name, parts, observed)

    provider_config = cluster.status.provider_config_ref.name
    if not provider_config:
        # Transient (the cluster's status is being rewritten): what runs stays.
        kept = _keep_cluster(rec, cluster_name)
        return Placed(
            cluster_name,
            replicas,
            ready,
            ("the cluster's providerConfigRef",),
            endpoint_key in kept and rec.observed(endpoint_key).ready,
            refused,
            rendered.notes,
        )

    for part in parts:
        obj = remote_object(
            manifest=part.manifest,
            provider_config=provider_config,
            readiness_query=part.readiness_query,
            # Watched where readiness is read from the remote object: an engine
            # turning ready publishes its endpoint without waiting for a poll.
            watch=None,
        )
        rec.compose(naming.resource(cluster_name, part.part), obj, ready=observed[part.part].ready)
    published = rec.observed(endpoint_key).exists
    waiting = (
        [p.part for p in parts if not _still_ready(observed[p.part], published)]
        if any(state.exists for state in observed.values())
        else ["its workload to be created"]
    )
    closed = placement.closed(view)
    if closed is not None:
        waiting.insert(0, f"cluster {closed}")
    hostname = cluster.status.gateway.hostname
    if waiting or not hostname:
        return Placed(cluster_name, replicas, ready, tuple(waiting), False, refused, rendered.notes)

    labels = endpoints.endpoint_labels(
        md.spec.template.metadata.labels,
        cluster.spec.placement.metadata.labels,
        name,
        cluster_name,
    )
    endpoint = endpoints.model_endpoint(
        namespace=namespace,
        deployment=name,
        cluster=cluster_name,
        hostname=hostname,
        served_model=engine.served_model_name(namespace, name),
        labels=labels,
    )
    endpoint_ready = rec.observed(endpoint_key).ready
    rec.compose(endpoint_key, endpoint, ready=endpoint_ready)
    return Placed(cluster_name, replicas, ready, (), endpoint_ready, refused, rendered.notes)


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


def _hold(rec: Reconcile, md: ModelDeployment, previous: DeploymentStatus, why: Unchosen) -> None:
    """Compose nothing new: keep every resource composed before and the status that says so."""
    rec.keep_all()
    # What runs keeps the record of how it was chosen.
    if previous.engine.type is not None:
        rec.set_status(engine=dump(previous.engine))
    if previous.provider.name is not None:
        rec.set_status(provider=dump(previous.provider))
    rec.set_status(
        placements=[{"cluster": p.cluster, "replicas": p.replicas} for p in previous.placements],
        replicas={"desired": md.spec.replicas, "ready": previous.replicas.ready},
    )
    rec.condition(SCHEDULED, "False", why.reason, why.message)
    rec.warning(f"nothing new composed: {why.message}", why.reason)
    rec.allow_ready(False)
    rec.set_waiting(True)


def _report(
    rec: Reconcile, md: ModelDeployment, plan: placement.Plan, placed: list[Placed]
) -> None:
    desired = md.spec.replicas
    ready = sum(p.ready for p in placed)
    rec.set_status(
        placements=[{"cluster": c, "replicas": n} for c, n in plan.placements],
        replicas={"desired": desired, "ready": ready},
    )
    for note in sorted({n for p in placed for n in p.notes}):
        rec.warning(note, "EngineArgs")
    for cluster, replicas, why in plan.released:
        rec.warning(f"{replicas} replica(s) moved off cluster {cluster}: {why}", "Released")

    spread = ", ".join(f"{c}={n}" for c, n in plan.placements)
    if plan.unplaced == 0:
        message = f"{plan.placed} of {desired} replicas placed" + (f": {spread}" if spread else "")
        rec.condition(SCHEDULED, "True", "AllReplicasPlaced", message)
    else:
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
        rec.condition(SCHEDULED, "False", reason, message)
        rec.warning(message, reason)

    withheld = [p for p in placed if p.waiting]
    for p in withheld:
        rec.warning(
            f"ModelEndpoint for cluster {p.cluster} withheld: waiting for {', '.join(p.waiting)}",
            "EndpointWithheld",
        )
    refused = [r for p in placed for r in p.refused]
    if refused:
        # Crossplane owns the XR's Ready condition (the XR is held not ready
        # below); this condition is the function's and carries the reason.
        message = "; ".join(refused)
        rec.condition(REPLICAS_READY, "False", INCOMPATIBLE, message)
        rec.warning(message, INCOMPATIBLE)
    elif ready == desired and not withheld:
        rec.condition(
            REPLICAS_READY,
            "True",
            "AllReplicasReady",
            f"{ready} of {desired} replicas ready, serving from {len(placed)} cluster(s)",
        )
    else:
        waits = "; ".join(f"{p.cluster}: {', '.join(p.waiting)}" for p in withheld)
        rec.condition(
            REPLICAS_READY,
            "False",
            "ReplicasNotReady" if placed else "NoReplicasPlaced",
            f"{ready} of {desired} replicas ready" + (f"; waiting on {waits}" if waits else ""),
        )
    ready_now = (
        not refused
        and plan.unplaced == 0
        and ready == desired
        and all(not p.waiting and p.endpoint_ready for p in placed)
    )
    rec.allow_ready(ready_now)
    # Clusters (Schedulable, hostname, drains) and the peers' GPU use are
    # required resources: seen only when the TTL runs out (see core.pacing).
    rec.set_waiting(not ready_now)
