"""compose-model-deployment with spec.scaling: the ScaledObject per cluster, sleeping and
waking as the scaler reports it, and the refusals that name the field."""

import json
from typing import Any

import pytest

from fleetgate.core.kinds.deployment import Scaling
from fleetgate.model_deployment import scaler
from fleetgate.model_deployment.composer import compose
from sim import controllers
from tests.support import Outcome, request, run
from tests.unit.test_model_deployment import NAME, NS, cluster, deployment, endpoints, label, remote

PROMETHEUS = "http://prometheus.monitoring.svc:9090"
SCALING = {"minReplicas": 0, "maxReplicas": 3, "idleAfter": "2m", "targetInFlight": 4}


def metered(name: str, **kwargs: Any) -> dict[str, Any]:
    """A cluster whose stack names where the fleet's metrics are."""
    found = cluster(name, **kwargs)
    found["spec"]["stack"] = {"metrics": {"prometheusAddress": PROMETHEUS}}
    return found


EU = metered("eu-west", placement_labels={"region": "eu"})
US = metered("us-east", placement_labels={"region": "us"})


def service(name: str, **match: str) -> dict[str, Any]:
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"endpoints": [{"selector": {"matchLabels": match}}]},
    }


SERVICES = [
    service("chat", **{"fleetgate.dev/deployment": "qwen"}),
    service("chat-eu", region="eu"),
    service("other", region="ap"),
]


def step(
    xr: dict[str, Any],
    clusters: list[dict[str, Any]],
    observed: dict[str, Any] | None = None,
    services: list[dict[str, Any]] | None = SERVICES,
) -> Outcome:
    required: dict[str, Any] = {"clusters": clusters, "deployments": []}
    if services is not None:
        required["services"] = services
    return run(compose, request(xr, required=required, observed=observed))


def then(xr: dict[str, Any], out: Outcome) -> dict[str, Any]:
    return {**xr, "status": out.composite["status"]}


def observe(out: Outcome, answers: dict[str, Any] | None = None) -> dict[str, Any]:
    """Applied, with what the clusters' scalers wrote (``answers``, by resource)."""
    return controllers.World(load_balancers={}).observe(out.desired, owner="qwen", answers=answers)


def scaled(**scaling: Any) -> dict[str, Any]:
    return deployment(scaling={**SCALING, **scaling})


def asleep(cluster_name: str, last: str = "2026-12-07T10:00:00Z") -> dict[str, Any]:
    """What KEDA leaves once it scaled a cluster's engine to zero."""
    return {
        f"{label(cluster_name)}-engine": {
            "spec": {"replicas": 0},
            "status": {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0},
        },
        f"{label(cluster_name)}-scaler": {"status": {"lastActiveTime": last}},
    }


def test_placement_reserves_the_maximum_and_each_cluster_gets_a_scaler() -> None:
    out = step(scaled(), [EU, US])
    assert out.fatal == []
    placed = {p["cluster"]: p["replicas"] for p in out.composite["status"]["placements"]}
    assert sum(placed.values()) == 3
    objects = remote(out, "ScaledObject")
    eu = objects[f"{label('eu-west')}-scaler"]["spec"]
    assert eu["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": remote(out, "Deployment")[f"{label('eu-west')}-engine"]["metadata"]["name"],
    }
    assert (eu["minReplicaCount"], eu["maxReplicaCount"]) == (0, placed["eu-west"])
    assert eu["cooldownPeriod"] == 120
    demand, load = eu["triggers"]
    assert demand["metadata"]["serverAddress"] == PROMETHEUS
    # Demand for every service routing to the eu endpoint, and no other.
    assert 'gen_ai_original_model=~"team-a/chat|team-a/chat-eu"' in demand["metadata"]["query"]
    assert demand["metadata"]["activationThreshold"] == "0"
    assert load["metadata"]["threshold"] == "4"
    us = objects[f"{label('us-east')}-scaler"]["spec"]["triggers"][0]["metadata"]["query"]
    assert "chat-eu" not in us
    # Starting count: replicas (2) within the bounds, spread.
    engines = remote(out, "Deployment")
    assert sum(d["spec"]["replicas"] for d in engines.values()) == 2


def test_a_cluster_whose_engine_may_sleep_answers_its_503_as_json_to_retry() -> None:
    """Where a cluster's share of the minimum is 0, its gateway's own 503 on the route to
    the engine is the fleet's JSON naming the deployment, with Retry-After; a share above
    0 never sleeps and gets none."""
    out = step(scaled(minReplicas=1), [EU, US])
    policies = remote(out, "BackendTrafficPolicy")
    routes = remote(out, "HTTPRoute")
    (sleeper,) = policies
    cluster_label = sleeper.removesuffix("-waking")
    assert f"{cluster_label}-route" in routes
    assert {k.removesuffix("-route") for k in routes} == {label("eu-west"), label("us-east")}
    policy = policies[sleeper]
    route = routes[f"{cluster_label}-route"]["metadata"]
    assert policy["metadata"]["namespace"] == route["namespace"]
    assert policy["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route["name"]}
    ]
    (override,) = policy["spec"]["responseOverride"]
    assert override["source"] == "Local", "an engine's own 503 is the engine's"
    assert override["match"]["statusCodes"] == [{"type": "Value", "value": 503}]
    assert override["response"]["header"] == {"set": [{"name": "Retry-After", "value": "30"}]}
    body = json.loads(override["response"]["body"]["inline"])["error"]
    assert (body["code"], body["model"]) == ("model_unavailable", f"{NS}/{NAME}")
    assert "scaled to zero" in body["message"]


