"""compose-model-deployment, whole responses: placement, workloads, endpoints, status.

Multi-pass cases feed the desired state back as Crossplane observes it: every
composed Object with its remote object (and that object's status) in
``status.atProvider.manifest`` and a Ready condition worked out from its
readiness policy with a real CEL implementation, as provider-kubernetes does.
"""

import copy
import dataclasses
import datetime
import random
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from fleetgate.core import names, pacing
from fleetgate.model_deployment import placement
from fleetgate.model_deployment.composer import compose
from sim import controllers, pipeline
from tests.support import Outcome, request, run

NS = "team-a"
NAME = "qwen"
SERVED = f"{NS}/{NAME}"
ARGS = ["Qwen/Qwen3-8B", "--served-model-name", "$(FLEETGATE_SERVED_MODEL_NAME)"]


def cluster(
    name: str,
    *,
    gpus: int = 8,
    providers: tuple[str, ...] = ("Direct", "LLMD"),
    labels: Mapping[str, str] | None = None,
    placement_labels: Mapping[str, str] | None = None,
    schedulable: bool = True,
    drained: bool = False,
    provider_config: str | None = "",
    created: str | None = None,
) -> dict[str, Any]:
    """An InferenceCluster as compose-inference-cluster publishes it."""
    status: dict[str, Any] = {
        "conditions": [
            {"type": "Schedulable", "status": "True" if schedulable else "False", "reason": "r"}
        ],
    }
    if schedulable:
        status["gateway"] = {
            "address": "203.0.113.10",
            "hostname": names.cluster_hostname(name),
        }
    if provider_config is not None:
        status["providerConfigRef"] = {"name": provider_config or f"pc-{name}"}
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if created is not None:
        metadata["creationTimestamp"] = created
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": metadata,
        "spec": {
            "credentials": {"providerConfigName": f"pc-{name}"},
            "capacity": {"gpus": gpus, "gpuType": "nvidia-h100"},
            "providers": list(providers),
            "schedulable": not drained,
            "placement": {"metadata": {"labels": dict(placement_labels or {})}},
        },
        "status": status,
    }


def _ago(seconds: float) -> str:
    """A creationTimestamp ``seconds`` before now, as the API server writes it."""
    at = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def deployment(
    *,
    status: dict[str, Any] | None = None,
    namespace: str = NS,
    name: str = NAME,
    **spec: Any,
) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": {"name": "Qwen/Qwen3-8B"},
        "engine": {"type": "vllm", "args": ARGS},
        "provider": {"name": "Direct"},
        "resources": {"gpu": {"count": 1}},
        "replicas": 2,
    }
    base.update(spec)
    xr: dict[str, Any] = {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": base,
    }
    if status is not None:
        xr["status"] = status
    return xr


def placements(*pairs: tuple[str, int]) -> dict[str, Any]:
    return {"placements": [{"cluster": c, "replicas": n} for c, n in pairs]}


# --- observing as Crossplane and provider-kubernetes do ---------------------------


