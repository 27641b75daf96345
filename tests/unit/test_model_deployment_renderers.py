"""compose-model-deployment renderers: KAITO, KubeRay and Dynamo, object by object.

KAITO and KubeRay objects are validated against their pinned CRDs (v0.12.0,
v1.7.0); Dynamo's against the schema derived from Dynamo 1.6.1's own v1beta1
templates (``tests.support.dynamo``).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from fleetgate.core import names
from fleetgate.core.constants import SERVED_MODEL_ENV
from fleetgate.core.objects import remote_object
from fleetgate.core.observed import Observed
from fleetgate.model_deployment import naming
from fleetgate.model_deployment.providers import PROVIDERS, dynamo, kaito, kuberay
from fleetgate.model_deployment.providers.base import Manifest, Workload
from schemas import crds, validate
from tests.support.dynamo import dynamo_schema, templates
from tests.unit.test_model_deployment_builders import WORKLOAD

REF = f"$({SERVED_MODEL_ENV})"
SERVED = "team-a/qwen"
LONG = "md-" + "x" * 49 + "-0123456789"  # a workload name at the DNS label limit


def workload(**kw: Any) -> Workload:
    """One GPU, two replicas, the engine's own args left to each case."""
    base = WORKLOAD()
    fields: dict[str, Any] = {
        "engine": base.engine._replace(args=()),
        "gpus": 1,
        "replicas": 2,
        "model": "Qwen/Qwen3-8B",
        "served": SERVED,
    }
    return WORKLOAD(**{**fields, **kw})


def engine(w: Workload, **kw: Any) -> Workload:
    return w._replace(engine=w.engine._replace(**kw))


def parts(provider: str, w: Workload) -> dict[str, Manifest]:
    out = PROVIDERS[provider].render(w)  # type: ignore[index]
    return {p.part: p.manifest for p in out.parts}


def container(pod: dict[str, Any]) -> dict[str, Any]:
    (only,) = pod["containers"]
    return dict(only)


# --- KAITO ------------------------------------------------------------------------


def kaito_objects(w: Workload) -> dict[str, Manifest]:
    """KAITO's objects by kind: their part names carry the revision's digest."""
    return {p.manifest["kind"]: p.manifest for p in PROVIDERS["KAITO"].render(w).parts}


