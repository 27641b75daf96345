"""compose-model-deployment builders: engine, names, labels and every composed object."""

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, get_args

import celpy
import pytest
from celpy.adapter import json_to_cel

from fleetgate.core import names
from fleetgate.core.constants import SERVED_MODEL_ENV
from fleetgate.core.errors import InputError
from fleetgate.core.kinds.deployment import EngineSpec, EnvVar
from fleetgate.core.models import EngineType, ServingProvider
from fleetgate.model_deployment import endpoints, engine, naming, routing
from fleetgate.model_deployment.providers import CEILINGS, PROVIDERS, pods
from fleetgate.model_deployment.providers.base import EngineRun, Workload
from fleetgate.model_deployment.providers.llmd import FAILURE_MODE, PICKER_CONFIG

SERVED = "team-a/qwen"
REF = "$(FLEETGATE_SERVED_MODEL_NAME)"
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def env(*pairs: tuple[str, str]) -> list[EnvVar]:
    return [EnvVar(name=k, value=v) for k, v in pairs]


# --- served model name ------------------------------------------------------

INJECTION = [
    pytest.param([], [(SERVED_MODEL_ENV, SERVED)], id="no user env"),
    pytest.param(
        [("B", "2"), ("A", "1")],
        [(SERVED_MODEL_ENV, SERVED), ("B", "2"), ("A", "1")],
        id="user env follows in order",
    ),
    pytest.param(
        [("A", "1"), (SERVED_MODEL_ENV, "mine"), ("B", "2")],
        [(SERVED_MODEL_ENV, SERVED), ("A", "1"), ("B", "2")],
        id="a user entry of that name is dropped",
    ),
    pytest.param(
        [(SERVED_MODEL_ENV, "x"), (SERVED_MODEL_ENV, "y")],
        [(SERVED_MODEL_ENV, SERVED)],
        id="every user entry of that name is dropped",
    ),
]


@pytest.mark.parametrize(("user", "want"), INJECTION)
def test_served_name_is_the_first_env_entry(
    user: list[tuple[str, str]], want: list[tuple[str, str]]
) -> None:
    assert list(engine.inject_served_name(SERVED, env(*user))) == want


@dataclass(frozen=True)
class WarningCase:
    id: str
    args: list[str] = field(default_factory=list)
    user_env: list[tuple[str, str]] = field(default_factory=list)
    fragments: list[str] = field(default_factory=list)  # one per warning, in order


WARNINGS = [
    WarningCase("referenced in args", args=["--served-model-name", REF]),
    WarningCase("referenced inside an arg", args=[f"--served-model-name={REF}"]),
    WarningCase("referenced in another env value", user_env=[("NAMES", f"x,{REF}")]),
    WarningCase("not referenced", args=["--model", "Qwen/Qwen3-8B"], fragments=["404"]),
    WarningCase("no args at all", fragments=["404"]),
    WarningCase(
        "own entry dropped, and it does not count as a reference",
        user_env=[(SERVED_MODEL_ENV, REF)],
        fragments=["is dropped", "404"],
    ),
    WarningCase(
        "own entry dropped, args fine",
        args=["--served-model-name", REF],
        user_env=[(SERVED_MODEL_ENV, "x")],
        fragments=["is dropped"],
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in WARNINGS])
def test_served_name_warnings(case: WarningCase) -> None:
    warnings = engine.served_name_warnings(EngineSpec(args=case.args, env=env(*case.user_env)))
    assert len(warnings) == len(case.fragments)
    for warning, fragment in zip(warnings, case.fragments, strict=True):
        assert fragment in warning


# --- the engine as it runs ---------------------------------------------------


@dataclass(frozen=True)
class ResolveCase:
    id: str
    kind: EngineType
    args: list[str]  # as the user wrote them
    port: int
    run_args: list[str]  # as the engine is started


