"""KAITO: replicas, what is reported running, and changes KAITO would not apply.

At KAITO v0.12.0 a Workspace is one inference instance (its deprecated
``resource.count`` is a node count, api/v1beta1/workspace_types.go:27-31), an
InferenceSet's ``spec.replicas`` is how many run
(api/v1beta1/inferenceset_types.go:128-132), and its ``status.readyReplicas``
how many serve (pkg/inferenceset/inferenceset_controller.go:177-191, 429-434).
What KAITO never changes on a running replica (the template, the node selector;
a Workspace's webhook refuses changing count, labelSelector, instanceType,
preset: api/v1beta1/workspace_validation.go:780-823, 889-901) is a revision:
changing it replaces the InferenceSet, never updates it in place.
"""

import json
import re
from typing import Any, NamedTuple

import pytest

from fleetgate.core.observed import Observed
from fleetgate.model_deployment.providers import PROVIDERS
from fleetgate.model_deployment.providers.base import Manifest, RemotePart, Workload
from sim import controllers
from tests.support import Outcome
from tests.unit.test_model_deployment import NAME, cluster, deployment, remote, step, then
from tests.unit.test_model_deployment_renderers import LONG, engine, workload

KAITO = PROVIDERS["KAITO"]
DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?$")


def llamacpp(**kw: Any) -> Workload:
    return engine(workload(gpus=0, model="Qwen/Qwen3-0.6B-GGUF:Q8_0", **kw), type="llamacpp")


def inference_set(parts: tuple[RemotePart, ...]) -> RemotePart:
    (found,) = [p for p in parts if p.manifest["kind"] == "InferenceSet"]
    return found


def by_kind(parts: tuple[RemotePart, ...]) -> dict[str, Manifest]:
    return {p.manifest["kind"]: p.manifest for p in parts}


# --- replicas are inference instances ----------------------------------------------


@pytest.mark.parametrize("replicas", [1, 3])
@pytest.mark.parametrize(
    "shape",
    [pytest.param(workload, id="vLLM preset"), pytest.param(llamacpp, id="llama.cpp template")],
)
def test_kaito_runs_spec_replicas_as_inference_instances(shape: Any, replicas: int) -> None:
    parts = KAITO.render(shape(replicas=replicas)).parts
    kinds = sorted(p.manifest["kind"] for p in parts)
    assert "Workspace" not in kinds, "Fleetgate writes no Workspace: KAITO makes one per replica"
    iset = inference_set(parts).manifest
    assert (iset["apiVersion"], iset["kind"]) == ("kaito.sh/v1beta1", "InferenceSet")
    assert iset["spec"]["replicas"] == replicas
    assert "count" not in iset["spec"]["template"]["resource"], "a deprecated node count"


@pytest.mark.parametrize(
    "shape",
    [pytest.param(workload, id="vLLM preset"), pytest.param(llamacpp, id="llama.cpp template")],
)
def test_kaito_route_reaches_the_serving_pod_of_every_replica(shape: Any) -> None:
    rendered = KAITO.render(shape(replicas=3))
    objects = by_kind(rendered.parts)
    service = objects["Service"]
    assert rendered.backend_ref == {
        "group": "",
        "kind": "Service",
        "name": service["metadata"]["name"],
        "port": 80,
    }
    # What KAITO's own InferencePool for an InferenceSet selects (manifests.go:420-431).
    assert service["spec"]["selector"] == {
        "inferenceset.kaito.sh/created-by": objects["InferenceSet"]["metadata"]["name"],
        "apps.kubernetes.io/pod-index": "0",
    }
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (80, 5000)


def test_kaito_names_fit_what_kaito_derives_from_them() -> None:
    # A child Workspace is ``<inferenceset>-`` and 5 characters (inferenceset.go:160);
    # KAITO names its StatefulSet, Services and pods after it.
    rendered = KAITO.render(workload(name=LONG))
    objects = by_kind(rendered.parts)
    iset = objects["InferenceSet"]["metadata"]["name"]
    assert len(iset) + len("-abcde") <= 40
    for manifest in objects.values():
        assert DNS_LABEL.match(manifest["metadata"]["name"]), manifest["metadata"]["name"]
        assert len(manifest["metadata"]["name"]) <= 63


# --- ready replicas: what KAITO says runs -------------------------------------------