def observe(
    desired: Mapping[str, dict[str, Any]],
    *,
    ready_replicas: Mapping[str, int] | None = None,
    exists: Callable[[str], bool] = lambda _: True,
    owner: str = NAME,
    previous: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The desired state as it looks once applied (keyed by composition resource name).

    ``ready_replicas`` overrides the ready count of an engine Deployment by key. Resources
    in ``previous`` keep the names the API server gave them; new ones get one from
    ``owner``'s name, as Crossplane generates it.
    """
    clusters = controllers.World(load_balancers={})
    return clusters.observe(
        desired, owner=owner, previous=previous, ready_replicas=ready_replicas, exists=exists
    )


def required(*clusters: dict[str, Any], peers: tuple[dict[str, Any], ...] = ()) -> Any:
    return {"clusters": list(clusters), "deployments": list(peers)}


def step(
    xr: dict[str, Any], clusters: list[dict[str, Any]], observed: dict[str, Any] | None = None
) -> Outcome:
    return run(compose, request(xr, required=required(*clusters), observed=observed))


def then(xr: dict[str, Any], out: Outcome) -> dict[str, Any]:
    """The XR on the next pass: its spec, and the status this pass wrote."""
    nxt = copy.deepcopy(xr)
    nxt["status"] = out.composite["status"]
    return nxt


def serving(xr: dict[str, Any], clusters: list[dict[str, Any]]) -> tuple[dict[str, Any], Outcome]:
    """Two passes: placed, then serving. The XR as the second pass left it, and its outcome."""
    first = step(xr, clusters)
    second = step(then(xr, first), clusters, observe(first.desired))
    return then(xr, second), second


def remote(out: Outcome, kind: str) -> dict[str, dict[str, Any]]:
    """Composed remote objects of ``kind``, by composition resource name."""
    return {
        key: obj["spec"]["forProvider"]["manifest"]
        for key, obj in out.desired.items()
        if obj["kind"] == "Object" and obj["spec"]["forProvider"]["manifest"]["kind"] == kind
    }


def endpoints(out: Outcome) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in out.desired.items() if v["kind"] == "ModelEndpoint"}


def engine_replicas(out: Outcome) -> dict[str, int]:
    """Cluster → engine replicas, read from the composed Deployments' labels and names."""
    result = {}
    for key, manifest in remote(out, "Deployment").items():
        if key.endswith("-engine"):
            result[key.removesuffix("-engine")] = int(manifest["spec"]["replicas"])
    return result


def label(name: str) -> str:
    return names.cluster_label(name)


EU = cluster("eu-west", placement_labels={"region": "eu", "tier": "cluster"})
US = cluster("us-east", placement_labels={"region": "us"})


# --- passes --------------------------------------------------------------------


def test_first_pass_places_and_runs_but_publishes_no_endpoint_yet() -> None:
    xr = deployment(template={"metadata": {"labels": {"tier": "template", "team": "a"}}})
    out = step(xr, [EU, US])
    assert out.fatal == []
    assert engine_replicas(out) == {label("eu-west"): 1, label("us-east"): 1}
    assert sorted(m["kind"] for m in remote(out, "Service").values()) == ["Service", "Service"]
    assert len(remote(out, "HTTPRoute")) == 2
    assert endpoints(out) == {}
    assert out.conditions["Scheduled"][:2] == ("True", "AllReplicasPlaced")
    assert out.conditions["ReplicasReady"][:2] == ("False", "ReplicasNotReady")
    assert out.composite["status"] == {
        "servedModelName": SERVED,
        "engine": {"type": "vllm", "selectedReason": "set in spec.engine.type"},
        "provider": {"name": "Direct", "selectedReason": "set in spec.provider.name"},
        "placements": [
            {"cluster": "eu-west", "replicas": 1},
            {"cluster": "us-east", "replicas": 1},
        ],
        "replicas": {"desired": 2, "ready": 0},
    }
    assert out.composite_ready == "READY_FALSE"
    assert any("withheld" in w for w in out.warnings)
    assert all(obj["kind"] == "Object" for obj in out.desired.values())


def test_endpoints_follow_ready_workloads_with_label_precedence() -> None:
    xr = deployment(template={"metadata": {"labels": {"tier": "template", "team": "a"}}})
    first = step(xr, [EU, US])
    second = step(then(xr, first), [EU, US], observe(first.desired))
    published = endpoints(second)
    assert sorted(published) == [
        f"{label('eu-west')}-endpoint",
        f"{label('us-east')}-endpoint",
    ]
    eu = published[f"{label('eu-west')}-endpoint"]
    assert eu["metadata"]["namespace"] == NS
    assert eu["metadata"]["labels"] == {
        "fleetgate.dev/cluster": "eu-west",
        "fleetgate.dev/deployment": NAME,
        "region": "eu",
        "team": "a",
        "tier": "cluster",
    }
    assert eu["spec"] == {
        "origin": f"https://{names.cluster_hostname('eu-west')}",
        "api": {"schema": "OpenAI", "prefix": f"/{NS}/{NAME}/v1"},
        "model": SERVED,
    }
    us = published[f"{label('us-east')}-endpoint"]
    assert us["metadata"]["labels"]["region"] == "us"
    assert us["metadata"]["labels"]["tier"] == "template"
    assert second.conditions["ReplicasReady"][:2] == ("True", "AllReplicasReady")
    assert second.composite["status"]["replicas"] == {"desired": 2, "ready": 2}
    assert second.composite_ready == "READY_FALSE", "the endpoints are not ready yet"

    third = step(then(xr, second), [EU, US], observe(second.desired))
    assert third.xr_ready
    assert third.warnings == []
    assert third.desired.keys() == second.desired.keys()


def test_an_endpoint_is_withdrawn_when_its_workload_stops_serving() -> None:
    xr, second = serving(deployment(), [EU, US])
    eu_engine = f"{label('eu-west')}-engine"
    broken = observe(second.desired, ready_replicas={eu_engine: 0})
    third = step(xr, [EU, US], broken)
    assert list(endpoints(third)) == [f"{label('us-east')}-endpoint"]
    assert third.composite["status"]["replicas"] == {"desired": 2, "ready": 1}
    assert eu_engine in third.desired, "the workload itself stays"
    assert third.conditions["ReplicasReady"][0] == "False"
    assert "eu-west: engine" in third.conditions["ReplicasReady"][2]


def test_an_unschedulable_cluster_keeps_its_workload_but_not_its_endpoint() -> None:
    xr, second = serving(deployment(), [EU, US])
    eu_down = cluster("eu-west", schedulable=False)
    third = step(xr, [eu_down, US], observe(second.desired))
    assert engine_replicas(third) == {label("eu-west"): 1, label("us-east"): 1}
    assert list(endpoints(third)) == [f"{label('us-east')}-endpoint"]
    assert "eu-west: cluster not Schedulable" in third.conditions["ReplicasReady"][2]


def test_a_cluster_whose_reconcile_failed_keeps_its_endpoint() -> None:
    """Crossplane marks a failed XR's conditions Unknown (a function restarting or
    changing revision): its Schedulable says nothing, so what it serves stays published
    (withdrawing would delete the ModelEndpoint and take the model off every gateway)."""
    xr, second = serving(deployment(), [EU, US])
    eu_failed = pipeline.after_failed_reconcile(EU)
    third = step(xr, [eu_failed, US], observe(second.desired))
    assert third.desired.keys() == second.desired.keys()
    assert engine_replicas(third) == {label("eu-west"): 1, label("us-east"): 1}


def test_a_cluster_whose_reconcile_failed_takes_no_new_replicas() -> None:
    """Its Schedulable might have been False: a new replica goes where it is known True."""
    xr, second = serving(deployment(replicas=1), [US])
    xr["spec"]["replicas"] = 2
    third = step(xr, [pipeline.after_failed_reconcile(EU), US], observe(second.desired))
    assert engine_replicas(third) == {label("us-east"): 2}


def test_a_drained_cluster_loses_its_replicas_and_endpoint() -> None:
    xr, second = serving(deployment(), [EU, US])
    eu_drained = cluster("eu-west", drained=True)
    third = step(xr, [eu_drained, US], observe(second.desired))
    assert engine_replicas(third) == {label("us-east"): 2}
    assert not any(k.startswith(label("eu-west")) for k in third.desired)
    assert third.composite["status"]["placements"] == [{"cluster": "us-east", "replicas": 2}]
    assert any("moved off cluster eu-west: drained" in w for w in third.warnings)


def test_scale_up_and_down_across_passes() -> None:
    """Up, the new replicas spread before they pack; down, they leave the most loaded
    cluster first; ties go by the deployment's own order of the clusters."""
    clusters = [EU, US, cluster("ap-south")]
    first, second, third = sorted(
        ("eu-west", "us-east", "ap-south"), key=lambda c: placement.rank(f"{NS}/{NAME}", c)
    )
    xr = deployment(replicas=2)
    observed: dict[str, Any] | None = None
    seen = []
    for replicas in (2, 5, 5, 1, 0):
        xr["spec"]["replicas"] = replicas
        out = step(xr, clusters, observed)
        seen.append({p["cluster"]: p["replicas"] for p in out.composite["status"]["placements"]})
        xr, observed = then(xr, out), observe(out.desired)
    assert seen == [
        {first: 1, second: 1},
        {first: 2, second: 2, third: 1},
        {first: 2, second: 2, third: 1},
        {first: 1},
        {},
    ]
    assert out.desired == {}
    assert out.conditions["Scheduled"][:2] == ("True", "AllReplicasPlaced")
    assert out.xr_ready


def test_a_new_cluster_moves_nothing() -> None:
    xr = deployment(status=placements(("eu-west", 2)))
    out = step(xr, [EU, US, cluster("aa-first")])
    assert engine_replicas(out) == {label("eu-west"): 2}


def test_llmd_fronts_the_engines_with_an_inference_pool() -> None:
    xr = deployment(provider={"name": "LLMD"}, replicas=1)
    first = step(xr, [EU])
    kinds = sorted(m["kind"] for m in remote(first, "InferencePool").values())
    assert kinds == ["InferencePool"]
    (route,) = remote(first, "HTTPRoute").values()
    assert route["spec"]["rules"][0]["backendRefs"][0]["kind"] == "InferencePool"
    second = step(then(xr, first), [EU], observe(first.desired))
    assert len(endpoints(second)) == 1
    assert second.conditions["ReplicasReady"][0] == "True"


def test_other_deployments_gpus_are_counted() -> None:
    peer = deployment(
        name="big",
        namespace="team-b",
        status=placements(("eu-west", 2)),
        resources={"gpu": {"count": 4}},
    )
    xr = deployment(replicas=1)
    out = run(compose, request(xr, required=required(EU, US, peers=(peer, xr))))
    assert engine_replicas(out) == {label("us-east"): 1}


def test_an_unreadable_peer_is_a_warning_not_a_failure() -> None:
    peer = deployment(name="odd", status={"placements": "everywhere"})
    out = run(compose, request(deployment(), required=required(EU, peers=(peer,))))
    assert out.fatal == []
    assert any("ModelDeployment odd: unreadable" in w for w in out.warnings)


def test_warns_when_the_engine_ignores_the_served_model_name() -> None:
    xr = deployment(engine={"type": "vllm", "args": ["Qwen/Qwen3-8B"]})
    out = step(xr, [EU])
    assert any("404" in w for w in out.warnings)
    (engine,) = (m for k, m in remote(out, "Deployment").items() if k.endswith("-engine"))
    env = engine["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "FLEETGATE_SERVED_MODEL_NAME", "value": SERVED}


def test_a_cpu_model() -> None:
    cpu = cluster("cpu-pool", gpus=0, providers=("Direct",))
    xr = deployment(
        engine={
            "type": "llamacpp",
            "args": ["-hf", "Qwen/Qwen3-0.6B-GGUF", "-a", "$(FLEETGATE_SERVED_MODEL_NAME)"],
        },
        resources={},
        replicas=2,
    )
    out = step(xr, [cpu])
    assert out.warnings == [
        "ModelEndpoint for cluster cpu-pool withheld: waiting for its workload to be created"
    ]
    (engine,) = (m for k, m in remote(out, "Deployment").items() if k.endswith("-engine"))
    container = engine["spec"]["template"]["spec"]["containers"][0]
    assert "resources" not in container
    assert container["ports"][0]["containerPort"] == 8080


# --- what cannot be placed, chosen or looked up ----------------------------------


@dataclasses.dataclass(frozen=True)
class ConditionCase:
    id: str
    xr: dict[str, Any]
    clusters: list[dict[str, Any]]
    want: tuple[str, str]
    fragment: str


CONDITIONS = [
    ConditionCase(
        "no clusters",
        deployment(),
        clusters=[],
        want=("False", "NoCandidateClusters"),
        fragment="no InferenceClusters",
    ),
    ConditionCase(
        "provider nowhere installed",
        deployment(provider={"name": "LLMD"}),
        clusters=[cluster("a", providers=("Direct",))],
        want=("False", "NoCandidateClusters"),
        fragment="a: provider LLMD not installed",
    ),
    ConditionCase(
        "not enough GPUs",
        deployment(replicas=3, resources={"gpu": {"count": 4}}),
        clusters=[cluster("a", gpus=8)],
        want=("False", "InsufficientCapacity"),
        fragment="2 of 3 replicas placed (a=2); 1 could not be placed: a: 0 of 8 GPUs free",
    ),
    ConditionCase(
        "engine unset: the preferred one the named provider runs",
        deployment(engine={"args": ARGS}),
        clusters=[EU],
        want=("True", "AllReplicasPlaced"),
        fragment="2 of 2 replicas placed",
    ),
    ConditionCase(
        "provider unset and only explicit-only providers installed",
        deployment(provider={}),
        clusters=[EU],
        want=("False", "NoCandidateProvider"),
        fragment="Direct: has no selection rules",
    ),
    ConditionCase(
        "provider named but installed nowhere",
        deployment(provider={"name": "KAITO"}),
        clusters=[EU],
        want=("False", "NoCandidateClusters"),
        fragment="eu-west: provider KAITO not installed",
    ),
    ConditionCase(
        "provider cannot serve a CPU model",
        deployment(provider={"name": "LLMD"}, resources={}),
        clusters=[EU],
        want=("False", "ProviderCannotServe"),
        fragment="provider LLMD does not run vllm on CPU",
    ),
    ConditionCase(
        "provider cannot serve disaggregated",
        deployment(provider={"name": "LLMD"}, servingMode="Disaggregated"),
        clusters=[EU],
        want=("False", "ProviderCannotServe"),
        fragment="provider LLMD does not run vllm in servingMode Disaggregated",
    ),
    ConditionCase(
        "a cluster not open long after it joined is not waited for",
        deployment(),
        clusters=[EU, cluster("us-east", schedulable=False, created=_ago(3600))],
        want=("True", "AllReplicasPlaced"),
        fragment="2 of 2 replicas placed: eu-west=2",
    ),
    ConditionCase(
        "scaled to zero",
        deployment(replicas=0),
        clusters=[EU],
        want=("True", "AllReplicasPlaced"),
        fragment="0 of 0 replicas placed",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CONDITIONS])
def test_scheduled_condition(case: ConditionCase) -> None:
    out = step(case.xr, case.clusters)
    status, reason, message = out.conditions["Scheduled"]
    assert (status, reason) == case.want
    assert case.fragment in message
    assert out.fatal == []
    if status == "False":
        assert any(case.fragment in w for w in out.warnings), "a not-yet also says why as a warning"


def test_a_cluster_still_joining_the_fleet_is_waited_for() -> None:
    # Registered a minute before this test runs (not before the module was
    # collected: a long suite would age it past the joining window).
    joining = cluster("us-east", schedulable=False, created=_ago(60))
    out = step(deployment(), [EU, joining])
    status, reason, message = out.conditions["Scheduled"]
    assert (status, reason) == ("False", "WaitingForJoiningClusters")
    assert message == (
        "1 of 2 replicas placed (eu-west=1); 1 wait for clusters joining the fleet: "
        "us-east: joining the fleet, 1 replica(s) wait for it"
    )
    assert any(message in w for w in out.warnings)


def test_sticky_choice_survives_unsetting_the_field() -> None:
    status = {
        "engine": {"type": "vllm", "selectedReason": "set in spec.engine.type"},
        "provider": {"name": "LLMD", "selectedReason": "set in spec.provider.name"},
    }
    out = step(deployment(engine={"args": ARGS}, provider={}, status=status), [EU])
    assert out.composite["status"]["provider"] == status["provider"]
    assert len(remote(out, "InferencePool")) == 1


HOLDS = [
    pytest.param(deployment(), {"deployments": []}, id="clusters not looked up yet"),
    pytest.param(
        deployment(replicas=3), {"clusters": [EU, US]}, id="deployments not looked up yet"
    ),
    pytest.param(
        deployment(provider={"name": "Direct", "overrides": {"spec": {"replicas": 9}}}),
        required(EU, US),
        id="an override is refused",
    ),
]


@pytest.mark.parametrize(("xr", "resolved"), HOLDS)
def test_what_ran_keeps_running_while_a_step_cannot_proceed(
    xr: dict[str, Any], resolved: Any
) -> None:
    _, second = serving(deployment(), [EU, US])
    observed = observe(second.desired)
    xr["status"] = second.composite["status"]
    out = run(compose, request(xr, required=resolved, observed=observed))
    assert out.desired.keys() == observed.keys()
    for key, obj in out.desired.items():
        assert obj["spec"] == observed[key]["spec"]
        assert "status" not in obj
    for field in ("placements", "engine", "provider"):
        assert out.composite["status"][field] == second.composite["status"][field]
    assert out.conditions["Scheduled"][0] == "False"
    assert out.composite_ready == "READY_FALSE"


def test_a_cluster_without_provider_config_keeps_its_objects() -> None:
    xr = deployment()
    first = step(xr, [EU, US])
    observed = observe(first.desired)
    eu_blank = cluster("eu-west", provider_config=None)
    out = step(then(xr, first), [eu_blank, US], observed)
    eu_keys = {k for k in observed if k.startswith(label("eu-west"))}
    assert eu_keys
    assert eu_keys <= out.desired.keys()
    for key in eu_keys:
        assert out.desired[key]["spec"] == observed[key]["spec"]


def test_requirements_are_every_cluster_and_every_deployment() -> None:
    out = step(deployment(), [EU])
    clusters, deployments = out.requirements["clusters"], out.requirements["deployments"]
    assert (clusters.api_version, clusters.kind) == ("fleetgate.dev/v1alpha1", "InferenceCluster")
    assert (deployments.kind, deployments.HasField("namespace")) == ("ModelDeployment", False)
    for selector in (clusters, deployments):
        assert selector.HasField("match_labels"), "an unset match selects nothing"
        assert dict(selector.match_labels.labels) == {}


@pytest.mark.parametrize(
    ("spec", "placed", "reads_peers"),
    [
        pytest.param({}, (), True, id="GPU replicas to place"),
        pytest.param({}, (("eu-west", 1), ("us-east", 1)), False, id="placed in full"),
        pytest.param({"replicas": 3}, (("eu-west", 1), ("us-east", 1)), True, id="scaled up"),
        pytest.param({"replicas": 1}, (("eu-west", 1), ("us-east", 1)), False, id="scaled down"),
        pytest.param({}, (("eu-west", 1), ("gone", 1)), True, id="a cluster gone"),
        pytest.param({"resources": {}}, (), False, id="no GPUs"),
    ],
)
def test_other_deployments_are_read_only_while_gpu_replicas_wait_for_a_place(
    spec: dict[str, Any], placed: tuple[tuple[str, int], ...], reads_peers: bool
) -> None:
    """Capacity is a promise for new work: a deployment placed in full, or without GPUs, does
    not require its peers, so their writes do not wake it (at D deployments coming up at
    once, D x D wake-ups otherwise) and its calls do not read D peers each."""
    xr = deployment(status=placements(*placed), **spec)
    out = run(compose, request(xr, required={"clusters": [EU, US]}))
    assert ("deployments" in out.requirements) == reads_peers
    assert (out.conditions["Scheduled"][1] == "WaitingForClusters") == reads_peers


SELECTED = [
    pytest.param({}, id="Direct, named"),
    pytest.param({"provider": {}, "engine": {"args": ARGS}}, id="selected: Dynamo"),
    pytest.param({"provider": {}, "resources": {"gpu": {"count": 2}}}, id="selected: KubeRay"),
    pytest.param({"provider": {}, "engine": {}, "resources": {}}, id="selected: KAITO"),
    pytest.param(
        {"provider": {"name": "Dynamo"}, "servingMode": "Disaggregated"},
        id="Dynamo, disaggregated",
    ),
]


@pytest.mark.parametrize("spec", SELECTED)
def test_same_inputs_give_byte_identical_output(spec: dict[str, Any]) -> None:
    every = ("Direct", "LLMD", "KAITO", "Dynamo", "KubeRay")
    clusters = [cluster(f"c{i}", gpus=i % 4, providers=every) for i in range(12)]
    xr = deployment(replicas=7, status=placements(("c3", 1), ("c5", 2)), **spec)
    first = step(xr, clusters)
    assert first.fatal == []
    assert first.desired, "something to compare"
    shuffled = clusters[:]
    random.Random(7).shuffle(shuffled)
    again = step(xr, shuffled)
    assert first.rsp.SerializeToString(deterministic=True) == again.rsp.SerializeToString(
        deterministic=True
    )


@dataclasses.dataclass(frozen=True)
class MalformedCase:
    id: str
    xr: dict[str, Any]
    field: str
    clusters: list[dict[str, Any]] = dataclasses.field(default_factory=lambda: [EU])


MALFORMED = [
    MalformedCase("model missing", deployment(model=None), field="spec.model"),
    MalformedCase("replicas negative", deployment(replicas=-1), field="spec.replicas"),
    MalformedCase("replicas absurd", deployment(replicas=10**9), field="spec.replicas"),
    MalformedCase("engine type unknown", deployment(engine={"type": "ollama"}),
                  field="spec.engine.type"),
    MalformedCase("gpu count wrong type", deployment(resources={"gpu": {"count": "two"}}),
                  field="spec.resources.gpu.count"),
    MalformedCase("env not a list", deployment(engine={"type": "vllm", "env": "A=1"}),
                  field="spec.engine.env"),
    MalformedCase("status placements malformed",
                  deployment(status={"placements": [{"cluster": "a", "replicas": "x"}]}),
                  field="status.placements[0].replicas"),
    MalformedCase("bad port", deployment(engine={"type": "vllm", "args": ["--port", "http"]}),
                  field="spec.engine.args[1]"),
    MalformedCase("cluster malformed", deployment(), field="InferenceCluster eu-west",
                  clusters=[{**EU, "spec": {**EU["spec"], "capacity": {"gpus": -1}}}]),
    MalformedCase("cluster listed twice", deployment(),
                  field="InferenceCluster eu-west: metadata.name", clusters=[EU, EU]),
    MalformedCase("namespace missing", {**deployment(), "metadata": {"name": NAME}},
                  field="metadata.namespace"),
    MalformedCase("unicode name", deployment(name="grün"), field=""),
    MalformedCase("overrides not an object",
                  deployment(provider={"name": "Direct", "overrides": ["x"]}),
                  field="spec.provider.overrides"),
    MalformedCase("serving mode unknown", deployment(servingMode="Split"),
                  field="spec.servingMode"),
    MalformedCase("provider unknown", deployment(provider={"name": "Triton"}),
                  field="spec.provider.name"),
    MalformedCase("template label key not a label key",
                  deployment(template={"metadata": {"labels": {"my team": "ml"}}}),
                  field="spec.template.metadata.labels.my team (the key)"),
    MalformedCase("template label value not a label value",
                  deployment(template={"metadata": {"labels": {"team": "m l"}}}),
                  field="spec.template.metadata.labels.team"),
    MalformedCase("cluster selector key not a label key",
                  deployment(placement={"clusterSelector": {"matchLabels": {"Region/x": "eu"}}}),
                  field="spec.placement.clusterSelector.matchLabels.Region/x (the key)"),
    MalformedCase("cluster placement label key not a label key", deployment(),
                  field="InferenceCluster eu-west: spec.placement.metadata.labels.-x (the key)",
                  clusters=[{**EU, "spec": {**EU["spec"],
                                            "placement": {"metadata": {"labels": {"-x": "1"}}}}}]),
]  # fmt: skip


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in MALFORMED])
def test_malformed_input_is_a_fatal_result_naming_the_field(case: MalformedCase) -> None:
    out = step(case.xr, case.clusters)
    if not case.field:  # accepted by the model: must compose without an exception
        assert all("internal error" not in f for f in out.fatal)
        return
    assert len(out.fatal) == 1, out.results
    assert case.field in out.fatal[0]
    assert out.desired == {}