RESOLVE = [
    ResolveCase("vllm default port", "vllm", ["m"], port=8000, run_args=["m"]),
    ResolveCase("vllm --port N", "vllm", ["m", "--port", "9000"], port=9000,
                run_args=["m", "--port", "9000"]),
    ResolveCase("vllm --port=N", "vllm", ["--port=9001"], port=9001, run_args=["--port=9001"]),
    ResolveCase("sglang listens on all addresses", "sglang", ["--model-path", "m"], port=30000,
                run_args=["--model-path", "m", "--host", "0.0.0.0"]),
    ResolveCase("sglang keeps the user's --host", "sglang", ["--host=0.0.0.0"], port=30000,
                run_args=["--host=0.0.0.0"]),
    ResolveCase("trtllm", "trtllm", ["m"], port=8000, run_args=["m", "--host", "0.0.0.0"]),
    ResolveCase("llamacpp", "llamacpp", ["-hf", "x/y", "--port", "8081"], port=8081,
                run_args=["-hf", "x/y", "--port", "8081", "--host", "0.0.0.0"]),
]  # fmt: skip


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in RESOLVE])
def test_resolve(case: ResolveCase) -> None:
    run = engine.resolve(EngineSpec(args=case.args), case.kind, SERVED)
    assert run.port == case.port
    assert list(run.args) == case.run_args
    assert run.image == engine.PROFILES[case.kind].image
    assert run.env[0] == (SERVED_MODEL_ENV, SERVED)
    assert run.health_path == "/health"


def test_resolve_keeps_the_users_image_and_names_the_server_to_start() -> None:
    run = engine.resolve(EngineSpec(image="registry.example/sglang:dev"), "sglang", SERVED)
    assert run.image == "registry.example/sglang:dev"
    assert run.command == ("python3", "-m", "sglang.launch_server")
    assert engine.resolve(EngineSpec(), "vllm", SERVED).command == ()


@pytest.mark.parametrize("bad", ["0", "65536", "http", "-1", ""])
def test_a_bad_port_names_the_arg(bad: str) -> None:
    with pytest.raises(InputError, match=r"spec\.engine\.args\[2\]"):
        engine.resolve(EngineSpec(args=["m", "--port", bad]), "vllm", SERVED)


# --- names -------------------------------------------------------------------


def test_workload_names_tell_namespace_and_name_apart() -> None:
    pairs = [("team-a", "x"), ("team", "a-x"), ("team-a", "x.y"), ("team-a", "x-y")]
    derived = {naming.workload(ns, n) for ns, n in pairs}
    assert len(derived) == len(pairs)


@pytest.mark.parametrize(
    ("namespace", "name"),
    [("team-a", "qwen"), ("1team", "9model"), ("n" * 63, "m" * 253), ("a", "x.y.z")],
    ids=["short", "digits first", "longest", "dots"],
)
def test_workload_names_are_service_names(namespace: str, name: str) -> None:
    derived = naming.workload(namespace, name)
    assert DNS_1035.match(derived), derived
    assert len(derived) <= 63
    assert naming.workload(namespace, name) == derived, "deterministic"
    workload = WORKLOAD(name=derived)
    picker = workload.child("epp")
    assert DNS_1035.match(picker)
    assert len(picker) <= 63
    assert picker != derived


def test_endpoint_names_are_bounded_and_unique_per_deployment_and_cluster() -> None:
    combos = [("qwen", "eu-1"), ("qwen-eu", "1"), ("qwen", "eu.1"), ("q" * 253, "c" * 253)]
    derived = [naming.endpoint(d, c) for d, c in combos]
    assert len(set(derived)) == len(derived)
    assert all(len(n) <= 63 and names.dns_label(n) == n for n in derived)


def test_resource_names_are_per_cluster() -> None:
    assert naming.resource("eu.1", "engine") != naming.resource("eu-1", "engine")
    assert naming.resource("a", "engine").startswith(naming.resource_prefix("a"))


LABEL_VALUES = [
    pytest.param("qwen3-8b", "qwen3-8b", id="a valid value stays"),
    pytest.param("qwen3.8b", "qwen3.8b", id="dots are allowed"),
    pytest.param("x" * 63, "x" * 63, id="63 characters stay"),
]


@pytest.mark.parametrize(("raw", "want"), LABEL_VALUES)
def test_label_value_keeps_valid_values(raw: str, want: str) -> None:
    assert names.label_value(raw) == want


