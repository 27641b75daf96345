"""The LLMD endpoint picker: llm-d-router v0.10.0's, reading InferencePool v1.

The image is the one llm-d-router's release builds for tag v0.10.0; every runner
fact is read from llm-d-router at that tag (its own runner, cmd/epp/main.go:32):

* the runner's flags: ``pkg/epp/server/options.go:158-241``, logging's ``-v`` and
  controller-runtime's zap flags (``pkg/common/observability/logging/options.go:50-62``);
* its gRPC health server knows the services ``liveness``, ``readiness`` and
  the ext_proc service (``cmd/epp/runner/health.go:51-52,80-104``);
* the scheduling plugin types the config names (each plugin's registered type).
"""

from typing import Any

import pytest

from fleetgate.model_deployment.providers import PROVIDERS, llmd
from fleetgate.model_deployment.providers.base import Workload
from fleetgate.model_deployment.providers.dynamo import DynamoOverrides, EndpointPicker
from tests.unit.test_model_deployment_builders import WORKLOAD, grants

# llm-d-router v0.10.0 Makefile:21,26-30 (EPP_IMAGE_NAME under ghcr.io/llm-d).
RELEASE_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"

# Every flag llm-d-router v0.10.0's runner defines (pkg/epp/server/options.go:158-241),
# logging's -v and the zap flags it binds (pkg/common/observability/logging/options.go:50-62).
RUNNER_FLAGS = frozenset(
    {
        "--allow-experimental-plugins",
        "--cache-info-metric",
        "--cert-path",
        "--config-file",
        "--config-text",
        "--disable-endpoint-subset-filter",
        "--drain-timeout",
        "--emit-endpoint-scores",
        "--enable-cert-reload",
        "--enable-grpc-stream-metrics",
        "--enable-pprof",
        "--endpoint-selector",
        "--endpoint-target-ports",
        "--grpc-health-port",
        "--grpc-max-recv-msg-size",
        "--grpc-max-send-msg-size",
        "--grpc-port",
        "--ha-enable-leader-election",
        "--health-checking",
        "--kv-cache-usage-percentage-metric",
        "--lora-info-metric",
        "--metrics-cert-dir",
        "--metrics-client-ca-file",
        "--metrics-endpoint-auth",
        "--metrics-port",
        "--metrics-staleness-threshold",
        "--pool-group",
        "--pool-name",
        "--pool-namespace",
        "--refresh-metrics-interval",
        "--refresh-prometheus-metrics-interval",
        "--secure-serving",
        "--tls-cipher-suites",
        "--tls-min-version",
        "--total-queued-requests-metric",
        "--total-running-requests-metric",
        "--tracing",
        "--v",
        "--zap-devel",
        "--zap-encoder",
        "--zap-log-level",
        "--zap-stacktrace-level",
        "--zap-time-encoding",
    }
)

# Plugin type -> role, for scheduling types llm-d-router v0.10.0 registers
# (cmd/epp/runner/runner.go:611-628).
REGISTERED_PLUGINS: dict[str, str] = {
    "prefix-cache-scorer": "scorer",
    "max-score-picker": "picker",
    "random-picker": "picker",
    "weighted-random-picker": "picker",
    "single-profile-handler": "profile-handler",
    "kv-cache-utilization-scorer": "scorer",
    "queue-scorer": "scorer",
    "running-requests-size-scorer": "scorer",
    "lora-affinity-scorer": "scorer",
    "token-load-scorer": "scorer",
}


def dynamo_behind_a_picker() -> Workload:
    return WORKLOAD(overrides=DynamoOverrides(epp=EndpointPicker()))


def picker_parts(provider: str, workload: Workload) -> dict[str, dict[str, Any]]:
    rendered = PROVIDERS[provider].render(workload)  # type: ignore[index]
    return {p.part: p.manifest for p in rendered.parts}


def picker_container(provider: str, workload: Workload) -> dict[str, Any]:
    (only,) = picker_parts(provider, workload)["picker"]["spec"]["template"]["spec"]["containers"]
    return dict(only)


PICKERS = [
    pytest.param("LLMD", WORKLOAD, id="LLMD over its engines"),
    pytest.param("Dynamo", dynamo_behind_a_picker, id="Dynamo epp over its frontends"),
]


@pytest.mark.parametrize(("provider", "workload"), PICKERS)
def test_the_picker_runs_the_llm_d_router_v0_10_release(provider: str, workload: Any) -> None:
    assert picker_container(provider, workload())["image"] == RELEASE_IMAGE


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--pool-name", "md-team-a-qwen-0123456789"),
        ("--pool-namespace", "fleetgate-system"),
        ("--pool-group", "inference.networking.k8s.io"),
        ("--config-file", "/config/epp-config.yaml"),
        ("--zap-encoder", "json"),
    ],
)
def test_the_picker_is_told_its_pool_and_config_by_the_runners_flags(flag: str, value: str) -> None:
    args = picker_container("LLMD", WORKLOAD())["args"]
    assert args[args.index(flag) + 1] == value


