"""compose-model-deployment: engine and provider selection, and the provider catalog.

The worked-outcomes table is the contract of the bundled catalog (api.md's
rules): GPUs, engine, serving mode and the providers installed on candidate
clusters → the engine and provider chosen, or why none could be.
"""

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetgate.core.kinds.deployment import ModelDeploymentSpec
from fleetgate.core.verdict import Verdict
from fleetgate.model_deployment import rules
from fleetgate.model_deployment.catalog import BUNDLED, BUNDLED_DATA, ProviderCatalog
from fleetgate.model_deployment.composer import compose
from fleetgate.model_deployment.selection import Choice, choose
from fleetgate.model_deployment.state import DeploymentStatus
from schemas import validate
from schemas.xrds import CATALOG_CRD
from tests.support import Outcome, request, run
from tests.unit.test_model_deployment import ARGS, cluster, deployment, remote

REPO = Path(__file__).resolve().parents[2]
COMPOSITION = REPO / "compositions" / "modeldeployments.yaml"
ALL = frozenset({"Direct", "LLMD", "KAITO", "Dynamo", "KubeRay"})
AGG, DIS = "Aggregated", "Disaggregated"


def spec(
    gpus: int, engine: str | None, mode: str = AGG, provider: str | None = None
) -> ModelDeploymentSpec:
    data: dict[str, Any] = {"model": {"name": "Qwen/Qwen3-8B"}, "servingMode": mode}
    if gpus:
        data["resources"] = {"gpu": {"count": gpus}}
    if engine:
        data["engine"] = {"type": engine}
    if provider:
        data["provider"] = {"name": provider}
    return ModelDeploymentSpec.model_validate(data)


# name, GPUs, engine (None: unset), mode, installed, named provider,
# want: (engine, provider) or (the Verdict reason, a fragment of its message)
OUTCOMES: list[tuple[str, int, str | None, str, frozenset[str], str | None, tuple[str, str]]] = [
    ("CPU, engine unset: llama.cpp on KAITO", 0, None, AGG, ALL, None, ("llamacpp", "KAITO")),
    ("CPU, llama.cpp: KAITO", 0, "llamacpp", AGG, ALL, None, ("llamacpp", "KAITO")),
    ("CPU, KAITO not installed: no engine", 0, None, AGG, ALL - {"KAITO"}, None,
     ("NoEngineAvailable", "KAITO: not installed on a candidate cluster")),
    ("CPU, vLLM: nobody runs it on CPU", 0, "vllm", AGG, ALL, None,
     ("NoCandidateProvider", "KAITO: does not run vllm on CPU")),
    ("CPU, disaggregated: no engine", 0, None, DIS, ALL, None,
     ("NoEngineAvailable", "Dynamo: runs no engine on CPU in Disaggregated mode")),
    ("1 GPU, engine unset: vLLM on Dynamo", 1, None, AGG, ALL, None, ("vllm", "Dynamo")),
    ("1 GPU, vLLM: Dynamo", 1, "vllm", AGG, ALL, None, ("vllm", "Dynamo")),
    ("1 GPU, no Dynamo: KAITO and KubeRay rules do not match", 1, "vllm", AGG,
     frozenset({"KAITO", "KubeRay", "Direct"}), None,
     ("NoCandidateProvider", "KAITO: no selection rule matches; KubeRay: no selection rule")),
    ("2 GPUs, engine unset: vLLM on KubeRay over Dynamo", 2, None, AGG, ALL, None,
     ("vllm", "KubeRay")),
    ("2 GPUs, vLLM, no KubeRay: Dynamo", 2, "vllm", AGG, ALL - {"KubeRay"}, None,
     ("vllm", "Dynamo")),
    ("8 GPUs, vLLM, only KubeRay: KubeRay", 8, "vllm", AGG, frozenset({"KubeRay"}), None,
     ("vllm", "KubeRay")),
    ("1 GPU, SGLang: Dynamo", 1, "sglang", AGG, ALL, None, ("sglang", "Dynamo")),
    ("1 GPU, TensorRT-LLM: Dynamo", 1, "trtllm", AGG, ALL, None, ("trtllm", "Dynamo")),
    ("1 GPU, llama.cpp: KAITO", 1, "llamacpp", AGG, ALL, None, ("llamacpp", "KAITO")),
    ("1 GPU, disaggregated: vLLM on Dynamo", 1, None, DIS, ALL, None, ("vllm", "Dynamo")),
    ("2 GPUs, disaggregated: Dynamo, KubeRay runs aggregated only", 2, None, DIS, ALL, None,
     ("vllm", "Dynamo")),
    ("1 GPU, TensorRT-LLM disaggregated: nobody", 1, "trtllm", DIS, ALL, None,
     ("NoCandidateProvider", "Dynamo: does not run trtllm in servingMode Disaggregated")),
    ("1 GPU, only explicit-only providers installed", 1, None, AGG,
     frozenset({"Direct", "LLMD"}), None,
     ("NoEngineAvailable", "Direct: has no selection rules")),
    ("nothing installed anywhere", 1, "vllm", AGG, frozenset(), None,
     ("NoCandidateProvider", "Dynamo: not installed on a candidate cluster")),
    ("named LLMD, engine unset: the engine it runs", 1, None, AGG, frozenset(), "LLMD",
     ("vllm", "LLMD")),
    ("named KAITO on CPU, engine unset: llama.cpp", 0, None, AGG, frozenset(), "KAITO",
     ("llamacpp", "KAITO")),
    ("named LLMD on CPU: no engine it runs", 0, None, AGG, ALL, "LLMD",
     ("NoEngineAvailable", "LLMD: runs no engine on CPU")),
    ("named KubeRay with llama.cpp", 1, "llamacpp", AGG, ALL, "KubeRay",
     ("ProviderCannotServe", "provider KubeRay does not run engine llamacpp")),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[1:] for c in OUTCOMES], ids=[c[0] for c in OUTCOMES])
