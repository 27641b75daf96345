"""compose-model-deployment: spec.provider.overrides, its three checks in order, and the merge."""

from typing import Any

import pytest
from pydantic import BaseModel

from fleetgate.core.models import EngineType
from fleetgate.model_deployment import overrides
from fleetgate.model_deployment.composer import compose
from fleetgate.model_deployment.providers import PROVIDERS
from fleetgate.model_deployment.providers.base import ServingMode
from tests.support import request, run
from tests.unit.test_model_deployment import EU, US, deployment, observe, remote, serving
from tests.unit.test_model_deployment_renderers import workload

R = "spec.provider.overrides"
SECURITY = "is not allowed (security-sensitive)"
SIZING = "is not allowed (sizing comes from spec.replicas and spec.resources)"


def check(
    provider: str,
    raw: dict[str, Any],
    engine: EngineType = "vllm",
    mode: ServingMode = "Aggregated",
) -> BaseModel | list[str] | None:
    renderer = PROVIDERS[provider]  # type: ignore[index]
    return overrides.check(raw, renderer, engine, mode, renderer.sizing_paths)


# provider, overrides, engine, mode, the problems (each a fragment, in order)
REFUSED: list[tuple[str, str, dict[str, Any], EngineType, ServingMode, list[str]]] = [
    # 1. the deny-list, at any depth, inside lists, one problem per path
    ("deny: hostNetwork in the pod spec", "Direct",
     {"spec": {"template": {"spec": {"hostNetwork": True}}}}, "vllm", "Aggregated",
     [f"{R}.spec.template.spec.hostNetwork: overriding hostNetwork {SECURITY}"]),
    ("deny: inside a list", "Direct",
     {"spec": {"template": {"spec": {"containers": [{"name": "x"}, {"securityContext": {}}]}}}},
     "vllm", "Aggregated",
     [f"{R}.spec.template.spec.containers[1].securityContext: overriding securityContext"]),
    ("deny: a denied key's subtree is not looked into", "Direct",
     {"spec": {"securityContext": {"privileged": True, "capabilities": {}}}}, "vllm", "Aggregated",
     [f"{R}.spec.securityContext: overriding securityContext"]),
    ("deny: hostPath in a volume", "LLMD",
     {"spec": {"template": {"spec": {"volumes": [{"hostPath": {"path": "/"}}]}}}}, "vllm",
     "Aggregated", [f"{R}.spec.template.spec.volumes[0].hostPath: overriding hostPath {SECURITY}"]),
    ("deny: a service account", "Dynamo",
     {"spec": {"services": {"Worker": {"extraPodSpec": {"serviceAccountName": "admin"}}}}},
     "vllm", "Aggregated", [f"{R}.spec.services.Worker.extraPodSpec.serviceAccountName"]),
    ("deny: replicas is sizing", "Direct", {"spec": {"replicas": 9}}, "vllm", "Aggregated",
     [f"{R}.spec.replicas: overriding replicas {SIZING}"]),
    ("deny: resources is sizing", "Dynamo",
     {"spec": {"services": {"Worker": {"resources": {"limits": {"gpu": "8"}}}}}}, "vllm",
     "Aggregated", [f"{R}.spec.services.Worker.resources: overriding resources {SIZING}"]),
    ("deny: KAITO's node count is sizing", "KAITO", {"resource": {"count": 4}}, "vllm",
     "Aggregated", [f"{R}.resource.count: overriding count {SIZING}"]),
    ("deny: every offending path, in order", "Dynamo",
     {"spec": {"services": {"Worker": {"replicas": 2}, "Frontend": {"replicas": 3}}},
      "epp": {"replicas": 2}}, "vllm", "Aggregated",
     [f"{R}.epp.replicas", f"{R}.spec.services.Frontend.replicas",
      f"{R}.spec.services.Worker.replicas"]),
    ("deny: before the allow-list", "KubeRay", {"spec": {"hostPID": True}}, "vllm", "Aggregated",
     [f"{R}.spec.hostPID: overriding hostPID {SECURITY}"]),
    # 2. the provider's root keys
    ("root: KubeRay takes none", "KubeRay", {"spec": {}}, "vllm", "Aggregated",
     [f"{R}.spec: not an override provider KubeRay applies (it takes no overrides)"]),
    ("root: KAITO has no spec", "KAITO", {"spec": {"inference": {}}}, "vllm", "Aggregated",
     [f"{R}.spec: not an override provider KAITO applies (it takes inference, resource)"]),
    ("root: metadata is never an override", "Direct", {"metadata": {"name": "x"}}, "vllm",
     "Aggregated", [f"{R}.metadata: not an override provider Direct applies (it takes spec)"]),
    ("root: Dynamo's own keys are not LLMD's", "LLMD", {"routerMode": "kv"}, "vllm",
     "Aggregated", [f"{R}.routerMode: not an override provider LLMD applies"]),
    # 3. strict decoding, a typo named by its path
    ("strict: a typo in a provider-only key", "Dynamo", {"epp": {"imag": "x"}}, "vllm",
     "Aggregated", [f"{R}.epp.imag: unknown field"]),
    ("strict: a provider-only value outside its set", "Dynamo", {"routerMode": "fastest"},
     "vllm", "Aggregated", [f"{R}.routerMode: Input should be 'round-robin', 'random' or 'kv'"]),
    ("strict: a misspelt upstream field", "Direct",
     {"spec": {"template": {"spec": {"nodeSelectr": {"a": "b"}}}}}, "vllm", "Aggregated",
     [f"{R}.spec.template.spec.nodeSelectr: unknown field"]),
    ("strict: a field Fleetgate owns (the container)", "Direct",
     {"spec": {"template": {"spec": {"containers": []}}}}, "vllm", "Aggregated",
     [f"{R}.spec.template.spec.containers: unknown field"]),
    ("strict: a service the graph does not have", "Dynamo",
     {"spec": {"services": {"VllmWorker": {"labels": {"a": "b"}}}}}, "vllm", "Aggregated",
     [f"{R}.spec.services: no service VllmWorker in this graph (services: Frontend, Worker)"]),
    ("strict: disaggregated graphs have other services", "Dynamo",
     {"spec": {"services": {"Worker": {}}}}, "vllm", "Disaggregated",
     ["no service Worker in this graph (services: Frontend, PrefillWorker, DecodeWorker)"]),
    ("strict: an env var from a Secret", "Dynamo",
     {"spec": {"envs": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}},
     "vllm", "Aggregated", [f"{R}.spec.envs[0].valueFrom: unknown field"]),
    ("strict: Fleetgate's label keys", "Direct",
     {"spec": {"template": {"metadata": {"labels": {"fleetgate.dev/workload": "other"}}}}},
     "vllm", "Aggregated",
     [f"{R}.spec.template.metadata.labels: label keys under fleetgate.dev/ are Fleetgate's"]),
    ("strict: a wrong type", "Direct", {"spec": {"minReadySeconds": "soon"}}, "vllm",
     "Aggregated", [f"{R}.spec.minReadySeconds: Input should be a valid integer"]),
    ("strict: KAITO's preset with llama.cpp", "KAITO",
     {"inference": {"preset": {"presetOptions": {"modelAccessSecret": "hf"}}}}, "llamacpp",
     "Aggregated", [f"{R}.inference: KAITO runs llama.cpp from a pod template"]),
    ("strict: KAITO's preferredNodes has no place in an InferenceSet", "KAITO",
     {"resource": {"preferredNodes": ["node-a"]}}, "vllm", "Aggregated",
     [f"{R}.resource.preferredNodes: unknown field"]),
    ("strict: KAITO's preset name is the model's", "KAITO",
     {"inference": {"preset": {"name": "other-model"}}}, "vllm", "Aggregated",
     [f"{R}.inference.preset.name: unknown field"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("provider", "raw", "engine", "mode", "problems"),
    [c[1:] for c in REFUSED],
    ids=[c[0] for c in REFUSED],
)
def test_refused(
    provider: str,
    raw: dict[str, Any],
    engine: EngineType,
    mode: ServingMode,
    problems: list[str],
) -> None:
    found = check(provider, raw, engine, mode)
    assert isinstance(found, list), found
    assert len(found) == len(problems), found
    for problem, fragment in zip(found, problems, strict=True):
        assert fragment in problem, problem


def test_no_value_is_echoed() -> None:
    secret = "s3cr3t-value"
    for raw in (
        {"spec": {"template": {"spec": {"hostNetwork": secret}}}},
        {"spec": {"minReadySeconds": secret}},
        {"spec": {"strategy": {"type": secret}}},
        {secret: 1},
    ):
        found = check("Direct", raw)
        assert isinstance(found, list)
        assert secret not in overrides.summary(found) or raw == {secret: 1}


def test_unset_or_empty_overrides_are_nothing() -> None:
    assert check("KubeRay", {}) is None
    assert overrides.check(None, PROVIDERS["Direct"], "vllm", "Aggregated") is None


def rendered(provider: str, raw: dict[str, Any], **kw: Any) -> dict[str, dict[str, Any]]:
    decoded = check(provider, raw, kw.get("engine", "vllm"), kw.get("mode", "Aggregated"))
    assert isinstance(decoded, BaseModel), decoded
    w = workload(overrides=decoded, **{k: v for k, v in kw.items() if k != "engine"})
    if "engine" in kw:
        w = w._replace(engine=w.engine._replace(type=kw["engine"]))
    out = PROVIDERS[provider].render(w)  # type: ignore[index]
    return {p.part: p.manifest for p in out.parts} | {"backend": out.backend_ref}


def test_accepted_deployment_overrides_merge_into_the_engine_deployment() -> None:
    parts = rendered(
        "Direct",
        {
            "spec": {
                "strategy": {"type": "Recreate"},
                "template": {
                    "metadata": {"labels": {"team": "a"}, "annotations": {"x": "y"}},
                    "spec": {
                        "nodeSelector": {"pool": "h100"},
                        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                    },
                },
            }
        },
    )
    spec = parts["engine"]["spec"]
    assert spec["strategy"] == {"type": "Recreate"}
    assert spec["replicas"] == 2, "sizing stays Fleetgate's"
    labels = spec["template"]["metadata"]["labels"]
    assert labels["team"] == "a"
    assert labels["fleetgate.dev/workload"] == parts["engine"]["metadata"]["name"]
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "h100"}
    # Lists replace: the team's tolerations are the pod's tolerations.
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert pod["containers"][0]["name"] == "engine", "maps merge, the container stays"


def test_llmd_overrides_touch_the_engine_not_the_picker() -> None:
    parts = rendered("LLMD", {"spec": {"template": {"spec": {"nodeSelector": {"a": "b"}}}}})
    assert parts["engine"]["spec"]["template"]["spec"]["nodeSelector"] == {"a": "b"}
    assert "nodeSelector" not in parts["picker"]["spec"]["template"]["spec"]


def test_kaito_overrides_land_where_each_replicas_workspace_is_made_from() -> None:
    # A Workspace's roots: the InferenceSet copies its template's resource and
    # inference, and its labelSelector, into each Workspace (KAITO v0.12.0
    # pkg/utils/inferenceset/inferenceset.go:158-178).
    parts = rendered(
        "KAITO",
        {
            "resource": {
                "instanceType": "Standard_NC24ads_A100_v4",
                "labelSelector": {"matchLabels": {"pool": "a100"}},
            },
            "inference": {"preset": {"presetOptions": {"modelAccessSecret": "hf-token"}}},
        },
    )
    (spec,) = [p["spec"] for p in parts.values() if p.get("kind") == "InferenceSet"]
    template = spec["template"]
    assert template["resource"] == {"instanceType": "Standard_NC24ads_A100_v4"}
    assert spec["labelSelector"]["matchLabels"] == {
        "kubernetes.io/os": "linux",
        "nvidia.com/gpu.present": "true",
        "pool": "a100",
    }
    assert spec["replicas"] == 2
    assert template["inference"]["preset"] == {
        "name": "Qwen/Qwen3-8B",
        "presetOptions": {"modelAccessSecret": "hf-token"},
    }


def test_dynamo_provider_only_keys_are_applied_and_never_written() -> None:
    parts = rendered(
        "Dynamo",
        {
            "routerMode": "kv",
            "epp": {"image": "registry.example/epp:v1"},
            "spec": {
                "envs": [{"name": "DYN_LOG", "value": "debug"}],
                "services": {"Worker": {"extraPodSpec": {"nodeSelector": {"gpu": "h100"}}}},
            },
        },
    )
    graph = parts["graph"]
    for provider_only in ("routerMode", "epp"):
        assert provider_only not in graph
        assert provider_only not in graph["spec"]
    by_name = {c["name"]: c for c in graph["spec"]["components"]}
    (front,) = by_name["Frontend"]["podTemplate"]["spec"]["containers"]
    assert front["env"] == [{"name": "DYN_ROUTER_MODE", "value": "kv"}]
    # v1alpha1's keys, as users write them, land where v1beta1 has them.
    assert graph["spec"]["env"] == [{"name": "DYN_LOG", "value": "debug"}]
    worker_pod = by_name["Worker"]["podTemplate"]["spec"]
    assert worker_pod["nodeSelector"] == {"gpu": "h100"}
    (engine_container,) = worker_pod["containers"]
    assert engine_container["command"] == ["python3", "-m", "dynamo.vllm"]
    # epp: a pool over the frontends, its picker running the given image.
    assert parts["picker"]["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "registry.example/epp:v1"
    )
    assert parts["backend"]["kind"] == "InferencePool"
    frontend_labels = by_name["Frontend"]["podTemplate"]["metadata"]["labels"]
    assert parts["pool"]["spec"]["selector"]["matchLabels"].items() <= frontend_labels.items()
    assert parts["pool"]["spec"]["targetPorts"] == [{"number": 8000}]
    assert by_name["Frontend"]["replicas"] == 2, "one frontend per replica behind a picker"


def test_dynamo_service_labels_and_annotations_land_on_its_pods() -> None:
    parts = rendered(
        "Dynamo",
        {
            "spec": {
                "services": {
                    "Worker": {
                        "labels": {"team": "a", "tier": "gold"},
                        "annotations": {"note": "x"},
                        "extraPodMetadata": {"labels": {"tier": "silver"}},
                    }
                }
            }
        },
    )
    by_name = {c["name"]: c for c in parts["graph"]["spec"]["components"]}
    metadata = by_name["Worker"]["podTemplate"]["metadata"]
    assert metadata["annotations"] == {"note": "x"}
    # The pod's own label wins over the component's, and Fleetgate's stay.
    assert {"team": "a", "tier": "silver"}.items() <= metadata["labels"].items()
    assert "fleetgate.dev/deployment" in metadata["labels"]
    # Another service's pods are left as they were.
    front = by_name["Frontend"]["podTemplate"]["metadata"]
    assert set(front) == {"labels"}
    assert "team" not in front["labels"]


# --- through the function ------------------------------------------------------------


def test_a_refused_override_composes_nothing_new_and_keeps_what_runs() -> None:
    xr, second = serving(deployment(), [EU, US])
    observed = observe(second.desired)
    xr["spec"]["provider"]["overrides"] = {
        "spec": {"template": {"spec": {"hostNetwork": True, "nodeSelectr": {}}}}
    }
    out = run(compose, request(xr, required={"clusters": [EU, US], "deployments": []},
                               observed=observed))  # fmt: skip
    assert out.fatal == []
    assert out.desired.keys() == observed.keys()
    for key, obj in out.desired.items():
        assert obj["spec"] == observed[key]["spec"]
    status, reason, message = out.conditions["Scheduled"]
    assert (status, reason) == ("False", "OverrideRejected")
    assert message == f"{R}.spec.template.spec.hostNetwork: overriding hostNetwork {SECURITY}"
    assert out.composite["status"]["provider"] == second.composite["status"]["provider"]
    assert any("nothing new composed" in w for w in out.warnings)
    assert out.composite_ready == "READY_FALSE"


def test_an_accepted_override_reaches_the_cluster() -> None:
    xr = deployment(
        provider={"name": "Direct", "overrides": {"spec": {"minReadySeconds": 30}}}, replicas=1
    )
    out = run(compose, request(xr, required={"clusters": [EU], "deployments": []}))
    (engine,) = (m for k, m in remote(out, "Deployment").items() if k.endswith("-engine"))
    assert engine["spec"]["minReadySeconds"] == 30
    assert out.conditions["Scheduled"][0] == "True"