def test_a_fresh_engine_is_not_published_asleep() -> None:
    """Before it ever served, a cluster's endpoint waits for its engine as without scaling."""
    xr = scaled()
    first = step(xr, [EU, US])
    starting = observe(
        first,
        {f"{label('eu-west')}-engine": {"status": {"readyReplicas": 0, "availableReplicas": 0}}},
    )
    second = step(then(xr, first), [EU, US], starting)
    assert list(labels(second)) == ["us-east"]
    minimum = scaled(minReplicas=1, maxReplicas=2)
    out = step(minimum, [EU], services=[])
    served = step(then(minimum, out), [EU], observe(out), services=[])
    assert labels(served) == {"eu-west": {}}, "a minimum above zero never sleeps"


def test_once_the_engine_exists_its_replicas_are_the_scalers() -> None:
    xr = scaled()
    first = step(xr, [EU, US])
    second = step(then(xr, first), [EU, US], observe(first))
    for engine in remote(second, "Deployment").values():
        assert "replicas" not in engine["spec"]


def labels(out: Outcome) -> dict[str, dict[str, str]]:
    """Each published endpoint's scaling labels, by cluster."""
    return {
        e["metadata"]["labels"]["fleetgate.dev/cluster"]: {
            k: v for k, v in e["metadata"]["labels"].items() if k in SCALING_LABELS
        }
        for e in endpoints(out).values()
    }


SCALING_LABELS = ("fleetgate.dev/asleep", "fleetgate.dev/scales-to-zero")
MAY_SLEEP = {"fleetgate.dev/scales-to-zero": "true"}
SLEEPS = MAY_SLEEP | {"fleetgate.dev/asleep": "true"}


def test_a_sleeping_deployment_keeps_its_endpoints_marked_asleep() -> None:
    xr = scaled()
    first = step(xr, [EU, US])
    second = step(then(xr, first), [EU, US], observe(first))
    assert labels(second) == {"eu-west": MAY_SLEEP, "us-east": MAY_SLEEP}
    answers = asleep("eu-west") | asleep("us-east", "2026-12-07T10:05:00Z")
    third = step(then(xr, second), [EU, US], observe(second, answers))
    assert labels(third) == {"eu-west": SLEEPS, "us-east": SLEEPS}
    assert remote(third, "Deployment"), "the engines stay, at zero"
    status = third.composite["status"]
    assert status["replicas"] == {"desired": 0, "ready": 0}
    assert status["scaling"] == {"state": "Idle", "lastRequestTime": "2026-12-07T10:05:00Z"}
    assert third.conditions["ScaledToZero"][:2] == ("True", "Idle")
    assert third.conditions["ReplicasReady"][:2] == ("True", "ScaledToZero")
    assert third.conditions["Scheduled"][:2] == ("True", "AllReplicasPlaced")
    assert not any("withheld" in w for w in third.warnings)
    assert third.xr_ready


def test_a_waking_engine_is_routed_again_once_it_serves() -> None:
    xr = scaled()
    first = step(xr, [EU, US])
    second = step(then(xr, first), [EU, US], observe(first))
    waking = {
        f"{label('eu-west')}-engine": {
            "spec": {"replicas": 1},
            "status": {"replicas": 1, "readyReplicas": 0, "availableReplicas": 0},
        }
    } | asleep("us-east")
    third = step(then(xr, second), [EU, US], observe(second, waking))
    assert labels(third) == {"eu-west": SLEEPS, "us-east": SLEEPS}
    assert third.composite["status"]["scaling"]["state"] == "Waking"
    assert third.conditions["ScaledToZero"][:2] == ("False", "Waking")
    awake = {f"{label('eu-west')}-engine": {"spec": {"replicas": 1}}} | asleep("us-east")
    fourth = step(then(xr, third), [EU, US], observe(third, awake))
    assert labels(fourth) == {"eu-west": MAY_SLEEP, "us-east": SLEEPS}
    assert fourth.composite["status"]["scaling"]["state"] == "Active"
    assert fourth.composite["status"]["replicas"] == {"desired": 1, "ready": 1}


@pytest.mark.parametrize("provider", ["Dynamo", "KubeRay"])
def test_a_provider_that_cannot_scale_is_refused_by_name(provider: str) -> None:
    xr = scaled(minReplicas=1)
    xr["spec"]["provider"] = {"name": provider}
    clusters = [metered("eu-west", providers=(provider,))]
    out = step(xr, clusters)
    status, reason, message = out.conditions["Scheduled"]
    assert (status, reason) == ("False", "ProviderCannotScale")
    assert f"provider {provider} cannot scale" in message
    assert "spec.scaling" in message
    assert remote(out, "ScaledObject") == {}