def test_worked_outcomes(
    case: tuple[int, str | None, str, frozenset[str], str | None, tuple[str, str]],
) -> None:
    gpus, engine, mode, installed, named, want = case
    outcome = choose(spec(gpus, engine, mode, named), DeploymentStatus(), BUNDLED, installed)
    assert outcome.rule_errors == ()
    if isinstance(outcome.outcome, Choice):
        assert (outcome.outcome.engine, outcome.outcome.provider) == want
    else:
        assert (outcome.outcome.reason, want[1] in outcome.outcome.message) == (want[0], True), (
            outcome.outcome.message
        )


def test_reasons_say_which_rule_and_what_else_matched() -> None:
    chosen = choose(spec(2, None), DeploymentStatus(), BUNDLED, ALL).outcome
    assert isinstance(chosen, Choice)
    assert chosen.engine_reason == (
        "selected: the first of vllm > sglang > trtllm > llamacpp that Dynamo, KAITO, KubeRay "
        "run(s) on 2 GPU(s) in Aggregated mode"
    )
    assert chosen.provider_reason == (
        "selected by rule `spec.resources.gpu.count > 1 && spec.engine.type == 'vllm'` "
        "(priority 80); also matched: Dynamo (50)"
    )


def test_a_no_candidate_reason_lists_every_provider() -> None:
    outcome = choose(spec(1, "vllm"), DeploymentStatus(), BUNDLED, frozenset({"KubeRay"})).outcome
    assert isinstance(outcome, Verdict)
    for why in (
        "Direct: has no selection rules",
        "Dynamo: not installed on a candidate cluster",
        "KAITO: not installed on a candidate cluster",
        "KubeRay: no selection rule matches",
        "LLMD: has no selection rules",
    ):
        assert why in outcome.message


def catalog(*providers: dict[str, Any]) -> ProviderCatalog:
    return ProviderCatalog.model_validate(
        {
            "apiVersion": BUNDLED_DATA["apiVersion"],
            "kind": "ProviderCatalog",
            "providers": providers,
        }
    )


def gpu_vllm(name: str, *conditions: tuple[str, int]) -> dict[str, Any]:
    return {
        "name": name,
        "engines": [{"name": "vllm"}],
        "selectionRules": [{"condition": c, "priority": p} for c, p in conditions],
    }