def test_the_picker_passes_only_flags_the_runner_defines() -> None:
    args = picker_container("LLMD", WORKLOAD())["args"]
    flags = {a for a in args if a.startswith("--")}
    assert flags <= RUNNER_FLAGS, f"unknown to the runner: {sorted(flags - RUNNER_FLAGS)}"


@pytest.mark.parametrize(
    ("name", "port"),
    [("grpc", 9002), ("grpc-health", 9003), ("metrics", 9090)],  # options.go:31,112-113
)
def test_the_picker_serves_on_the_runners_default_ports(name: str, port: int) -> None:
    ports = {p["name"]: p["containerPort"] for p in picker_container("LLMD", WORKLOAD())["ports"]}
    assert ports[name] == port


@pytest.mark.parametrize("probe", ["livenessProbe", "readinessProbe"])
def test_the_picker_is_probed_on_a_service_its_health_server_knows(probe: str) -> None:
    # health.go:64-86 answers SERVICE_UNKNOWN for any other name once leader
    # election is on; without it (:49-57) every name passes, the known one too.
    grpc = picker_container("LLMD", WORKLOAD())[probe]["grpc"]
    assert grpc == {"port": 9003, "service": EXT_PROC_SERVICE}


def _config() -> dict[str, Any]:
    return llmd.PICKER_CONFIG


def test_the_picker_config_is_the_releases_endpoint_picker_config_format() -> None:
    # llm-d-router v0.10.0 apix/config/v1alpha1/zz_generated.register.go:15-18; decoded
    # strictly (pkg/epp/config/loader/configloader.go:237-238).
    config = _config()
    assert (config["apiVersion"], config["kind"]) == (
        "llm-d.ai/v1alpha1",
        "EndpointPickerConfig",
    )
    assert set(config) <= {"apiVersion", "kind", "plugins", "schedulingProfiles"}
    for plugin in config["plugins"]:
        assert set(plugin) <= {"name", "type", "parameters"}
    for profile in config["schedulingProfiles"]:
        assert set(profile) <= {"name", "plugins"}
        for ref in profile["plugins"]:
            assert set(ref) <= {"pluginRef", "weight"}


def test_the_picker_config_names_only_plugins_the_release_registers() -> None:
    types = {p["type"] for p in _config()["plugins"]}
    assert types <= REGISTERED_PLUGINS.keys(), sorted(types - REGISTERED_PLUGINS.keys())


def _roles() -> dict[str, str]:
    """Plugin instance name -> role (an instance is named after its type unless named)."""
    return {p.get("name", p["type"]): REGISTERED_PLUGINS[p["type"]] for p in _config()["plugins"]}


@pytest.mark.parametrize(
    ("role", "instances"),
    [
        # Explicit rather than added by the loader's defaults (llm-d-router v0.10.0
        # pkg/epp/config/loader/defaults.go:146-220).
        ("profile-handler", 1),
        ("picker", 1),
    ],
)
def test_the_picker_config_names_its_profile_handler_and_picker(role: str, instances: int) -> None:
    assert list(_roles().values()).count(role) == instances


def test_every_scorer_in_the_profile_carries_its_weight() -> None:
    # Fleetgate weighs its scorers itself rather than take the loader's
    # default of one for each (llm-d-router v0.10.0 pkg/epp/config/loader/defaults.go:41-44).
    roles = _roles()
    (profile,) = _config()["schedulingProfiles"]
    refs = profile["plugins"]
    # The profile handler chooses profiles; everything else runs in one.
    in_profile = {name for name, role in roles.items() if role != "profile-handler"}
    assert {r["pluginRef"] for r in refs} == in_profile, "every instance is used"
    for ref in refs:
        if roles[ref["pluginRef"]] == "scorer":
            assert isinstance(ref.get("weight"), int), ref
            assert ref["weight"] > 0, ref
        else:
            assert "weight" not in ref, ref


@pytest.mark.parametrize("group", ["llm-d.ai", "inference.networking.x-k8s.io"])
@pytest.mark.parametrize("resource", ["inferenceobjectives", "inferencemodelrewrites"])
def test_the_picker_may_watch_the_pools_objectives_in_either_group(
    group: str, resource: str
) -> None:
    # llm-d-router v0.10.0 serves InferenceObjective and InferenceModelRewrite
    # under llm-d.ai (its CRDs in schemas/crds/off-proxy); a watch the picker may not
    # list keeps its cache from syncing, and with it the pool from being served.
    role = picker_parts("LLMD", WORKLOAD())["picker-role"]
    assert {(group, resource, verb) for verb in ("get", "list", "watch")} <= grants(role)