# --- KAITO and node auto-provisioning (KAITO v0.12.0 inferenceset_validation.go:105-124) ---


def kaito_cluster(name: str, **kaito: Any) -> dict[str, Any]:
    found = cluster(name, providers=("Direct", "KAITO"))
    if kaito:
        found["spec"]["kaito"] = kaito
    return found


KAITO_MD: dict[str, Any] = {
    "provider": {"name": "KAITO"},
    "engine": {"type": "llamacpp"},
    "resources": {},
}


def _workspaces(out: Outcome) -> list[dict[str, Any]]:
    """What KAITO makes each replica's Workspace from: the InferenceSets' templates."""
    return [i["spec"]["template"] for i in remote(out, "InferenceSet").values()]


def test_kaito_is_not_placed_where_its_webhook_would_refuse_the_workspace() -> None:
    # A default KAITO install provisions nodes and refuses a Workspace without
    # resource.instanceType: nothing is composed there, and Scheduled says what to set.
    out = step(deployment(replicas=1, **KAITO_MD), [kaito_cluster("eu-west")])
    assert out.fatal == []
    assert _workspaces(out) == []
    status, reason, message = out.conditions["Scheduled"]
    assert (status, reason) == ("False", "NoCandidateClusters")
    assert "eu-west: KAITO provisions nodes there" in message
    assert "spec.kaito.instanceType" in message
    assert "spec.provider.overrides.resource.instanceType" in message