@pytest.mark.parametrize("raw", ["x" * 64, "a" * 253, "_x_", "grün", ".dot", "x" * 60 + "_.-y"])
def test_label_value_bounds_and_hashes(raw: str) -> None:
    value = names.label_value(raw)
    assert LABEL_VALUE.match(value), value
    assert 0 < len(value) <= 63
    assert names.label_value(raw + "z") != value


# --- ModelEndpoint labels -------------------------------------------------------


@dataclass(frozen=True)
class PrecedenceCase:
    id: str
    template: dict[str, str]
    placement: dict[str, str]
    want: dict[str, str]  # besides the managed labels


LABEL_PRECEDENCE = [
    PrecedenceCase(
        "each source contributes",
        template={"tier": "gold"},
        placement={"region": "eu"},
        want={"tier": "gold", "region": "eu"},
    ),
    PrecedenceCase(
        "the cluster wins over the template",
        template={"region": "us"},
        placement={"region": "eu"},
        want={"region": "eu"},
    ),
    PrecedenceCase(
        "managed labels win over both",
        template={"fleetgate.dev/cluster": "fake"},
        placement={"fleetgate.dev/deployment": "fake"},
        want={},
    ),
    PrecedenceCase(
        "other reserved keys are dropped",
        template={"fleetgate.dev/x": "1"},
        placement={"fleetgate.dev/y": "2"},
        want={},
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in LABEL_PRECEDENCE])
def test_endpoint_label_precedence(case: PrecedenceCase) -> None:
    labels = endpoints.endpoint_labels(case.template, case.placement, "qwen", "eu-west")
    assert labels == {
        **case.want,
        "fleetgate.dev/deployment": "qwen",
        "fleetgate.dev/cluster": "eu-west",
    }
    assert list(labels) == sorted(labels), "sorted, so output is byte-stable"


def test_managed_label_values_are_bounded() -> None:
    labels = endpoints.endpoint_labels({}, {}, "d" * 200, "c." * 100)
    assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in labels.values())


def test_model_endpoint() -> None:
    endpoint = endpoints.model_endpoint(
        namespace="team-a",
        deployment="qwen",
        cluster="eu-west",
        hostname="eu-west-abc.fleetgate-system.svc.cluster.local",
        served_model=SERVED,
        labels={"a": "b"},
    )
    assert endpoint == {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {
            "name": naming.endpoint("qwen", "eu-west"),
            "namespace": "team-a",
            "labels": {"a": "b"},
        },
        "spec": {
            "origin": "https://eu-west-abc.fleetgate-system.svc.cluster.local",
            "api": {"schema": "OpenAI", "prefix": "/team-a/qwen/v1"},
            "model": "team-a/qwen",
        },
    }


# --- remote objects ----------------------------------------------------------------


def WORKLOAD(**kw: Any) -> Workload:  # noqa: N802 - reads as a constant with overrides
    run = EngineRun(
        type="vllm",
        image="vllm/vllm-openai:v0.10.2",
        command=(),
        args=("Qwen/Qwen3-8B", "--served-model-name", REF),
        env=((SERVED_MODEL_ENV, SERVED), ("HF_HOME", "/cache")),
        port=8000,
        health_path="/health",
    )
    fields: dict[str, Any] = {
        "name": "md-team-a-qwen-0123456789",
        "namespace": "fleetgate-system",
        "labels": {"fleetgate.dev/deployment": "qwen"},
        "engine": run,
        "gpus": 2,
        "replicas": 3,
    }
    fields.update(kw)
    return Workload(**fields)


def parts(provider: str, **kw: Any) -> dict[str, dict[str, Any]]:
    rendered = PROVIDERS[provider].render(WORKLOAD(**kw))  # type: ignore[index]
    return {p.part: p.manifest for p in rendered.parts}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(only)


def test_engine_deployment_on_gpus() -> None:
    deployment = parts("Direct")["engine"]
    assert deployment["metadata"]["namespace"] == "fleetgate-system"
    assert deployment["spec"]["replicas"] == 3
    selector = {"fleetgate.dev/workload": "md-team-a-qwen-0123456789"}
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    engine_c = container(deployment)
    assert engine_c["image"] == "vllm/vllm-openai:v0.10.2"
    assert "command" not in engine_c
    assert engine_c["args"] == ["Qwen/Qwen3-8B", "--served-model-name", REF]
    assert engine_c["env"][0] == {"name": SERVED_MODEL_ENV, "value": SERVED}
    assert engine_c["resources"] == {
        "requests": {"nvidia.com/gpu": "2"},
        "limits": {"nvidia.com/gpu": "2"},
    }
    assert engine_c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert engine_c[probe]["httpGet"] == {"path": "/health", "port": "http"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]


