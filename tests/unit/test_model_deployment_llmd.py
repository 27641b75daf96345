"""The LLMD endpoint picker: the llm-d release that reads GAIE v1.0.2's InferencePool v1.

Upstream facts, all at llm-d-router tag v0.3.2 (commit c834d27a; the project
was still named llm-d-inference-scheduler) and the GAIE module it builds, v1.0.0
(its ``go.mod:24``), whose EPP code is identical to GAIE v1.0.2's:

* the picker is GAIE v1.0.0's runner with llm-d's plugins registered
  (``cmd/epp/main.go:36-43``);
* the runner's flags: ``cmd/epp/runner/runner.go:77-108`` (GAIE v1.0.0), zap's
  from ``opts.BindFlags`` (``:137-140``);
* its gRPC health server knows the services ``liveness``, ``readiness`` and
  the ext_proc service (``cmd/epp/runner/health.go:41-44,64-86``);
* the plugin types a config may name: GAIE's in-tree ones
  (``runner.go:300-311``) and llm-d's (``pkg/plugins/register.go:12-23``).
"""

from typing import Any

import pytest

from fleetgate.model_deployment.providers import PROVIDERS, llmd
from fleetgate.model_deployment.providers.base import Workload
from fleetgate.model_deployment.providers.dynamo import DynamoOverrides, EndpointPicker
from tests.unit.test_model_deployment_builders import WORKLOAD

RELEASE_IMAGE = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.2"
EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"

# Every flag GAIE v1.0.0's runner defines (cmd/epp/runner/runner.go:77-108) and
# the zap flags controller-runtime binds (:137-140). An unknown flag stops the
# picker at start (flag.Parse, :141).
RUNNER_FLAGS = frozenset(
    {
        "--grpc-port",
        "--grpc-health-port",
        "--metrics-port",
        "--enable-pprof",
        "--pool-name",
        "--pool-group",
        "--pool-namespace",
        "--v",
        "--secure-serving",
        "--health-checking",
        "--cert-path",
        "--total-queued-requests-metric",
        "--kv-cache-usage-percentage-metric",
        "--lora-info-metric",
        "--refresh-metrics-interval",
        "--refresh-prometheus-metrics-interval",
        "--metrics-staleness-threshold",
        "--config-file",
        "--config-text",
        "--model-server-metrics-port",
        "--model-server-metrics-path",
        "--model-server-metrics-scheme",
        "--model-server-metrics-https-insecure-skip-verify",
        "--ha-enable-leader-election",
        "--zap-devel",
        "--zap-encoder",
        "--zap-log-level",
        "--zap-stacktrace-level",
        "--zap-time-encoding",
    }
)

# Plugin type -> role, for every type the v0.3.2 picker registers.
REGISTERED_PLUGINS: dict[str, str] = {
    # GAIE v1.0.0 cmd/epp/runner/runner.go:300-311
    "prefix-cache-scorer": "scorer",
    "max-score-picker": "picker",
    "random-picker": "picker",
    "weighted-random-picker": "picker",
    "single-profile-handler": "profile-handler",
    "kv-cache-utilization-scorer": "scorer",
    "queue-scorer": "scorer",
    "lora-affinity-scorer": "scorer",
    # llm-d v0.3.2 pkg/plugins/register.go:13-22
    "by-label": "filter",
    "by-label-selector": "filter",
    "decode-filter": "filter",
    "prefill-filter": "filter",
    "prefill-header-handler": "pre-request",
    "pd-profile-handler": "profile-handler",
    "precise-prefix-cache-scorer": "scorer",
    "load-aware-scorer": "scorer",
    "session-affinity-scorer": "scorer",
    "active-request-scorer": "scorer",
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
def test_the_picker_runs_the_llm_d_release_built_on_gaie_v1_0(provider: str, workload: Any) -> None:
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
    [("grpc", 9002), ("grpc-health", 9003), ("metrics", 9090)],  # runserver.go:69-71
)
def test_the_picker_serves_on_the_runners_default_ports(name: str, port: int) -> None:
    ports = {p["name"]: p["containerPort"] for p in picker_container("LLMD", WORKLOAD())["ports"]}
    assert ports[name] == port


@pytest.mark.parametrize("probe", ["livenessProbe", "readinessProbe"])
def test_the_picker_is_probed_on_a_service_its_health_server_knows(probe: str) -> None:
    # health.go:64-86 answers SERVICE_UNKNOWN for any other name once leader
    # election is on; without it (:49-56) every name passes, the known one too.
    grpc = picker_container("LLMD", WORKLOAD())[probe]["grpc"]
    assert grpc == {"port": 9003, "service": EXT_PROC_SERVICE}


def _config() -> dict[str, Any]:
    return llmd.PICKER_CONFIG


def test_the_picker_config_is_the_releases_endpoint_picker_config_format() -> None:
    # GAIE v1.0.0 apix/config/v1alpha1: zz_generated.register.go:31-34 and
    # endpointpickerconfig_types.go:29-112; decoded strictly (configloader.go:79).
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
        # Explicit, as the release's sample config has them (deploy/config/
        # epp-config.yaml:5-9), rather than added by the loader's defaults.
        ("profile-handler", 1),
        ("picker", 1),
    ],
)
def test_the_picker_config_names_its_profile_handler_and_picker(role: str, instances: int) -> None:
    assert list(_roles().values()).count(role) == instances


def test_every_scorer_in_the_profile_carries_its_weight() -> None:
    # The loader gives a default weight only to scorers listed before the
    # profile's picker (GAIE v1.0.0 pkg/epp/config/loader/defaults.go:115-125)
    # and dereferences every scorer's weight (configloader.go:92-94).
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
