"""InferenceClusters as placement sees them."""

import datetime
from collections.abc import Iterable

from fleetgate.core import times
from fleetgate.core.constants import CLUSTER_CANNOT_CONNECT
from fleetgate.core.errors import InputError
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.model_deployment.placement import JOINING, ClusterView


def is_schedulable(cluster: InferenceCluster) -> bool:
    return any(c.type == "Schedulable" and c.status == "True" for c in cluster.status.conditions)


def is_undetermined(cluster: InferenceCluster) -> bool:
    """Whether the cluster's Schedulable says nothing now: its last reconcile failed (a
    function restarting or changing revision), so Crossplane marked it Unknown."""
    return any(c.type == "Schedulable" and c.undetermined for c in cluster.status.conditions)


def is_joining(cluster: InferenceCluster, now: datetime.datetime) -> bool:
    """Registered less than ``JOINING`` before ``now``, and not known to fail to connect
    (``Connected`` False for a reason provider-kubernetes gave: a ProviderConfig or
    credentials that do not work will not start working by themselves, and replicas
    waiting for it would wait the whole ``JOINING``); an unknown age is not joining."""
    created = times.parse(cluster.metadata.creation_timestamp)
    failing = any(
        c.type == "Connected" and c.status == "False" and c.reason == CLUSTER_CANNOT_CONNECT
        for c in cluster.status.conditions
    )
    return created is not None and now - created < JOINING and not failing


def view(cluster: InferenceCluster, now: datetime.datetime) -> ClusterView:
    """The cluster as placement sees it, before other deployments' GPUs are counted."""
    return ClusterView(
        name=cluster.metadata.name,
        labels=cluster.metadata.labels,
        drained=not cluster.spec.schedulable,
        schedulable=is_schedulable(cluster),
        undetermined=is_undetermined(cluster),
        hostname=cluster.status.gateway.hostname or None,
        providers=frozenset(cluster.spec.providers),
        gpus=cluster.spec.capacity.gpus,
        gpu_type=cluster.spec.capacity.gpu_type,
        joining=is_joining(cluster, now),
    )


def by_name(clusters: Iterable[InferenceCluster]) -> dict[str, InferenceCluster]:
    """Clusters keyed by name, in name order; a name listed twice is malformed input."""
    found: dict[str, InferenceCluster] = {}
    for cluster in sorted(clusters, key=lambda c: c.metadata.name):
        name = cluster.metadata.name
        if name in found:
            raise InputError(f"invalid InferenceCluster {name}: metadata.name: listed twice")
        found[name] = cluster
    return found
