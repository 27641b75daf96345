"""The LLMD endpoint picker: llm-d-router v0.10.0's, reading InferencePool v1.

The image is the one llm-d-router's release builds for tag v0.10.0; the runner
facts are GAIE v1.5.0's (the module llm-d-router v0.10.0 builds on, which the
Go module proxy serves; llm-d-router's own module it refuses):

* the runner's flags: ``pkg/epp/server/options.go:120-193``, logging's ``-v`` and
  controller-runtime's zap flags (``pkg/common/observability/logging/options.go:50-63``);
  an unknown flag stops the picker at start (``cmd/epp/runner/runner.go:161-162``);
* its gRPC health server knows the services ``liveness``, ``readiness`` and
  the ext_proc service (``cmd/epp/runner/health.go:41-44,64-86``);
* the scheduling plugin types a config may name (``runner.go:452-461``).
"""

from typing import Any

import pytest

from fleetgate.model_deployment.providers import PROVIDERS, llmd
from fleetgate.model_deployment.providers.base import Workload
from fleetgate.model_deployment.providers.dynamo import DynamoOverrides, EndpointPicker
from tests.unit.test_model_deployment_builders import WORKLOAD, grants

# ghcr.io/llm-d/<repository>-endpoint-picker:<tag> (llm-d-router
# .github/workflows/ci-release.yaml, Makefile EPP_IMAGE_NAME).
RELEASE_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"

# Every flag GAIE v1.5.0's runner defines (pkg/epp/server/options.go:120-193, with
# logging/options.go:50-63) and the zap flags controller-runtime binds there.
RUNNER_FLAGS = frozenset(
    {
        "--grpc-port",
        "--ha-enable-leader-election",
        "--pool-group",
        "--pool-namespace",
        "--pool-name",
        "--endpoint-selector",
        "--endpoint-target-ports",
        "--disable-endpoint-subset-filter",
        "--model-server-metrics-scheme",
        "--model-server-metrics-path",
        "--model-server-metrics-port",
        "--model-server-metrics-https-insecure-skip-verify",
        "--refresh-metrics-interval",
        "--refresh-prometheus-metrics-interval",
        "--metrics-staleness-threshold",
        "--total-queued-requests-metric",
        "--total-running-requests-metric",
        "--kv-cache-usage-percentage-metric",
        "--lora-info-metric",
        "--cache-info-metric",
        "--v",
        "--tracing",
        "--health-checking",
        "--metrics-port",
        "--grpc-health-port",
        "--enable-pprof",
        "--cert-path",
        "--enable-cert-reload",
        "--secure-serving",
        "--metrics-endpoint-auth",
        "--config-file",
        "--config-text",
        "--zap-devel",
        "--zap-encoder",
        "--zap-log-level",
        "--zap-stacktrace-level",
        "--zap-time-encoding",
    }
)

# Plugin type -> role, for every scheduling type the runner registers
# (GAIE v1.5.0 cmd/epp/runner/runner.go:452-461).
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
    # GAIE v1.5.0 apix/config/v1alpha1: zz_generated.register.go:31-34 and
    # endpointpickerconfig_types.go:32-60; decoded strictly (configloader.go:165).
    config = _config()
    assert (config["apiVersion"], config["kind"]) == (
        "inference.networking.x-k8s.io/v1alpha1",
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
        # Explicit rather than added by the loader's defaults (GAIE v1.5.0
        # pkg/epp/config/loader/defaults.go:163-213).
        ("profile-handler", 1),
        ("picker", 1),
    ],
)
def test_the_picker_config_names_its_profile_handler_and_picker(role: str, instances: int) -> None:
    assert list(_roles().values()).count(role) == instances


def test_every_scorer_in_the_profile_carries_its_weight() -> None:
    # Fleetgate weighs its scorers itself rather than take the loader's
    # default of one for each (GAIE v1.5.0 pkg/epp/config/loader/defaults.go:200-202).
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
    # under llm-d.ai (its CRDs in e2e/crds/off-proxy); a watch the picker may not
    # list keeps its cache from syncing, and with it the pool from being served.
    role = picker_parts("LLMD", WORKLOAD())["picker-role"]
    assert {(group, resource, verb) for verb in ("get", "list", "watch")} <= grants(role)
