"""Placement of a ModelDeployment's replicas: a pure function, one table of cases."""

import datetime
from dataclasses import dataclass, field
from typing import Any

import pytest

from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.model_deployment.fleet import is_joining
from fleetgate.model_deployment.placement import ClusterView, Plan, Request, place, rank


def cluster(name: str, **kw: Any) -> ClusterView:
    fields: dict[str, Any] = {
        "labels": {},
        "drained": False,
        "schedulable": True,
        "hostname": f"{name}.fleetgate-system.svc.cluster.local",
        "providers": frozenset({"Direct"}),
        "gpus": 8,
        "gpu_type": "nvidia-h100",
        "gpus_used": 0,
    }
    fields.update(kw)
    if "providers" in kw:
        fields["providers"] = frozenset(kw["providers"])
    return ClusterView(name=name, **fields)


# A deployment whose own order of clusters (which breaks ties) is a, b, c, d: the table
# reads as "ties go to the earlier name" for it.
IN_NAME_ORDER = "team/aw"


def request(replicas: int, **kw: Any) -> Request:
    fields: dict[str, Any] = {
        "gpus": 1,
        "gpu_type": None,
        "provider": "Direct",
        "selector": {},
        "key": IN_NAME_ORDER,
    }
    fields.update(kw)
    return Request(replicas=replicas, **fields)


A, B, C = cluster("a"), cluster("b"), cluster("c")


@dataclass(frozen=True)
class Case:
    """One placement: what is asked, what the clusters are, what was placed before."""

    id: str
    request: Request
    clusters: list[ClusterView]
    previous: list[tuple[str, int]] = field(default_factory=list)
    want: list[tuple[str, int]] = field(default_factory=list)  # placements, sorted by cluster
    unplaced: int = 0
    why: list[str] = field(default_factory=list)  # fragments of the per-cluster reasons


