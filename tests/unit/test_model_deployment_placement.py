"""Placement of a ModelDeployment's replicas: a pure function, one table of cases."""

from typing import Any

import pytest

from fleetgate.model_deployment.placement import ClusterView, Plan, Request, place


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


def request(replicas: int, **kw: Any) -> Request:
    fields: dict[str, Any] = {"gpus": 1, "gpu_type": None, "provider": "Direct", "selector": {}}
    fields.update(kw)
    return Request(replicas=replicas, **fields)


A, B, C = cluster("a"), cluster("b"), cluster("c")

# name, request, clusters, previous placements, expected placements, unplaced, why fragments
CASES: list[
    tuple[
        str,
        Request,
        list[ClusterView],
        list[tuple[str, int]],
        list[tuple[str, int]],
        int,
        list[str],
    ]
] = [
    ("no clusters", request(2), [], [], [], 2, []),
    ("one cluster takes all", request(2), [A], [], [("a", 2)], 0, []),
    ("spreads before packing", request(3), [A, B], [], [("a", 2), ("b", 1)], 0, []),
    ("one per cluster first", request(3), [A, B, C], [], [("a", 1), ("b", 1), ("c", 1)], 0, []),
    (
        "packs when capacity forces it",
        request(3),
        [cluster("a", gpus=1), B],
        [],
        [("a", 1), ("b", 2)],
        0,
        [],
    ),
    (
        "a new cluster moves nothing",
        request(2),
        [A, B],
        [("a", 2)],
        [("a", 2)],
        0,
        [],
    ),
    (
        "scale up spreads onto the emptiest clusters",
        request(4),
        [A, B, C],
        [("a", 2)],
        [("a", 2), ("b", 1), ("c", 1)],
        0,
        [],
    ),
    (
        "scale down from the most loaded cluster",
        request(2),
        [A, B],
        [("a", 3), ("b", 1)],
        [("a", 1), ("b", 1)],
        0,
        [],
    ),
    (
        "scale down a tie from the later name",
        request(1),
        [A, B],
        [("a", 1), ("b", 1)],
        [("a", 1)],
        0,
        [],
    ),
    ("scale to zero", request(0), [A, B], [("a", 1), ("b", 1)], [], 0, []),
    (
        "never places on a drained cluster",
        request(2),
        [cluster("a", drained=True), B],
        [],
        [("b", 2)],
        0,
        [],
    ),
    (
        "replicas leave a drained cluster",
        request(2),
        [cluster("a", drained=True), B],
        [("a", 2)],
        [("b", 2)],
        0,
        [],
    ),
    (
        "a drained cluster is the only one",
        request(1),
        [cluster("a", drained=True)],
        [("a", 1)],
        [],
        1,
        ["a: drained (spec.schedulable is false)"],
    ),
    (
        "an unschedulable cluster keeps its replicas but takes no new ones",
        request(2),
        [cluster("a", schedulable=False), B],
        [("a", 1)],
        [("a", 1), ("b", 1)],
        0,
        [],
    ),
    (
        "no hostname, no new replicas",
        request(1),
        [cluster("a", hostname=None)],
        [],
        [],
        1,
        ["a: no gateway hostname published"],
    ),
    (
        "not schedulable, no new replicas",
        request(1),
        [cluster("a", schedulable=False)],
        [],
        [],
        1,
        ["a: not Schedulable"],
    ),
    (
        "a deleted cluster's replicas are placed again",
        request(1),
        [B],
        [("gone", 1)],
        [("b", 1)],
        0,
        [],
    ),
    (
        "cluster selector",
        request(2, selector={"region": "eu"}),
        [cluster("a", labels={"region": "eu"}), cluster("b", labels={"region": "us"})],
        [],
        [("a", 2)],
        0,
        [],
    ),
    (
        "replicas leave a cluster the selector no longer matches",
        request(1, selector={"region": "eu"}),
        [cluster("a", labels={"region": "us"}), cluster("b", labels={"region": "eu"})],
        [("a", 1)],
        [("b", 1)],
        0,
        [],
    ),
    (
        "provider not installed",
        request(1, provider="LLMD"),
        [A],
        [],
        [],
        1,
        ["a: provider LLMD not installed"],
    ),
    (
        "other deployments' GPUs are taken",
        request(2, gpus=2),
        [cluster("a", gpus_used=7), B],
        [],
        [("b", 2)],
        0,
        [],
    ),
    (
        "not enough GPUs says how many are free",
        request(3, gpus=2),
        [cluster("a", gpus=4, gpus_used=2)],
        [],
        [("a", 1)],
        2,
        ["a: 0 of 4 GPUs free, a replica needs 2"],
    ),
    (
        "a replica larger than the cluster",
        request(1, gpus=16),
        [A],
        [],
        [],
        1,
        ["a: has 8 GPUs, a replica needs 16"],
    ),
    (
        "GPU type must match",
        request(1, gpu_type="nvidia-a100"),
        [A, cluster("b", gpu_type="nvidia-a100")],
        [],
        [("b", 1)],
        0,
        [],
    ),
    (
        "GPU type mismatch is the reason given",
        request(1, gpu_type="nvidia-a100"),
        [A],
        [],
        [],
        1,
        ["a: GPU type nvidia-h100, needs nvidia-a100"],
    ),
    (
        "a CPU model needs no GPUs",
        request(3, gpus=0),
        [cluster("a", gpus=0, gpu_type=None), cluster("b", gpus=0, gpu_type=None)],
        [],
        [("a", 2), ("b", 1)],
        0,
        [],
    ),
    (
        "kept replicas are not evicted for capacity",
        request(2, gpus=2),
        [cluster("a", gpus=2)],
        [("a", 2)],
        [("a", 2)],
        0,
        [],
    ),
    (
        "kept replicas count against new ones",
        request(3, gpus=2),
        [cluster("a", gpus=4), cluster("b", gpus=2)],
        [("a", 1)],
        [("a", 2), ("b", 1)],
        0,
        [],
    ),
    (
        "duplicate earlier entries are merged",
        request(2),
        [A, B],
        [("a", 1), ("a", 1)],
        [("a", 2)],
        0,
        [],
    ),
    (
        "waits for a joining cluster rather than packing",
        request(2),
        [A, cluster("b", schedulable=False, hostname=None, joining=True)],
        [],
        [("a", 1)],
        1,
        ["b: joining the fleet, 1 replica(s) wait for it"],
    ),
    (
        "packs once the joining window is over",
        request(2),
        [A, cluster("b", schedulable=False, hostname=None)],
        [],
        [("a", 2)],
        0,
        [],
    ),
    (
        "a joining cluster gets its share of the spread, no more",
        request(3),
        [A, cluster("b", schedulable=False, joining=True)],
        [],
        [("a", 2)],
        1,
        ["b: joining the fleet, 1 replica(s) wait for it"],
    ),
    (
        "what runs stays when a cluster joins",
        request(2),
        [A, cluster("b", schedulable=False, joining=True)],
        [("a", 2)],
        [("a", 2)],
        0,
        [],
    ),
    (
        "a drained joining cluster is not waited for",
        request(2),
        [A, cluster("b", schedulable=False, drained=True, joining=True)],
        [],
        [("a", 2)],
        0,
        [],
    ),
    (
        "a joining cluster without room is not waited for",
        request(2, gpus=4),
        [A, cluster("b", schedulable=False, joining=True, gpus_used=6)],
        [],
        [("a", 2)],
        0,
        [],
    ),
    (
        "every cluster says why",
        request(1, gpus=4, provider="LLMD", selector={"tier": "gpu"}),
        [
            cluster("a"),
            cluster("b", labels={"tier": "gpu"}),
            cluster("c", labels={"tier": "gpu"}, providers={"LLMD"}, gpus_used=6),
        ],
        [],
        [],
        1,
        [
            "a: does not match spec.placement.clusterSelector",
            "b: provider LLMD not installed",
            "c: 2 of 8 GPUs free, a replica needs 4",
        ],
    ),
]


Case = tuple[
    str, Request, list[ClusterView], list[tuple[str, int]], list[tuple[str, int]], int, list[str]
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_place(case: Case) -> None:
    _, req, clusters, previous, want, unplaced, why = case
    plan = place(req, clusters, previous)
    assert list(plan.placements) == want
    assert plan.unplaced == unplaced
    reasons = [f"{c}: {w}" for c, w in plan.why_not]
    for fragment in why:
        assert fragment in reasons
    assert plan.placed + plan.unplaced == req.replicas


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