RULES: list[tuple[str, ProviderCatalog, str, list[str]]] = [
    ("a tie goes to the name that sorts first",
     catalog(gpu_vllm("KubeRay", ("true", 10)), gpu_vllm("Dynamo", ("true", 10))), "Dynamo", []),
    ("the highest matching rule of a provider counts",
     catalog(gpu_vllm("KubeRay", ("true", 10), ("false", 99)),
             gpu_vllm("Dynamo", ("true", 5), ("true", 20))), "Dynamo", []),
    ("priority 0 still selects", catalog(gpu_vllm("KubeRay", ("true", 0))), "KubeRay", []),
    ("a rule that fails to evaluate is skipped and reported",
     catalog(gpu_vllm("Dynamo", ("spec.nothere.x == 1", 100), ("true", 1)),
             gpu_vllm("KubeRay", ("true", 50))),
     "KubeRay", ["provider Dynamo selection rule 0 skipped: failed to evaluate"]),
    ("a rule that does not compile is skipped and reported",
     catalog(gpu_vllm("Dynamo", ("spec.engine.type ==", 100)), gpu_vllm("KubeRay", ("true", 1))),
     "KubeRay", ["provider Dynamo selection rule 0 skipped: does not compile"]),
    ("a rule that is not a bool is skipped and reported",
     catalog(gpu_vllm("Dynamo", ("spec.engine.type", 100)), gpu_vllm("KubeRay", ("true", 1))),
     "KubeRay", ["provider Dynamo selection rule 0 skipped: gives string, not a bool"]),
    ("has() guards a missing field",
     catalog(gpu_vllm("Dynamo", ("has(spec.placement.clusterSelector.matchLabels.zone)", 9)),
             gpu_vllm("KubeRay", ("true", 1))), "KubeRay", []),
    ("false || error is an error, error || true is true",
     catalog(gpu_vllm("Dynamo", ("false || spec.nothere", 9)),
             gpu_vllm("KubeRay", ("spec.nothere || true", 1))),
     "KubeRay", ["provider Dynamo selection rule 0 skipped"]),
    ("numbers compare across int and double",
     catalog(gpu_vllm("KubeRay", ("spec.resources.gpu.count == 1.0", 1))), "KubeRay", []),
    ("the rules see the deployment's fields",
     catalog(gpu_vllm("KubeRay", ("spec.model.name.startsWith('Qwen/')", 1)),
             gpu_vllm("Dynamo", ("spec.replicas > 100", 9))), "KubeRay", []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("offered", "winner", "reported"), [c[1:] for c in RULES], ids=[c[0] for c in RULES]
)
def test_rules(offered: ProviderCatalog, winner: str, reported: list[str]) -> None:
    outcome = choose(spec(1, "vllm"), DeploymentStatus(), offered, ALL)
    assert isinstance(outcome.outcome, Choice), outcome.outcome
    assert outcome.outcome.provider == winner
    assert len(outcome.rule_errors) == len(reported)
    for error, fragment in zip(outcome.rule_errors, reported, strict=True):
        assert error.startswith(fragment)


def test_the_rules_see_the_selected_engine_and_no_overrides() -> None:
    view = rules.spec_view(
        ModelDeploymentSpec.model_validate(
            {"model": {"name": "m"}, "provider": {"overrides": {"spec": {}}}}
        ),
        "llamacpp",
    )
    assert view["engine"]["type"] == "llamacpp"
    assert view["resources"]["gpu"]["count"] == 0
    assert "overrides" not in view["provider"]
    assert (view["servingMode"], view["replicas"]) == ("Aggregated", 1)


STICKY: list[tuple[str, dict[str, Any], ModelDeploymentSpec, tuple[str, str, str, str]]] = [
    (
        "a recorded choice is kept although the rules now say otherwise",
        {"engine": {"type": "vllm", "selectedReason": "r1"},
         "provider": {"name": "KubeRay", "selectedReason": "r2"}},
        spec(1, None),
        ("vllm", "r1", "KubeRay", "r2"),
    ),
    (
        "a field the spec sets wins over the record",
        {"engine": {"type": "vllm", "selectedReason": "r1"},
         "provider": {"name": "KubeRay", "selectedReason": "r2"}},
        spec(1, "sglang", provider="Dynamo"),
        ("sglang", "set in spec.engine.type", "Dynamo", "set in spec.provider.name"),
    ),
    (
        "a recorded provider fixes the engine candidates",
        {"provider": {"name": "KAITO", "selectedReason": "r2"}},
        spec(1, None),
        ("vllm", "selected: the first of vllm > sglang > trtllm > llamacpp that KAITO run(s) "
         "on 1 GPU(s) in Aggregated mode", "KAITO", "r2"),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("recorded", "given", "want"), [c[1:] for c in STICKY], ids=[c[0] for c in STICKY]
)
def test_sticky(
    recorded: dict[str, Any], given: ModelDeploymentSpec, want: tuple[str, str, str, str]
) -> None:
    chosen = choose(given, DeploymentStatus.model_validate(recorded), BUNDLED, ALL).outcome
    assert isinstance(chosen, Choice)
    assert (chosen.engine, chosen.engine_reason, chosen.provider, chosen.provider_reason) == want


# --- through the function ------------------------------------------------------------

EVERYTHING = cluster("eu-west", providers=tuple(sorted(ALL)))


def with_input(xr: dict[str, Any], catalog_data: dict[str, Any] | None, *clusters: Any) -> Outcome:
    req = request(xr, required={"clusters": list(clusters), "deployments": []})
    if catalog_data is not None:
        req.input.update(catalog_data)
    return run(compose, req)


def test_the_choice_is_recorded_in_status_and_kept() -> None:
    xr = deployment(engine={"args": ARGS}, provider={}, resources={"gpu": {"count": 2}})
    first = with_input(xr, None, EVERYTHING)
    status = first.composite["status"]
    assert status["engine"]["type"] == "vllm"
    assert status["provider"]["name"] == "KubeRay"
    assert status["provider"]["selectedReason"].startswith("selected by rule")
    assert list(remote(first, "RayService"))
    # KubeRay leaves the cluster: the recorded choice stays (placement says why it cannot run).
    xr["status"] = status
    without = cluster("eu-west", providers=("Dynamo", "Direct"))
    second = with_input(xr, None, without)
    assert second.composite["status"]["provider"] == status["provider"]
    assert second.conditions["Scheduled"][:2] == ("False", "NoCandidateClusters")


def test_a_catalog_in_the_composition_changes_the_choice() -> None:
    data = copy.deepcopy(BUNDLED_DATA)
    for entry in data["providers"]:
        if entry["name"] == "LLMD":  # make LLMD the default for one-GPU vLLM
            entry["selectionRules"] = [{"condition": "spec.engine.type == 'vllm'", "priority": 60}]
    xr = deployment(engine={"args": ARGS}, provider={})
    out = with_input(xr, data, EVERYTHING)
    assert out.composite["status"]["provider"]["name"] == "LLMD"
    assert list(remote(out, "InferencePool"))


def test_a_provider_left_out_of_the_catalog_is_not_offered() -> None:
    data = copy.deepcopy(BUNDLED_DATA)
    data["providers"] = [p for p in data["providers"] if p["name"] != "Direct"]
    out = with_input(deployment(), data, EVERYTHING)
    assert out.conditions["Scheduled"][:2] == ("False", "ProviderNotOffered")
    assert out.desired == {}


def test_rule_errors_are_warnings_not_failures() -> None:
    data = copy.deepcopy(BUNDLED_DATA)
    data["providers"][-1]["selectionRules"].insert(0, {"condition": "spec.x.y", "priority": 999})
    out = with_input(deployment(provider={}), data, EVERYTHING)
    assert out.fatal == []
    assert any("provider KubeRay selection rule 0 skipped" in w for w in out.warnings)
    assert out.composite["status"]["provider"]["name"] == "Dynamo"


def bad(path: list[Any], value: Any) -> dict[str, Any]:
    data: Any = copy.deepcopy(BUNDLED_DATA)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return dict(data)


BAD_CATALOGS: list[tuple[str, dict[str, Any], str]] = [
    ("wrong kind", bad(["kind"], "Catalog"), "kind"),
    ("wrong version", bad(["apiVersion"], "model-deployment.fn.fleetgate.dev/v2"), "apiVersion"),
    ("no providers", bad(["providers"], []), "providers"),
    ("unknown provider", bad(["providers", 0, "name"], "Triton"), "providers[0].name"),
    ("misspelt field", bad(["providers", 2, "selectionRule"], []),
     "providers[2].selectionRule: Extra inputs"),
    ("provider twice", bad(["providers", 1, "name"], "Direct"),
     "providers[1]: Direct is listed twice"),
    ("engine twice", bad(["providers", 1, "engines"], [{"name": "vllm"}, {"name": "vllm"}]),
     "engines[1]: vllm is listed twice"),
    ("priority negative", bad(["providers", 2, "selectionRules", 0, "priority"], -1),
     "providers[2].selectionRules[0].priority"),
    ("condition empty", bad(["providers", 2, "selectionRules", 0, "condition"], ""),
     "providers[2].selectionRules[0].condition"),
    ("offers what the renderer cannot: KAITO sglang",
     bad(["providers", 2, "engines", 0, "name"], "sglang"),
     "providers[2].engines: KAITO cannot run engine sglang"),
    ("offers what the renderer cannot: KubeRay disaggregated",
     bad(["providers", 4, "engines", 0, "servingModes"], ["Aggregated", "Disaggregated"]),
     "providers[4].engines: KubeRay cannot run vllm in Disaggregated"),
    ("offers what the renderer cannot: LLMD on CPU",
     bad(["providers", 1, "engines", 0, "cpu"], True), "LLMD cannot run vllm on CPU"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "field"), [c[1:] for c in BAD_CATALOGS], ids=[c[0] for c in BAD_CATALOGS]
)
def test_a_malformed_catalog_is_a_fatal_result_naming_the_field(
    data: dict[str, Any], field: str
) -> None:
    out = with_input(deployment(), data, EVERYTHING)
    assert len(out.fatal) == 1, out.results
    assert "Composition input" in out.fatal[0]
    assert field in out.fatal[0], out.fatal[0]
    assert out.desired == {}


def test_the_composition_carries_the_bundled_catalog() -> None:
    composition = yaml.safe_load(COMPOSITION.read_text())
    (step,) = composition["spec"]["pipeline"]
    assert step["input"] == BUNDLED_DATA
    assert ProviderCatalog.model_validate(step["input"]) == BUNDLED


@pytest.mark.crossplane_cli
def test_the_bundled_catalog_and_bad_ones_against_the_input_schema() -> None:
    """The shipped CRD accepts the Composition's input and refuses what the function refuses."""
    named = {**BUNDLED_DATA, "metadata": {"name": "bundled"}}
    unknown = bad(["providers", 2, "selectionRule"], [])
    engines = bad(["providers", 0, "engines", 0, "name"], "ollama")
    errors = validate.validate(
        [named, {**unknown, "metadata": {"name": "x"}}, {**engines, "metadata": {"name": "y"}}],
        extra_schema_files=[CATALOG_CRD],
    )
    assert not [e for e in errors if e.startswith("objects[0]")], errors
    assert any(e.startswith("objects[1]") and "selectionRule" in e for e in errors), errors
    assert any(e.startswith("objects[2]") and "ollama" in e for e in errors), errors


@pytest.mark.crossplane_cli
def test_the_composition_validates_with_its_input_schema() -> None:
    """``crossplane beta validate`` checks a step's input against the input's CRD."""
    composition = yaml.safe_load(COMPOSITION.read_text())
    assert validate.validate([composition], extra_schema_files=[CATALOG_CRD]) == []
    broken = copy.deepcopy(composition)
    broken["spec"]["pipeline"][0]["input"]["providers"][3]["selectionRules"][0]["priority"] = -5
    (error,) = validate.validate([broken], extra_schema_files=[CATALOG_CRD])
    assert "providers[3].selectionRules[0].priority" in error