CASES = [
    Case("no clusters", request(2), clusters=[], unplaced=2),
    Case("one cluster takes all", request(2), clusters=[A], want=[("a", 2)]),
    Case("spreads before packing", request(3), clusters=[A, B], want=[("a", 2), ("b", 1)]),
    Case(
        "one per cluster first", request(3), clusters=[A, B, C], want=[("a", 1), ("b", 1), ("c", 1)]
    ),
    Case(
        "packs when capacity forces it",
        request(3),
        clusters=[cluster("a", gpus=1), B],
        want=[("a", 1), ("b", 2)],
    ),
    Case(
        "a new cluster moves nothing",
        request(2),
        clusters=[A, B],
        previous=[("a", 2)],
        want=[("a", 2)],
    ),
    Case(
        "scale up spreads onto the emptiest clusters",
        request(4),
        clusters=[A, B, C],
        previous=[("a", 2)],
        want=[("a", 2), ("b", 1), ("c", 1)],
    ),
    Case(
        "scale down from the most loaded cluster",
        request(2),
        clusters=[A, B],
        previous=[("a", 3), ("b", 1)],
        want=[("a", 1), ("b", 1)],
    ),
    Case(
        "scale down a tie from the later name",
        request(1),
        clusters=[A, B],
        previous=[("a", 1), ("b", 1)],
        want=[("a", 1)],
    ),
    Case("scale to zero", request(0), clusters=[A, B], previous=[("a", 1), ("b", 1)]),
    Case(
        "never places on a drained cluster",
        request(2),
        clusters=[cluster("a", drained=True), B],
        want=[("b", 2)],
    ),
    Case(
        "replicas leave a drained cluster",
        request(2),
        clusters=[cluster("a", drained=True), B],
        previous=[("a", 2)],
        want=[("b", 2)],
    ),
    Case(
        "a drained cluster is the only one",
        request(1),
        clusters=[cluster("a", drained=True)],
        previous=[("a", 1)],
        unplaced=1,
        why=["a: drained (spec.schedulable is false)"],
    ),
    Case(
        "an unschedulable cluster keeps its replicas but takes no new ones",
        request(2),
        clusters=[cluster("a", schedulable=False), B],
        previous=[("a", 1)],
        want=[("a", 1), ("b", 1)],
    ),
    Case(
        "no hostname, no new replicas",
        request(1),
        clusters=[cluster("a", hostname=None)],
        unplaced=1,
        why=["a: no gateway hostname published"],
    ),
    Case(
        "not schedulable, no new replicas",
        request(1),
        clusters=[cluster("a", schedulable=False)],
        unplaced=1,
        why=["a: not Schedulable"],
    ),
    Case(
        "a deleted cluster's replicas are placed again",
        request(1),
        clusters=[B],
        previous=[("gone", 1)],
        want=[("b", 1)],
    ),
    Case(
        "cluster selector",
        request(2, selector={"region": "eu"}),
        clusters=[cluster("a", labels={"region": "eu"}), cluster("b", labels={"region": "us"})],
        want=[("a", 2)],
    ),
    Case(
        "replicas leave a cluster the selector no longer matches",
        request(1, selector={"region": "eu"}),
        clusters=[cluster("a", labels={"region": "us"}), cluster("b", labels={"region": "eu"})],
        previous=[("a", 1)],
        want=[("b", 1)],
    ),
    Case(
        "provider not installed",
        request(1, provider="LLMD"),
        clusters=[A],
        unplaced=1,
        why=["a: provider LLMD not installed"],
    ),
    Case(
        "other deployments' GPUs are taken",
        request(2, gpus=2),
        clusters=[cluster("a", gpus_used=7), B],
        want=[("b", 2)],
    ),
    Case(
        "not enough GPUs says how many are free",
        request(3, gpus=2),
        clusters=[cluster("a", gpus=4, gpus_used=2)],
        want=[("a", 1)],
        unplaced=2,
        why=["a: 0 of 4 GPUs free, a replica needs 2"],
    ),
    Case(
        "a replica larger than the cluster",
        request(1, gpus=16),
        clusters=[A],
        unplaced=1,
        why=["a: has 8 GPUs, a replica needs 16"],
    ),
    Case(
        "GPU type must match",
        request(1, gpu_type="nvidia-a100"),
        clusters=[A, cluster("b", gpu_type="nvidia-a100")],
        want=[("b", 1)],
    ),
    Case(
        "GPU type mismatch is the reason given",
        request(1, gpu_type="nvidia-a100"),
        clusters=[A],
        unplaced=1,
        why=["a: GPU type nvidia-h100, needs nvidia-a100"],
    ),
    Case(
        "a CPU model needs no GPUs",
        request(3, gpus=0),
        clusters=[cluster("a", gpus=0, gpu_type=None), cluster("b", gpus=0, gpu_type=None)],
        want=[("a", 2), ("b", 1)],
    ),
    Case(
        "kept replicas are not evicted for capacity",
        request(2, gpus=2),
        clusters=[cluster("a", gpus=2)],
        previous=[("a", 2)],
        want=[("a", 2)],
    ),
    Case(
        "kept replicas count against new ones",
        request(3, gpus=2),
        clusters=[cluster("a", gpus=4), cluster("b", gpus=2)],
        previous=[("a", 1)],
        want=[("a", 2), ("b", 1)],
    ),
    Case(
        "duplicate earlier entries are merged",
        request(2),
        clusters=[A, B],
        previous=[("a", 1), ("a", 1)],
        want=[("a", 2)],
    ),
    Case(
        "waits for a joining cluster rather than packing",
        request(2),
        clusters=[A, cluster("b", schedulable=False, hostname=None, joining=True)],
        want=[("a", 1)],
        unplaced=1,
        why=["b: joining the fleet, 1 replica(s) wait for it"],
    ),
    Case(
        "packs once the joining window is over",
        request(2),
        clusters=[A, cluster("b", schedulable=False, hostname=None)],
        want=[("a", 2)],
    ),
    Case(
        "a joining cluster gets its share of the spread, no more",
        request(3),
        clusters=[A, cluster("b", schedulable=False, joining=True)],
        want=[("a", 2)],
        unplaced=1,
        why=["b: joining the fleet, 1 replica(s) wait for it"],
    ),
    Case(
        "what runs stays when a cluster joins",
        request(2),
        clusters=[A, cluster("b", schedulable=False, joining=True)],
        previous=[("a", 2)],
        want=[("a", 2)],
    ),
    Case(
        "a drained joining cluster is not waited for",
        request(2),
        clusters=[A, cluster("b", schedulable=False, drained=True, joining=True)],
        want=[("a", 2)],
    ),
    Case(
        "a joining cluster without room is not waited for",
        request(2, gpus=4),
        clusters=[A, cluster("b", schedulable=False, joining=True, gpus_used=6)],
        want=[("a", 2)],
    ),
    Case(
        "every cluster says why",
        request(1, gpus=4, provider="LLMD", selector={"tier": "gpu"}),
        clusters=[
            cluster("a"),
            cluster("b", labels={"tier": "gpu"}),
            cluster("c", labels={"tier": "gpu"}, providers={"LLMD"}, gpus_used=6),
        ],
        unplaced=1,
        why=[
            "a: does not match spec.placement.clusterSelector",
            "b: provider LLMD not installed",
            "c: 2 of 8 GPUs free, a replica needs 4",
        ],
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_place(case: Case) -> None:
    plan = place(case.request, case.clusters, case.previous)
    assert list(plan.placements) == case.want
    assert plan.unplaced == case.unplaced
    reasons = [f"{c}: {w}" for c, w in plan.why_not]
    for fragment in case.why:
        assert fragment in reasons
    assert plan.placed + plan.unplaced == case.request.replicas


def test_the_tables_deployment_ranks_clusters_in_name_order() -> None:
    assert sorted("dcba", key=lambda c: rank(IN_NAME_ORDER, c)) == list("abcd")


def test_ties_follow_each_deployments_own_order() -> None:
    """A one-replica deployment lands on the equal cluster it ranks first, and deployments
    do not all rank them alike."""
    keys = [f"team/m-{i}" for i in range(10)]
    firsts = {key: min("ab", key=lambda c: rank(key, c)) for key in keys}
    for key in keys:
        assert place(request(1, key=key), [A, B], []).placements == ((firsts[key], 1),)
    assert set(firsts.values()) == {"a", "b"}


def test_one_replica_deployments_spread_over_equal_clusters() -> None:
    """400 one-replica deployments over four equal clusters: each takes about a quarter
    (within 30%), so draining one moves a quarter of them, not all."""
    clusters = [cluster(n, gpus=1000) for n in "abcd"]
    landed = [place(request(1, key=f"team/m-{i}"), clusters, []).placements for i in range(400)]
    per_cluster = {n: sum(1 for p in landed if p == ((n, 1),)) for n in "abcd"}
    assert all(70 <= n <= 130 for n in per_cluster.values()), per_cluster


def test_a_joining_cluster_changes_no_other_ranking() -> None:
    """Rank is per pair: a new cluster slots into each deployment's order without
    reordering the others, so the placements it does not take stay where they were."""
    for i in range(50):
        key = f"team/m-{i}"
        before = sorted("abc", key=lambda c: rank(key, c))
        after = [c for c in sorted("abcd", key=lambda c: rank(key, c)) if c != "d"]
        assert before == after


def test_held_replicas_are_counted_as_unplaced() -> None:
    plan = place(request(2), [A, cluster("b", schedulable=False, joining=True)], [])
    assert plan.held == (("b", 1),)
    assert plan.unplaced == 1


def test_released_placements_say_why() -> None:
    plan = place(
        request(2),
        [cluster("a", drained=True), cluster("b", labels={"x": "y"}), cluster("c")],
        [("a", 1), ("gone", 1)],
    )
    assert plan.released == (
        ("a", 1, "drained (spec.schedulable is false)"),
        ("gone", 1, "cluster no longer exists"),
    )
    assert plan.placements == (("b", 1), ("c", 1))


def test_candidates_counts_clusters_open_to_new_replicas() -> None:
    plan = place(request(9, gpus=8), [A, cluster("b", drained=True), C], [])
    assert plan.candidates == 2
    assert plan.placements == (("a", 1), ("c", 1))


def test_order_of_clusters_does_not_matter() -> None:
    clusters = [cluster(n, gpus=g) for n, g in (("d", 3), ("a", 1), ("c", 2), ("b", 8))]
    plans: list[Plan] = [
        place(request(7), order, [("c", 1)]) for order in (clusters, clusters[::-1])
    ]
    assert plans[0] == plans[1]


@pytest.mark.parametrize("replicas", [1, 10, 64])
@pytest.mark.parametrize("clusters", [1, 10, 100])
def test_never_overcommits_gpus(replicas: int, clusters: int) -> None:
    views = [cluster(f"c{i:03}", gpus=i % 5, gpus_used=i % 3) for i in range(clusters)]
    plan = place(request(replicas, gpus=2), views, [])
    by_name = {v.name: v for v in views}
    for name, n in plan.placements:
        assert n * 2 <= by_name[name].gpus - by_name[name].gpus_used
    assert plan.placed + plan.unplaced == replicas


@pytest.mark.parametrize(
    ("connected", "joining"),
    [
        (None, True),
        ({"status": "False", "reason": "WaitingForCluster"}, True),
        ({"status": "False", "reason": "CannotConnect"}, False),
    ],
    ids=["just registered", "waiting for its first object", "provider-kubernetes says why not"],
)
def test_a_cluster_that_cannot_connect_is_not_waited_for(
    connected: dict[str, str] | None, joining: bool
) -> None:
    """Rule 4 waits for a young cluster, unless it is known not to connect: replicas held
    for a ProviderConfig that does not exist would wait out the whole window."""
    now = datetime.datetime(2026, 12, 4, 12, 0, tzinfo=datetime.UTC)
    conditions = [] if connected is None else [{"type": "Connected", **connected}]
    cluster = InferenceCluster.model_validate(
        {
            "apiVersion": "fleetgate.dev/v1alpha1",
            "kind": "InferenceCluster",
            "metadata": {"name": "b", "creationTimestamp": "2026-12-04T11:59:00Z"},
            "spec": {"credentials": {"providerConfigName": "b"}},
            "status": {"conditions": conditions},
        }
    )
    assert is_joining(cluster, now) is joining
