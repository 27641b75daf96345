"""Placement: how many replicas go to which cluster. A pure function of what is known.

Rules, in order:

1. **Keep what runs.** A replica placed earlier stays where it is while its
   cluster exists, is not drained, still matches the deployment's cluster
   selector, still has the provider and can hold one replica at all. A
   cluster that is temporarily unschedulable (its gateway lost a CA, say)
   keeps its replicas: moving them would restart models for a blip. A new
   cluster joining the fleet moves nothing.
2. **Scale down from the most loaded cluster** (ties: the one this deployment
   ranks last), one replica at a time, so the spread that is left stays even.
3. **Spread before packing.** Each new replica goes to the candidate holding
   the fewest of this deployment's replicas (ties: the one this deployment
   ranks first) that has the GPUs free. Candidates are clusters that could keep a replica (rule 1)
   and are also Schedulable with a published gateway hostname, and whose
   provider would accept the deployment there (``Request.refused``).
4. **Wait for a cluster that is joining.** A cluster registered less than
   ``JOINING`` ago that could keep a replica but is not open yet (its
   gateway, CA and stack are still coming up) counts as a candidate for
   rule 3, and the replicas it would get wait for it instead of packing
   onto the clusters that happened to open first. A fleet created at once
   so spreads the same way whichever cluster is quicker; since nothing
   moves later (rule 1), packing first would have been for good. A cluster
   still not open after ``JOINING`` is not waited for.

Ties follow each deployment's own order of the clusters (``rank``: rendezvous hashing
of the deployment's namespace/name with the cluster's name), not one order for all: a
fleet of one-replica deployments so spreads over equal clusters instead of piling onto
the first name, and draining a cluster moves only its share. The order is stable (a
cluster joining or leaving changes no other pair's rank) and needs no peer's state.

GPU capacity is ``capacity.gpus`` minus what other deployments' published
placements use there (their replicas times their GPUs per replica) minus what
this deployment keeps there. Retained replicas are never evicted for
capacity: the count is a promise for new work, not a reason to move running
models. CPU-only deployments (0 GPUs) take no capacity.
"""

import datetime
import hashlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import NamedTuple

# How long a newly registered cluster is waited for (rule 4): the fleet's
# documented install publishes a cluster well within it.
JOINING = datetime.timedelta(minutes=10)


class ClusterView(NamedTuple):
    """What placement needs to know of one InferenceCluster."""

    name: str
    labels: Mapping[str, str]
    drained: bool  # spec.schedulable false
    schedulable: bool  # condition Schedulable is True
    hostname: str | None  # status.gateway.hostname, once published
    providers: frozenset[str]
    gpus: int
    gpu_type: str | None
    gpus_used: int = 0  # by other deployments' placements (the composer counts them)
    joining: bool = False  # registered less than JOINING ago (rule 4)
    # Schedulable not known: the cluster's own reconcile just failed. It takes no
    # new replicas, and what it serves stays published (not a reason to withdraw).
    undetermined: bool = False


class Request(NamedTuple):
    replicas: int
    gpus: int  # per replica
    gpu_type: str | None
    provider: str
    selector: Mapping[str, str]
    key: str  # the deployment's namespace/name: whose order of clusters breaks ties
    # Clusters whose provider would refuse new work of this deployment, and why
    # (``Provider.refuses_cluster``). Replicas running there stay (rule 1).
    refused: Mapping[str, str] = MappingProxyType({})


class Plan(NamedTuple):
    placements: tuple[tuple[str, int], ...]  # (cluster, replicas > 0), sorted by cluster
    unplaced: int
    candidates: int  # clusters that could take a new replica, capacity aside
    why_not: tuple[tuple[str, str], ...]  # per cluster left without a new replica, when unplaced
    # Replicas (part of ``unplaced``) waiting for a joining cluster: (cluster, replicas).
    held: tuple[tuple[str, int], ...]
    # Earlier placements given up: (cluster, replicas, why).
    released: tuple[tuple[str, int, str], ...]

    @property
    def placed(self) -> int:
        return sum(n for _, n in self.placements)


def gpus_per_replica(gpus: int, mode: str) -> int:
    """GPUs one replica takes: a disaggregated replica is a prefill and a decode engine."""
    return gpus * 2 if mode == "Disaggregated" else gpus


def unfit(cluster: ClusterView, req: Request, *, provider: bool = True) -> str | None:
    """Why ``cluster`` can never hold a replica of ``req``, whatever its state; None if it can.

    ``provider=False`` leaves the provider out (for choosing one).
    """
    missing = {k: v for k, v in req.selector.items() if cluster.labels.get(k) != v}
    if missing:
        return "does not match spec.placement.clusterSelector"
    if provider and req.provider not in cluster.providers:
        return f"provider {req.provider} not installed"
    if req.gpus > 0:
        if req.gpu_type is not None and cluster.gpu_type != req.gpu_type:
            return f"GPU type {cluster.gpu_type or 'undeclared'}, needs {req.gpu_type}"
        if cluster.gpus < req.gpus:
            return f"has {cluster.gpus} GPUs, a replica needs {req.gpus}"
    return None