class Ready(NamedTuple):
    remote_status: dict[str, Any] | None  # the InferenceSet's status; None: not observed
    ready: int


READY = {
    "not observed yet": Ready(None, 0),
    "created, nothing reported": Ready({}, 0),
    "status.replicas is the desired count, not the running one": Ready({"replicas": 3}, 0),
    "one of three ready": Ready(
        {
            "replicas": 3,
            "readyReplicas": 1,
            "conditions": [{"type": "InferenceSetReady", "status": "False"}],
        },
        1,
    ),
    "all three ready": Ready({"replicas": 3, "readyReplicas": 3}, 3),
    "a nonsense count": Ready({"readyReplicas": -1}, 0),
}


@pytest.mark.parametrize("case", READY.values(), ids=READY.keys())
def test_kaito_ready_replicas_are_the_workspaces_kaito_reports_succeeded(case: Ready) -> None:
    rendered = KAITO.render(workload(replicas=3))
    part = inference_set(rendered.parts)
    observed: dict[str, Observed] = {p.part: Observed.of(None) for p in rendered.parts}
    if case.remote_status is not None:
        remote_object = {**part.manifest, "status": case.remote_status}
        observed[part.part] = Observed.of({"status": {"atProvider": {"manifest": remote_object}}})
    assert KAITO.ready_replicas(observed, 3) == case.ready


KAITO_CLUSTER = "eu-west"


def kaito_cluster(**kaito: Any) -> dict[str, Any]:
    found = cluster(KAITO_CLUSTER, providers=("KAITO",))
    found["spec"]["kaito"] = {"nodeAutoProvisioning": False, **kaito}
    return found


def kaito_md(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "provider": {"name": "KAITO"},
        "engine": {"type": "llamacpp"},
        "model": {"name": "Qwen/Qwen3-0.6B-GGUF:Q8_0"},
        "resources": {},
        "replicas": 3,
    }
    return deployment(**{**base, **spec})


def _set_key(out: Outcome) -> str:
    (key,) = remote(out, "InferenceSet")
    return key


def observed_with(out: Outcome, status: dict[str, Any]) -> dict[str, Any]:
    """``out`` applied, the InferenceSet's controller having written ``status``."""
    world = controllers.World(load_balancers={})
    answers = {_set_key(out): {"status": status}}
    return world.observe(out.desired, owner=NAME, answers=answers)


@pytest.mark.parametrize(
    ("ready", "condition", "published"),
    [
        pytest.param(0, ("False", "ReplicasNotReady"), False, id="none ready: not published"),
        pytest.param(1, ("False", "ReplicasNotReady"), True, id="1 of 3: serving, not all"),
        pytest.param(3, ("True", "AllReplicasReady"), True, id="3 of 3"),
    ],
)
def test_kaito_deployment_status_reports_the_replicas_kaito_runs(
    ready: int, condition: tuple[str, str], published: bool
) -> None:
    md = kaito_md()
    first = step(md, [kaito_cluster()])
    # KAITO omits a zero readyReplicas (omitempty); None removes it from the emulation's
    # own status, as a JSON merge patch does.
    status: dict[str, Any] = {"replicas": 3, "readyReplicas": ready or None}
    observed = observed_with(first, status)
    out = step(then(md, first), [kaito_cluster()], observed)
    assert out.composite["status"]["replicas"] == {"desired": 3, "ready": ready}
    assert out.conditions["ReplicasReady"][:2] == condition
    assert f"{ready} of 3 replicas ready" in out.conditions["ReplicasReady"][2]
    assert bool([k for k in out.desired if k.endswith("-endpoint")]) is published


# --- what KAITO does not apply to running replicas replaces the InferenceSet --------


class Change(NamedTuple):
    after: dict[str, Any]  # the deployment's spec fields that change
    kaito: dict[str, Any]  # the cluster's spec.kaito after the change
    replaced: bool


NAP = {"nodeAutoProvisioning": True, "instanceType": "Standard_D8s_v5"}
VLLM = {"engine": {"type": "vllm", "args": ["--max-model-len", "4096"]},
        "model": {"name": "Qwen/Qwen3-8B"}, "resources": {"gpu": {"count": 1}}}  # fmt: skip