@pytest.mark.parametrize(
    ("kaito", "overrides", "instance_type"),
    [
        pytest.param(
            {"instanceType": "Standard_D8s_v5"}, None, "Standard_D8s_v5", id="cluster's type"
        ),
        pytest.param(
            {"instanceType": "Standard_D8s_v5"},
            {"resource": {"instanceType": "Standard_D16s_v5"}},
            "Standard_D16s_v5",
            id="override wins",
        ),
        pytest.param(
            {},
            {"resource": {"instanceType": "Standard_D16s_v5"}},
            "Standard_D16s_v5",
            id="override only",
        ),
        pytest.param({"nodeAutoProvisioning": False}, None, None, id="own nodes: none"),
    ],
)
def test_kaito_workspace_instance_type_follows_the_cluster(
    kaito: dict[str, Any], overrides: dict[str, Any] | None, instance_type: str | None
) -> None:
    provider: dict[str, Any] = {"name": "KAITO"}
    if overrides is not None:
        provider["overrides"] = overrides
    md = deployment(replicas=1, **{**KAITO_MD, "provider": provider})
    out = step(md, [kaito_cluster("eu-west", **kaito)])
    (workspace,) = _workspaces(out)
    assert workspace["resource"].get("instanceType") == instance_type
    assert out.conditions["Scheduled"][0] == "True"