def test_kaito_vllm_runs_the_preset_with_the_served_name_in_its_config() -> None:
    w = engine(workload(), args=("Qwen/Qwen3-8B", "--max-model-len", "8192", "--enforce-eager",
                                 "--served-model-name", REF))  # fmt: skip
    rendered = PROVIDERS["KAITO"].render(w)
    by_kind = {p.manifest["kind"]: p.manifest for p in rendered.parts}
    iset = by_kind["InferenceSet"]
    assert (iset["apiVersion"], iset["kind"]) == ("kaito.sh/v1beta1", "InferenceSet")
    assert iset["spec"]["replicas"] == 2
    assert iset["spec"]["labelSelector"] == {
        "matchLabels": {"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
    }
    config = by_kind["ConfigMap"]
    assert iset["spec"]["template"] == {
        "resource": {},
        "inference": {"preset": {"name": "Qwen/Qwen3-8B"}, "config": config["metadata"]["name"]},
    }
    assert json.loads(config["data"]["inference_config.yaml"]) == {
        "vllm": {"enforce-eager": True, "max-model-len": 8192, "served-model-name": SERVED}
    }
    assert rendered.notes == (
        "KAITO runs vLLM from its preset: positional spec.engine.args are not passed (1 ignored)",
    )
    assert rendered.backend_ref == {
        "group": "",
        "kind": "Service",
        "name": by_kind["Service"]["metadata"]["name"],
        "port": 80,
    }


def test_kaito_llamacpp_on_cpu_runs_a_template_on_port_5000() -> None:
    w = engine(workload(gpus=0, model="Qwen/Qwen3-0.6B-GGUF:Q8_0"), type="llamacpp",
               image="ghcr.io/ggml-org/llama.cpp:server-b6000", args=("--host", "0.0.0.0"),
               port=8080)  # fmt: skip
    rendered = PROVIDERS["KAITO"].render(w)
    assert [p.manifest["kind"] for p in rendered.parts] == ["InferenceSet", "Service"]
    spec = rendered.parts[0].manifest["spec"]
    assert spec["labelSelector"] == {"matchLabels": {"kubernetes.io/os": "linux"}}
    template = spec["template"]["inference"]["template"]
    assert template["metadata"]["labels"]["fleetgate.dev/workload"] == w.name
    engine_c = container(template["spec"])
    assert engine_c["args"] == [
        *("-hf", "Qwen/Qwen3-0.6B-GGUF:Q8_0", "--alias", REF),
        *("--host", "0.0.0.0", "--port", "5000"),
    ]
    assert engine_c["ports"] == [{"name": "http", "containerPort": 5000, "protocol": "TCP"}]
    assert engine_c["env"][0] == {"name": SERVED_MODEL_ENV, "value": SERVED}
    assert "resources" not in engine_c
    assert rendered.backend_ref["port"] == 80


def test_kaito_llamacpp_keeps_the_users_model_and_alias() -> None:
    w = engine(workload(), type="llamacpp", args=("-m", "/models/q.gguf", "-a", REF))
    template = kaito_objects(w)["InferenceSet"]["spec"]["template"]
    engine_c = container(template["inference"]["template"]["spec"])
    assert engine_c["args"] == ["-m", "/models/q.gguf", "-a", REF, "--port", "5000"]
    assert engine_c["resources"]["limits"] == {"nvidia.com/gpu": "1"}


@pytest.mark.parametrize(
    ("args", "refused"),
    [((), False), (("--port", "5000"), False), (("--port=8080",), True), (("--port", "1"), True)],
    ids=["no port", "its port", "another port", "another port, spaced"],
)
def test_kaito_llamacpp_must_listen_where_its_service_sends(
    args: tuple[str, ...], refused: bool
) -> None:
    w = engine(workload(), type="llamacpp", args=args)
    assert (PROVIDERS["KAITO"].check(w) is not None) == refused
    assert PROVIDERS["KAITO"].check(engine(w, type="vllm")) is None


# --- KubeRay ------------------------------------------------------------------------


def test_kuberay_serves_vllm_through_ray_serve_llm() -> None:
    w = engine(workload(gpus=2, replicas=3),
               args=("Qwen/Qwen3-8B", "--max-model-len=8192", "--enforce-eager",
                     "--gpu-memory-utilization", "0.9", "--served-model-name", REF,
                     "--tensor-parallel-size", "8"),
               image=kuberay.IMAGE)  # fmt: skip
    rendered = PROVIDERS["KubeRay"].render(w)
    (part,) = rendered.parts
    rs = part.manifest
    assert (rs["apiVersion"], rs["kind"]) == ("ray.io/v1", "RayService")
    config = json.loads(rs["spec"]["serveConfigV2"])
    (app,) = config["applications"]
    assert (app["import_path"], app["route_prefix"]) == ("ray.serve.llm:build_openai_app", "/")
    (llm,) = app["args"]["llm_configs"]
    assert llm["model_loading_config"] == {"model_id": SERVED, "model_source": "Qwen/Qwen3-8B"}
    assert llm["deployment_config"]["autoscaling_config"] == {"min_replicas": 3, "max_replicas": 3}
    assert llm["engine_kwargs"] == {
        "enforce_eager": True,
        "gpu_memory_utilization": 0.9,
        "max_model_len": 8192,
        "tensor_parallel_size": 2,
    }
    cluster = rs["spec"]["rayClusterConfig"]
    head = cluster["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0", "the head runs no replica"
    head_c = container(head["template"]["spec"])
    assert "resources" not in head_c
    assert head_c["env"][0] == {"name": SERVED_MODEL_ENV, "value": SERVED}
    (group,) = cluster["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (3, 3, 3)
    worker_c = container(group["template"]["spec"])
    assert worker_c["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert worker_c["env"][0] == {"name": SERVED_MODEL_ENV, "value": SERVED}
    assert worker_c["image"] == head_c["image"] == kuberay.IMAGE
    assert rendered.backend_ref == {
        "group": "",
        "kind": "Service",
        "name": f"{rs['metadata']['name']}-serve-svc",
        "port": 8000,
    }
    (note,) = rendered.notes
    assert "1 ignored" in note


# --- Dynamo -----------------------------------------------------------------------


def components(w: Workload) -> dict[str, Manifest]:
    """The graph's components by name, in the order rendered."""
    graph = parts("Dynamo", w)["graph"]
    return {c["name"]: c for c in graph["spec"]["components"]}


def main(component: Manifest) -> dict[str, Any]:
    """The component's engine container: v1beta1 takes the one named main as its own."""
    (only,) = component["podTemplate"]["spec"]["containers"]
    assert only["name"] == "main"
    return dict(only)


def test_dynamo_aggregated_is_a_frontend_and_workers() -> None:
    w = engine(workload(), image=dynamo.IMAGES["vllm"], args=("--max-model-len", "8192"))
    rendered = PROVIDERS["Dynamo"].render(w)
    (part,) = rendered.parts
    graph = part.manifest
    assert (graph["apiVersion"], graph["kind"]) == ("nvidia.com/v1beta1", "DynamoGraphDeployment")
    by_name = components(w)
    assert list(by_name) == ["Frontend", "Worker"]
    front = by_name["Frontend"]
    assert (front["type"], front["replicas"]) == ("frontend", 1)
    assert main(front)["command"] == ["python3"]
    assert main(front)["args"] == ["-m", "dynamo.frontend"]
    assert main(front)["image"] == dynamo.IMAGES["vllm"]
    worker = by_name["Worker"]
    assert (worker["type"], worker["replicas"]) == ("worker", 2)
    engine_container = main(worker)
    assert engine_container["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert engine_container["env"][0] == {"name": SERVED_MODEL_ENV, "value": SERVED}
    assert engine_container["command"] == ["python3", "-m", "dynamo.vllm"]
    assert engine_container["args"] == [
        *("--model", "Qwen/Qwen3-8B", "--served-model-name", REF, "--max-model-len", "8192")
    ]
    for component in by_name.values():
        assert component["podTemplate"]["metadata"]["labels"] == dict(w.labels)
    assert rendered.backend_ref == {
        "group": "",
        "kind": "Service",
        "name": f"{graph['metadata']['name']}-frontend",
        "port": 8000,
    }


NIXL_PRODUCER = '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
SGLANG_NIXL = [
    *("--disaggregation-transfer-backend", "nixl", "--disaggregation-bootstrap-port", "12345"),
    *("--host", "0.0.0.0"),
]
DISAGGREGATED = [
    # As Dynamo 1.6.1's vllm/disagg.yaml and sglang/disagg.yaml pass them.
    (
        "vllm",
        ["--disaggregation-mode", "prefill", "--kv-transfer-config", NIXL_PRODUCER],
        ["--disaggregation-mode", "decode"],
    ),
    (
        "sglang",
        ["--disaggregation-mode", "prefill", *SGLANG_NIXL],
        ["--disaggregation-mode", "decode", *SGLANG_NIXL],
    ),
]


@pytest.mark.parametrize(("kind", "prefill", "decode"), DISAGGREGATED, ids=["vllm", "sglang"])
def test_dynamo_disaggregated_splits_prefill_and_decode(
    kind: str, prefill: list[str], decode: list[str]
) -> None:
    w = engine(workload(mode="Disaggregated", gpus=2), type=kind)
    by_name = components(w)
    assert list(by_name) == ["Frontend", "PrefillWorker", "DecodeWorker"]
    model_flag = "--model" if kind == "vllm" else "--model-path"
    for name, role, extra in (
        ("PrefillWorker", "prefill", prefill),
        ("DecodeWorker", "decode", decode),
    ):
        component = by_name[name]
        assert component["type"] == role
        assert component["replicas"] == 2
        container_ = main(component)
        assert container_["resources"]["limits"] == {"nvidia.com/gpu": "2"}
        assert container_["command"] == ["python3", "-m", f"dynamo.{kind}"]
        assert container_["args"] == [model_flag, "Qwen/Qwen3-8B", "--served-model-name", REF,
                                      *extra]  # fmt: skip


def test_dynamo_disaggregation_leaves_the_users_own_transfer_flags() -> None:
    w = engine(
        workload(mode="Disaggregated"),
        type="sglang",
        args=("--disaggregation-bootstrap-port=9000", "--host", "::"),
    )
    args = main(components(w)["DecodeWorker"])["args"]
    assert args.count("--host") == 1
    assert args[args.index("--host") + 1] == "::"
    assert "--disaggregation-bootstrap-port" not in args
    assert "--disaggregation-bootstrap-port=9000" in args
    assert args[args.index("--disaggregation-mode") + 1] == "decode"


def test_dynamo_keeps_the_users_model_flags() -> None:
    w = engine(workload(), type="trtllm", args=("--model-path", "/m", "--served-model-name", REF))
    engine_container = main(components(w)["Worker"])
    assert engine_container["args"] == ["--model-path", "/m", "--served-model-name", REF]
    assert engine_container["command"] == ["python3", "-m", "dynamo.trtllm"]


@pytest.mark.parametrize("kind", ["vllm", "sglang", "trtllm"])
def test_dynamo_default_images_are_the_ones_its_templates_run(kind: str) -> None:
    # The runtime image Dynamo 1.6.1's own templates run for this engine.
    images = {
        c["image"]
        for component in templates()[f"{kind}/agg.yaml"]["spec"]["components"]
        for c in component["podTemplate"]["spec"]["containers"]
    }
    assert images == {dynamo.IMAGES[kind]}  # type: ignore[index]
    assert PROVIDERS["Dynamo"].default_image(kind) == dynamo.IMAGES[kind]  # type: ignore[arg-type,index]


@pytest.mark.parametrize("mode", ["Aggregated", "Disaggregated"])
def test_dynamo_components_take_the_roles_its_templates_give_them(mode: str) -> None:
    template = templates()["vllm/agg.yaml" if mode == "Aggregated" else "vllm/disagg.yaml"]
    roles = sorted(c["type"] for c in template["spec"]["components"])
    rendered = components(workload(mode=mode))
    assert sorted(c["type"] for c in rendered.values()) == roles


# --- names and readiness ------------------------------------------------------------


def test_upstream_names_leave_room_for_what_operators_derive() -> None:
    w = workload(name=LONG)
    graph = parts("Dynamo", w)["graph"]["metadata"]["name"]
    assert len(f"{graph}-prefillworker") <= 63
    rs = parts("KubeRay", w)["rayservice"]["metadata"]["name"]
    assert len(rs) <= kuberay.NAME_MAX
    kaito_set = kaito_objects(w)["InferenceSet"]["metadata"]["name"]
    assert len(kaito_set) <= kaito.INFERENCESET_MAX
    other = workload(name=LONG[:-1] + "8")
    assert parts("Dynamo", other)["graph"]["metadata"]["name"] != graph, "cut names stay unique"
    assert naming.fitted("short", 40) == "short"
    assert names.dns_label(graph) == graph


def observed_with(part: str, status: dict[str, Any]) -> dict[str, Observed]:
    return {part: Observed.of({"status": {"atProvider": {"manifest": {"status": status}}}})}


def ok(type_: str) -> dict[str, Any]:
    return {"conditions": [{"type": type_, "status": "True"}]}


READINESS = [
    ("KAITO", "inferenceset-0123456789", {}, 0),
    ("KAITO", "inferenceset-0123456789", {"replicas": 3, "readyReplicas": 2}, 2),
    ("KAITO", "inferenceset-0123456789", {"replicas": 3}, 0),
    ("KAITO", "workspace", ok("WorkspaceSucceeded"), 0),
    ("KubeRay", "rayservice", ok("Ready"), 3),
    ("KubeRay", "rayservice", {"conditions": [{"type": "Ready", "status": "False"}]}, 0),
    ("Dynamo", "graph", {"state": "successful"}, 3),
    ("Dynamo", "graph", {"state": "pending"}, 0),
]


@pytest.mark.parametrize(
    ("provider", "part", "status", "ready"),
    READINESS,
    ids=[f"{c[0]} {json.dumps(c[2])}" for c in READINESS],
)
def test_ready_replicas(provider: str, part: str, status: dict[str, Any], ready: int) -> None:
    renderer = PROVIDERS[provider]  # type: ignore[index]
    assert renderer.ready_replicas(observed_with(part, status), 3) == ready
    assert renderer.ready_replicas({}, 3) == 0


# --- schemas --------------------------------------------------------------------------


def wrapped(manifests: list[Manifest]) -> list[Manifest]:
    """Each manifest as the Object the function composes it in (named as Crossplane would)."""
    objects = []
    for i, manifest in enumerate(manifests):
        obj = remote_object(manifest=manifest, provider_config="pc")
        obj["metadata"] = {"name": f"object-{i}", "namespace": "team-a"}
        objects.append(obj)
    return objects


KAITO_OVERRIDES = kaito.KAITOOverrides.model_validate(
    {
        "resource": {
            "instanceType": "Standard_NC24ads_A100_v4",
            "labelSelector": {"matchLabels": {"pool": "a100"}},
        },
        "inference": {"preset": {"presetOptions": {"modelAccessSecret": "hf-token"}}},
    }
)


def every_rendering() -> list[Manifest]:
    cpu = engine(workload(gpus=0), type="llamacpp", args=("--ctx-size", "4096"))
    return [
        p.manifest
        for provider, w in (
            ("KAITO", workload()),
            ("KAITO", cpu),
            ("KAITO", workload(name=LONG)),
            ("KAITO", workload(replicas=3, overrides=KAITO_OVERRIDES)),
            ("KubeRay", engine(workload(gpus=4), args=("--max-model-len", "4096"))),
            ("Dynamo", workload()),
            ("Dynamo", engine(workload(mode="Disaggregated"), type="sglang")),
            ("Dynamo", engine(workload(), type="trtllm")),
        )
        for p in PROVIDERS[provider].render(w).parts  # type: ignore[index]
    ]


def test_the_pinned_crd_set_has_no_dynamo() -> None:
    """Why Dynamo is experimental: if this fails, validate it against the real CRD instead."""
    index = (
        (crds.fetch() / "index.tsv").read_text() if (crds.fetch() / "index.tsv").exists() else ""
    )
    assert "DynamoGraphDeployment" not in index
    assert not list(crds.fetch().rglob("*dynamo*"))


@pytest.mark.crossplane_cli
def test_every_rendering_validates(tmp_path: Path) -> None:
    """KAITO and KubeRay against their pinned CRDs, Dynamo against its templates' schema."""
    assert (
        validate.validate(wrapped(every_rendering()), extra_schema_files=[dynamo_schema(tmp_path)])
        == []
    )


@pytest.mark.crossplane_cli
def test_dynamos_own_templates_pass_the_schema_derived_from_them(tmp_path: Path) -> None:
    """The additions made to the derived schema leave every template valid."""
    graphs = [
        {**t, "metadata": {**t["metadata"], "namespace": "team-a"}} for t in templates().values()
    ]
    assert validate.validate(wrapped(graphs), extra_schema_files=[dynamo_schema(tmp_path)]) == []


@pytest.mark.crossplane_cli
def test_the_dynamo_schema_refuses_what_the_templates_do_not_write(tmp_path: Path) -> None:
    """The schema can fail: v1alpha1's fields are not v1beta1's."""
    graph = parts("Dynamo", workload())["graph"]
    graph["spec"]["backendFramework"] = "vllm"
    graph["spec"]["components"][1]["extraPodSpec"] = {"mainContainer": {"image": "x"}}
    errors = validate.validate(wrapped([graph]), extra_schema_files=[dynamo_schema(tmp_path)])
    assert len(errors) == 2, errors
    for error, field in zip(errors, ("backendFramework", "extraPodSpec"), strict=True):
        assert f'unknown field: "{field}"' in error