def test_engine_deployment_on_cpu_asks_for_no_gpu() -> None:
    deployment = parts("Direct", gpus=0)["engine"]
    engine_c = container(deployment)
    assert "resources" not in engine_c
    assert "volumeMounts" not in engine_c
    assert "tolerations" not in deployment["spec"]["template"]["spec"]


def test_direct_service_and_backend() -> None:
    rendered = PROVIDERS["Direct"].render(WORKLOAD())
    service = {p.part: p.manifest for p in rendered.parts}["service"]
    assert service["spec"]["selector"] == {"fleetgate.dev/workload": "md-team-a-qwen-0123456789"}
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}
    ]
    assert rendered.backend_ref == {
        "group": "",
        "kind": "Service",
        "name": "md-team-a-qwen-0123456789",
        "port": 8000,
    }
    assert [p.part for p in rendered.parts] == ["engine", "service"]


def test_llmd_pool_fronts_the_engine_pods() -> None:
    rendered = PROVIDERS["LLMD"].render(WORKLOAD())
    by_part = {p.part: p.manifest for p in rendered.parts}
    pool = by_part["pool"]
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    assert pool["spec"]["selector"] == {
        "matchLabels": {"fleetgate.dev/workload": "md-team-a-qwen-0123456789"}
    }
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    # GAIE v1.6.2's default, said: the engines speak HTTP/1.1, and the picker's
    # default OpenAI parser claims it (llm-d-router v0.10.0 parsers/openai/openai.go:102).
    assert pool["spec"]["appProtocol"] == "http"
    picker = pool["spec"]["endpointPickerRef"]
    # AI Gateway v1.1.0 builds the picker's filter fail-closed whatever the field
    # says (internal/extensionserver/inferencepool.go:314): say what happens.
    assert picker["failureMode"] == FAILURE_MODE == "FailClose", "explicit, and what happens"
    assert picker["name"] == by_part["picker-service"]["metadata"]["name"]
    assert picker["port"] == {"number": by_part["picker-service"]["spec"]["ports"][0]["port"]}
    assert rendered.backend_ref == {
        "group": "inference.networking.k8s.io",
        "kind": "InferencePool",
        "name": "md-team-a-qwen-0123456789",
    }
    assert "service" not in by_part, "the pool, not a Service, fronts the engines"
    assert by_part["engine"] == parts("Direct")["engine"], "the same pods as Direct"


def test_llmd_endpoint_picker() -> None:
    by_part = parts("LLMD")
    name = by_part["picker"]["metadata"]["name"]
    args = container(by_part["picker"])["args"]
    assert args[args.index("--pool-name") + 1] == "md-team-a-qwen-0123456789"
    assert args[args.index("--pool-namespace") + 1] == "fleetgate-system"
    pod = by_part["picker"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == by_part["picker-account"]["metadata"]["name"] == name
    assert pod["volumes"] == [{"name": "config", "configMap": {"name": name}}]
    config = by_part["picker-config"]["data"]["epp-config.yaml"]
    assert json.loads(config) == PICKER_CONFIG
    selector = by_part["picker"]["spec"]["selector"]["matchLabels"]
    assert by_part["picker-service"]["spec"]["selector"] == selector
    assert selector != by_part["engine"]["spec"]["selector"]["matchLabels"]
    assert by_part["picker-binding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": name, "namespace": "fleetgate-system"}
    ]
    assert (
        by_part["picker-binding"]["roleRef"]["name"] == by_part["picker-role"]["metadata"]["name"]
    )
    resources = {r for rule in by_part["picker-role"]["rules"] for r in rule["resources"]}
    assert {"pods", "inferencepools"} <= resources


def grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    """Every (apiGroup, resource, verb) a Role or ClusterRole allows."""
    return {
        (g, r, v)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def test_llmd_endpoint_picker_may_authenticate_metrics_scrapes() -> None:
    # The picker serves /metrics behind controller-runtime's authn/authz filter
    # (GAIE v1.5.0 cmd/epp/runner/runner.go:274-282): it must create token and access
    # reviews, as upstream's chart grants (config/charts/epplib/templates/_rbac.yaml).
    by_part = parts("LLMD")
    account = by_part["picker-account"]["metadata"]
    role, binding = by_part["picker-auth-role"], by_part["picker-auth-binding"]
    assert (role["kind"], binding["kind"]) == ("ClusterRole", "ClusterRoleBinding")
    assert "namespace" not in role["metadata"]
    assert "namespace" not in binding["metadata"]
    assert grants(role) == {
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    # Cluster-wide names: one per deployment, never another deployment's.
    other = PROVIDERS["LLMD"].render(WORKLOAD(name="md-team-b-qwen-0123456789"))
    other_role = {p.part: p.manifest for p in other.parts}["picker-auth-role"]
    assert other_role["metadata"]["name"] != role["metadata"]["name"]


def test_llmd_serves_vllm_on_gpus_only() -> None:
    capability = CEILINGS["LLMD"]
    assert capability.refuses("vllm", 1, "Aggregated") is None
    assert capability.refuses("sglang", 1, "Aggregated") is not None
    assert capability.refuses("vllm", 0, "Aggregated") is not None
    assert capability.refuses("vllm", 1, "Disaggregated") is not None
    assert CEILINGS["Direct"].refuses("llamacpp", 0, "Aggregated") is None


def test_every_provider_has_a_renderer_of_its_name() -> None:
    assert set(PROVIDERS) == set(get_args(ServingProvider))
    for name in PROVIDERS:
        assert PROVIDERS[name].name == name
        assert PROVIDERS[name] is PROVIDERS[name], "one renderer per provider"


def test_a_renderer_is_imported_when_a_deployment_first_needs_it() -> None:
    """A process placing only Direct deployments builds no other provider's override models."""
    code = (
        "import sys\n"
        "import fleetgate.model_deployment.main\n"
        "from fleetgate.model_deployment.providers import PROVIDERS\n"
        "PROVIDERS['Direct']\n"
        "prefix = 'fleetgate.model_deployment.providers.'\n"
        "print(sorted(m.removeprefix(prefix) for m in sys.modules if m.startswith(prefix)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "['base', 'direct', 'pods']"


def test_http_route_on_the_cluster_gateway() -> None:
    backend = {"group": "", "kind": "Service", "name": "svc", "port": 8000}
    route = routing.http_route(WORKLOAD(), namespace="team-a", name="qwen", backend=backend)
    assert route["metadata"]["namespace"] == "fleetgate-system"
    assert route["spec"]["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "namespace": "fleetgate-system",
            "name": names.CLUSTER_GATEWAY,
            "sectionName": "https",
        }
    ]
    (rule,) = route["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/team-a/qwen/"}}]
    assert rule["filters"] == [
        {
            "type": "URLRewrite",
            "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
        }
    ]
    assert rule["backendRefs"] == [backend]


SERVING = [
    pytest.param({}, False, id="no status yet"),
    pytest.param(
        {"status": {"replicas": 2, "availableReplicas": 0}}, False, id="no replica available"
    ),
    pytest.param(
        {"status": {"replicas": 2, "availableReplicas": 1}}, True, id="scaling up from one"
    ),
    pytest.param({"status": {"replicas": 2, "availableReplicas": 2}}, True, id="all available"),
    pytest.param({"spec": {"replicas": 0}, "status": {"replicas": 0}}, True, id="scaled to zero"),
    pytest.param(
        {"spec": {"replicas": 1}, "status": {"replicas": 1, "availableReplicas": 0}},
        False,
        id="woken, not serving yet",
    ),
]


@pytest.mark.parametrize(("remote", "want"), SERVING)
def test_an_engine_deployment_is_ready_while_one_replica_serves(
    remote: dict[str, Any], want: bool
) -> None:
    env = celpy.Environment()
    program = env.program(env.compile(pods.SERVING_QUERY))
    assert bool(program.evaluate({"object": json_to_cel(remote)})) is want