def test_kaito_on_own_nodes_refuses_an_instance_type_override() -> None:
    provider = {"name": "KAITO", "overrides": {"resource": {"instanceType": "Standard_D16s_v5"}}}
    md = deployment(replicas=1, **{**KAITO_MD, "provider": provider})
    out = step(md, [kaito_cluster("eu-west", nodeAutoProvisioning=False)])
    assert _workspaces(out) == []
    message = out.conditions["Scheduled"][2]
    assert "spec.kaito.nodeAutoProvisioning: false" in message
    assert "remove spec.provider.overrides.resource.instanceType" in message


def test_kaito_goes_to_the_cluster_that_accepts_it() -> None:
    clusters = [kaito_cluster("a-default"), kaito_cluster("b-own", nodeAutoProvisioning=False)]
    out = step(deployment(replicas=2, **KAITO_MD), clusters)
    assert out.composite["status"]["placements"] == [{"cluster": "b-own", "replicas": 2}]


def test_kaito_replicas_already_running_stay() -> None:
    # Rule 1: what runs stays. Only new replicas are judged by the cluster's KAITO.
    md = deployment(replicas=1, status=placements(("eu-west", 1)), **KAITO_MD)
    out = step(md, [kaito_cluster("eu-west")])
    assert out.composite["status"]["placements"] == [{"cluster": "eu-west", "replicas": 1}]