def test_scaling_to_zero_skips_clusters_without_metrics() -> None:
    bare = cluster("ap-south")
    out = step(scaled(maxReplicas=1), [bare])
    status, reason, message = out.conditions["Scheduled"]
    assert (status, reason) == ("False", "NoCandidateClusters")
    assert "spec.stack.metrics.prometheusAddress" in message
    # With a minimum above zero no metrics are needed to stay up.
    assert step(scaled(minReplicas=1, maxReplicas=1), [bare]).conditions["Scheduled"][0] == "True"


def test_a_cluster_that_loses_its_metrics_runs_its_share_fixed() -> None:
    """Its scaler could read no demand (and, asleep, never wake): none is composed, the
    engine gets its placement back, and a warning names the field."""
    xr = scaled()
    first = step(xr, [EU, US])
    second = step(then(xr, first), [EU, US], observe(first, asleep("eu-west")))
    bare = cluster("eu-west", placement_labels={"region": "eu"})
    third = step(then(xr, second), [bare, US], observe(second, asleep("eu-west")))
    assert list(remote(third, "ScaledObject")) == [f"{label('us-east')}-scaler"]
    engine = remote(third, "Deployment")[f"{label('eu-west')}-engine"]
    placed = {p["cluster"]: p["replicas"] for p in third.composite["status"]["placements"]}
    assert engine["spec"]["replicas"] == placed["eu-west"]
    assert any("eu-west has no spec.stack.metrics.prometheusAddress" in w for w in third.warnings)


def test_everything_is_held_until_the_services_are_looked_up() -> None:
    out = step(scaled(), [EU, US], services=None)
    assert out.conditions["Scheduled"][:2] == ("False", "WaitingForServices")
    assert out.desired == {}


def test_without_a_routing_service_there_is_no_demand() -> None:
    out = step(scaled(), [EU], services=[])
    triggers = remote(out, "ScaledObject")[f"{label('eu-west')}-scaler"]["spec"]["triggers"]
    assert [t["metadata"]["query"] for t in triggers] == ["vector(0)", "vector(0)"]


def test_a_service_that_cannot_be_read_counts_as_not_routing_here() -> None:
    """Its own function reports it; this deployment composes, its demand from the others."""
    broken = service("broken") | {"spec": {"endpoints": [{"selector": {"matchLabels": "x"}}]}}
    out = step(scaled(), [EU], services=[broken, *SERVICES])
    assert out.fatal == []
    triggers = remote(out, "ScaledObject")[f"{label('eu-west')}-scaler"]["spec"]["triggers"]
    query = triggers[0]["metadata"]["query"]
    assert "chat-eu" in query, query
    assert "broken" not in query, query


def test_min_above_max_is_a_fatal_result_naming_the_field() -> None:
    out = step(scaled(minReplicas=4, maxReplicas=2), [EU])
    assert any("minReplicas must not exceed spec.scaling.maxReplicas" in f for f in out.fatal)


@pytest.mark.parametrize(
    ("total", "placements", "expected"),
    [
        (0, [("a", 2), ("b", 1)], {"a": 0, "b": 0}),
        (2, [("a", 2), ("b", 1)], {"a": 1, "b": 1}),
        (3, [("a", 2), ("b", 1)], {"a": 2, "b": 1}),
        (9, [("a", 2), ("b", 1)], {"a": 2, "b": 1}),
    ],
)
def test_shares_spread_before_they_pack(
    total: int, placements: list[tuple[str, int]], expected: dict[str, int]
) -> None:
    assert scaler.shares(total, placements) == expected


def test_idle_after_in_seconds() -> None:
    assert Scaling(maxReplicas=1, idleAfter="1h30m5s").idle_seconds == 5405


def test_the_walk_s_keda_scales_an_idle_target_on_its_own_cluster_only() -> None:
    """What the offline walk plays of KEDA (``sim.controllers.keda``): an idle ScaledObject's
    target at its minimum, Active False; a target with no ScaledObject beside it on its
    cluster keeps what was applied, though another cluster's engine has its name."""
    xr = scaled(minReplicas=0)
    first = step(xr, [EU, US])
    (scaler_eu,) = (
        o["spec"]["forProvider"]["manifest"]
        for k, o in first.desired.items()
        if k == f"{label('eu-west')}-scaler"
    )
    meta = scaler_eu["metadata"]
    world = controllers.World(load_balancers={}, idle={f"{meta['namespace']}/{meta['name']}"})
    without_us = {k: v for k, v in first.desired.items() if k != f"{label('us-east')}-scaler"}
    seen = world.observe(without_us, owner="qwen")

    def remote_of(key: str) -> dict[str, Any]:
        return dict(seen[key]["status"]["atProvider"]["manifest"])

    assert remote_of(f"{label('eu-west')}-engine")["spec"]["replicas"] == 0
    assert remote_of(f"{label('us-east')}-engine")["spec"]["replicas"] > 0
    conditions = remote_of(f"{label('eu-west')}-scaler")["status"]["conditions"]
    assert {c["type"]: c["status"] for c in conditions} == {"Ready": "True", "Active": "False"}