CHANGES: dict[str, tuple[dict[str, Any], dict[str, Any], Change]] = {
    "replicas 3 → 5: scaled in place": ({}, {}, Change({"replicas": 5}, {}, replaced=False)),
    "replicas 3 → 1: scaled in place": ({}, {}, Change({"replicas": 1}, {}, replaced=False)),
    "the cluster's instanceType": (
        {}, NAP, Change({}, {**NAP, "instanceType": "Standard_D16s_v5"}, replaced=True)),
    "an instanceType override": (
        {}, NAP,
        Change({"provider": {"name": "KAITO",
                             "overrides": {"resource": {"instanceType": "Standard_D4s_v5"}}}},
               NAP, replaced=True)),
    "a node labelSelector override": (
        {}, {},
        Change({"provider": {"name": "KAITO", "overrides": {
            "resource": {"labelSelector": {"matchLabels": {"pool": "b"}}}}}}, {}, replaced=True)),
    "the llama.cpp command line (the pod template)": (
        {}, {}, Change({"engine": {"type": "llamacpp", "args": ["--ctx-size", "8192"]}}, {},
                       replaced=True)),
    "the model (the vLLM preset)": (
        VLLM, {}, Change({**VLLM, "model": {"name": "Qwen/Qwen3-4B"}}, {}, replaced=True)),
    "a vLLM flag (the preset's ConfigMap)": (
        VLLM, {}, Change({**VLLM, "engine": {"type": "vllm", "args": ["--max-model-len", "8192"]}},
                         {}, replaced=True)),
    "a gated model's token Secret": (
        VLLM, {},
        Change({**VLLM, "provider": {"name": "KAITO", "overrides": {
            "inference": {"preset": {"presetOptions": {"modelAccessSecret": "hf"}}}}}}, {},
            replaced=True)),
}  # fmt: skip


@pytest.mark.parametrize(("before", "kaito", "change"), CHANGES.values(), ids=CHANGES.keys())
def test_kaito_never_updates_what_kaito_would_not_apply(
    before: dict[str, Any], kaito: dict[str, Any], change: Change
) -> None:
    md = kaito_md(**before)
    first = step(md, [kaito_cluster(**kaito)])
    was_key = _set_key(first)
    was = remote(first, "InferenceSet")[was_key]
    changed = kaito_md(**{**before, **change.after})
    changed["status"] = then(md, first)["status"]
    observed = observed_with(first, {"readyReplicas": 3})
    out = step(changed, [kaito_cluster(**change.kaito)], observed)
    assert out.fatal == []
    now_key = _set_key(out)
    now = remote(out, "InferenceSet")[now_key]
    if change.replaced:
        # A new composed resource and a new name: Crossplane deletes the old Object
        # (and provider-kubernetes the old InferenceSet with its Workspaces).
        assert now_key != was_key
        assert now["metadata"]["name"] != was["metadata"]["name"]
        stale = [k for k in first.desired if k not in out.desired]
        assert was_key in stale
        assert all("-inferenceset-" in k or "-config-" in k for k in stale), stale
    else:
        assert now_key == was_key
        assert now["metadata"]["name"] == was["metadata"]["name"]
        assert now["spec"]["replicas"] == change.after["replicas"]
    if now_key == was_key:
        # What KAITO takes only at a Workspace's creation is never changed in place.
        assert {k: v for k, v in now["spec"].items() if k != "replicas"} == {
            k: v for k, v in was["spec"].items() if k != "replicas"
        }


def test_kaito_replacement_keeps_the_route_and_service_in_place() -> None:
    before, kaito, change = CHANGES["the llama.cpp command line (the pod template)"]
    md = kaito_md(**before)
    first = step(md, [kaito_cluster(**kaito)])
    changed = kaito_md(**{**before, **change.after})
    changed["status"] = then(md, first)["status"]
    out = step(changed, [kaito_cluster()], observed_with(first, {"readyReplicas": 3}))
    (service_key,) = remote(out, "Service")
    assert service_key in first.desired
    service = remote(out, "Service")[service_key]
    assert (
        service["spec"]["selector"]["inferenceset.kaito.sh/created-by"]
        == (remote(out, "InferenceSet")[_set_key(out)]["metadata"]["name"])
    )
    assert json.dumps(remote(out, "HTTPRoute")) == json.dumps(remote(first, "HTTPRoute"))