# --- propagation: watched Objects, and a deliberate TTL --------------------------


def test_objects_whose_readiness_is_read_back_are_watched() -> None:
    out = step(deployment(provider={"name": "LLMD"}), [EU])
    objects = {k: o for k, o in out.desired.items() if o["kind"] == "Object"}
    for key, obj in objects.items():
        reads = obj["spec"]["readiness"] != {"policy": "SuccessfulCreate"}
        assert obj["spec"].get("watch", False) is reads, key
    kinds = {o["spec"]["forProvider"]["manifest"]["kind"] for o in objects.values()}
    watched = {
        o["spec"]["forProvider"]["manifest"]["kind"]
        for o in objects.values()
        if o["spec"].get("watch")
    }
    assert {"Deployment", "InferencePool", "HTTPRoute"} <= watched < kinds


def test_ttl_is_short_while_waiting_and_longer_once_serving() -> None:
    xr = deployment()
    first = step(xr, [EU])
    assert first.rsp.meta.ttl.ToSeconds() == pacing.WAITING_MIN.total_seconds()
    nxt, second = serving(xr, [EU])
    assert second.composite_ready == "READY_FALSE", "the endpoints are not ready yet"
    assert second.rsp.meta.ttl.ToSeconds() == pacing.WAITING_MIN.total_seconds()
    third = step(nxt, [EU], observe(second.desired))
    assert third.xr_ready
    assert third.rsp.meta.ttl.ToSeconds() == pacing.SETTLED.total_seconds()
    waiting = run(compose, request(xr))  # clusters not looked up yet
    assert waiting.rsp.meta.ttl.ToSeconds() == pacing.WAITING_MIN.total_seconds()