def closed(cluster: ClusterView) -> str | None:
    """Why ``cluster`` takes no new replicas right now; None if it does."""
    if cluster.drained:
        return "drained (spec.schedulable is false)"
    if not cluster.schedulable:
        return "not Schedulable"
    if not cluster.hostname:
        return "no gateway hostname published"
    return None


def installed(clusters: Iterable[ClusterView], req: Request) -> frozenset[str]:
    """Providers installed on some candidate cluster: open now, fit for ``req`` but its provider."""
    return frozenset(
        p
        for c in clusters
        if closed(c) is None and unfit(c, req, provider=False) is None
        for p in c.providers
    )


def retained(
    clusters: Mapping[str, ClusterView], req: Request, previous: Iterable[tuple[str, int]]
) -> tuple[dict[str, int], list[tuple[str, int, str]]]:
    """Earlier placements that stay (rule 1), and those given up with the reason."""
    kept: dict[str, int] = {}
    released = []
    merged: dict[str, int] = {}
    for name, replicas in previous:
        merged[name] = merged.get(name, 0) + replicas
    for name, replicas in sorted(merged.items()):
        if replicas <= 0:
            continue
        cluster = clusters.get(name)
        why = (
            "cluster no longer exists"
            if cluster is None
            else "drained (spec.schedulable is false)"
            if cluster.drained
            else unfit(cluster, req)
        )
        if why is None:
            kept[name] = replicas
        else:
            released.append((name, replicas, why))
    return kept, released


def rank(key: str, cluster: str) -> bytes:
    """Where ``cluster`` comes in the order of clusters the deployment ``key`` breaks ties
    by (lower first): its own order, from a hash of both names."""
    return hashlib.sha256(f"{key}\0{cluster}".encode()).digest()


def scale_down(counts: dict[str, int], to: int, key: str) -> None:
    """Remove replicas from the most loaded cluster (ties: the one ``key`` ranks last) down
    to ``to``."""
    while sum(counts.values()) > to:
        name = max(counts, key=lambda c: (counts[c], rank(key, c)))
        counts[name] -= 1
        if counts[name] == 0:
            del counts[name]


def _kept(
    by_name: Mapping[str, ClusterView], req: Request, previous: Iterable[tuple[str, int]]
) -> tuple[dict[str, int], list[tuple[str, int, str]]]:
    """What stays of the earlier placements (rules 1 and 2), and what was given up."""
    counts, released = retained(by_name, req, previous)
    scale_down(counts, req.replicas, req.key)
    return counts, released


def needs_capacity(
    req: Request, clusters: Iterable[ClusterView], previous: Iterable[tuple[str, int]]
) -> bool:
    """Whether placing ``req`` depends on the GPUs other deployments use: only replicas
    that need GPUs and are not placed yet do. Capacity is a promise for new work, so a
    deployment placed in full, or one without GPUs, never reads its peers."""
    if req.gpus == 0:
        return False
    counts, _ = _kept({c.name: c for c in clusters}, req, previous)
    return sum(counts.values()) < req.replicas


def place(
    req: Request, clusters: Iterable[ClusterView], previous: Iterable[tuple[str, int]]
) -> Plan:
    by_name = {c.name: c for c in clusters}
    counts, released = _kept(by_name, req, previous)

    fit = {
        name: c for name, c in by_name.items() if unfit(c, req) is None and name not in req.refused
    }
    open_ = sorted(name for name, c in fit.items() if closed(c) is None)
    joining = sorted(
        name for name, c in fit.items() if c.joining and not c.drained and name not in open_
    )
    free = {
        name: by_name[name].gpus - by_name[name].gpus_used - counts.get(name, 0) * req.gpus
        for name in open_ + joining
    }
    held: dict[str, int] = {}
    to_place = req.replicas - sum(counts.values())
    while to_place > 0:
        fits = [name for name in open_ + joining if req.gpus == 0 or free[name] >= req.gpus]
        if not fits:
            break
        name = min(fits, key=lambda c: (counts.get(c, 0) + held.get(c, 0), rank(req.key, c)))
        taken = held if name in joining else counts
        taken[name] = taken.get(name, 0) + 1
        free[name] -= req.gpus
        to_place -= 1
    unplaced = req.replicas - sum(counts.values())

    why_not: list[tuple[str, str]] = [
        (name, f"joining the fleet, {n} replica(s) wait for it") for name, n in sorted(held.items())
    ]
    if unplaced > sum(held.values()):
        for name, cluster in sorted(by_name.items()):
            if name in held:
                continue
            why = unfit(cluster, req) or req.refused.get(name) or closed(cluster)
            if why is None:
                left = max(free[name], 0)
                why = f"{left} of {cluster.gpus} GPUs free, a replica needs {req.gpus}"
            why_not.append((name, why))
    return Plan(
        placements=tuple(sorted(counts.items())),
        unplaced=unplaced,
        candidates=len(open_),
        why_not=tuple(sorted(why_not)),
        held=tuple(sorted(held.items())),
        released=tuple(released),
    )
