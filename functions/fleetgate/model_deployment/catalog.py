"""The provider catalog: the serving providers a platform offers, what each runs, when.

It is the Composition step's ``input`` (``apiVersion:
model-deployment.fn.fleetgate.dev/v1alpha1``, ``kind: ProviderCatalog``; its
CRD ships with the function package, see
``package/functions/compose-model-deployment/input/``), so a platform team
changes capabilities and selection rules by editing the Composition, never the
code. A step without an input gets ``BUNDLED``, the catalog of api.md, which
is also what ``compositions/modeldeployments.yaml`` carries.

The catalog may *offer less* than a renderer can do (take an engine away,
drop a provider entirely, make a provider explicit-only by giving it no
rules), never more (``providers.CEILINGS``): a capability no renderer backs
would place a workload nothing can run, so it is refused as bad input naming
the field. It is decoded strictly: a misspelt field in a Composition is an
error, not a rule silently ignored.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, model_validator

from fleetgate.core.errors import InputError
from fleetgate.core.inputs import function_input
from fleetgate.core.models import EngineType, Model, ServingProvider
from fleetgate.core.reconcile import Reconcile
from fleetgate.model_deployment.providers import CEILINGS
from fleetgate.model_deployment.providers.base import Capability, EngineSupport, ServingMode

INPUT_API_VERSION = "model-deployment.fn.fleetgate.dev/v1alpha1"
INPUT_KIND = "ProviderCatalog"
CONDITION_MAX = 4096
PRIORITY_MAX = 1_000_000


class _Strict(Model):
    # A Composition is written once and read by every deployment: a misspelt
    # field must be an error, not a rule silently left out.
    model_config = ConfigDict(extra="forbid", populate_by_name=False)


# A list of entries keyed by name, each name at most once, as the input's CRD says it.
BY_NAME: dict[str, Any] = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}


class EngineEntry(_Strict):
    name: EngineType
    """The engine."""
    gpu: bool = True
    """Runs models that ask for GPUs. Defaults to true."""
    cpu: bool = False
    """Runs CPU-only models (no GPU asked). Defaults to false."""
    serving_modes: Annotated[tuple[ServingMode, ...], Field(min_length=1, max_length=2)] = Field(
        ("Aggregated",), json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Serving modes it runs. Defaults to [Aggregated]."""


class SelectionRule(_Strict):
    condition: Annotated[str, Field(min_length=1, max_length=CONDITION_MAX)]
    """A CEL expression that evaluates to a bool."""
    priority: Annotated[int, Field(ge=0, le=PRIORITY_MAX)] = 0
    """Higher wins. Defaults to 0."""


def _unique(names: list[str], what: str) -> None:
    seen = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{what}[{i}]: {name} is listed twice")
        seen.add(name)


class ProviderEntry(_Strict):
    name: ServingProvider
    """The serving provider."""
    engines: Annotated[tuple[EngineEntry, ...], Field(min_length=1, max_length=4)] = Field(
        json_schema_extra=BY_NAME
    )
    """The engines this provider runs here, each at most once."""
    selection_rules: Annotated[tuple[SelectionRule, ...], Field(max_length=32)] = ()
    """When to select this provider for a ModelDeployment without spec.provider.name. Each rule
    is a CEL expression over one variable, spec: the ModelDeployment's spec with defaults
    applied, spec.engine.type set to the engine in use and spec.resources.gpu.count always
    present (0 on CPU), without spec.provider.overrides. Among the providers that run the engine
    this way and are installed on a candidate cluster, the one whose matching rule has the
    highest priority wins; ties go to the provider name that sorts first. A rule that does not
    compile, fails or is not a bool does not match and is reported. No rules: the provider runs
    only deployments that name it."""

    @model_validator(mode="after")
    def _engines_once(self) -> Self:
        _unique([e.name for e in self.engines], "engines")
        return self

    @property
    def capability(self) -> Capability:
        return Capability(
            {
                e.name: EngineSupport(gpu=e.gpu, cpu=e.cpu, modes=frozenset(e.serving_modes))
                for e in self.engines
            }
        )


class ProviderCatalog(_Strict):
    api_version: Literal["model-deployment.fn.fleetgate.dev/v1alpha1"]
    kind: Literal["ProviderCatalog"]
    # Crossplane passes an input's metadata through; nothing here reads it.
    metadata: dict[str, Any] | None = None
    providers: Annotated[tuple[ProviderEntry, ...], Field(min_length=1, max_length=5)] = Field(
        json_schema_extra=BY_NAME
    )
    """The providers offered, each at most once."""

    @model_validator(mode="after")
    def _providers_once(self) -> Self:
        _unique([p.name for p in self.providers], "providers")
        return self

    def entry(self, name: ServingProvider) -> ProviderEntry | None:
        return next((p for p in self.providers if p.name == name), None)

    @property
    def names(self) -> list[ServingProvider]:
        return sorted(p.name for p in self.providers)


def _engine(
    name: EngineType, *, cpu: bool = False, modes: tuple[ServingMode, ...] = ("Aggregated",)
) -> dict[str, Any]:
    return {"name": name, "gpu": True, "cpu": cpu, "servingModes": list(modes)}


BOTH_MODES: tuple[ServingMode, ...] = ("Aggregated", "Disaggregated")

# api.md's rules. Direct and LLMD have none: they run only deployments that
# name them. "One GPU with vllm → Dynamo" is written as "GPUs with vllm", so a
# multi-GPU vLLM model still has a home on clusters without KubeRay; where
# KubeRay is installed its higher priority wins those.
BUNDLED_DATA: dict[str, Any] = {
    "apiVersion": INPUT_API_VERSION,
    "kind": INPUT_KIND,
    "providers": [
        {
            "name": "Direct",
            "engines": [_engine(e, cpu=True) for e in ("vllm", "sglang", "trtllm", "llamacpp")],
        },
        {"name": "LLMD", "engines": [_engine("vllm")]},
        {
            "name": "KAITO",
            "engines": [_engine("vllm"), _engine("llamacpp", cpu=True)],
            "selectionRules": [
                {"condition": "spec.resources.gpu.count == 0", "priority": 100},
                {"condition": "spec.engine.type == 'llamacpp'", "priority": 100},
            ],
        },
        {
            "name": "Dynamo",
            "engines": [
                _engine("vllm", modes=BOTH_MODES),
                _engine("sglang", modes=BOTH_MODES),
                _engine("trtllm"),
            ],
            "selectionRules": [
                {"condition": "spec.engine.type in ['trtllm', 'sglang']", "priority": 100},
                {"condition": "spec.servingMode == 'Disaggregated'", "priority": 90},
                {
                    "condition": "spec.resources.gpu.count > 0 && spec.engine.type == 'vllm'",
                    "priority": 50,
                },
            ],
        },
        {
            "name": "KubeRay",
            "engines": [_engine("vllm")],
            "selectionRules": [
                {
                    "condition": "spec.resources.gpu.count > 1 && spec.engine.type == 'vllm'",
                    "priority": 80,
                }
            ],
        },
    ],
}
BUNDLED = ProviderCatalog.model_validate(BUNDLED_DATA)


def within(catalog: ProviderCatalog, ceilings: Mapping[ServingProvider, Capability]) -> None:
    """Refuse a catalog that offers what no renderer can do (InputError naming the field)."""
    for i, entry in enumerate(catalog.providers):
        beyond = entry.capability.exceeds(ceilings[entry.name])
        if beyond:
            raise InputError(
                f"invalid Composition input {INPUT_KIND}: providers[{i}].engines: "
                f"{entry.name} cannot run {', '.join(beyond)}"
            )


def load(rec: Reconcile) -> ProviderCatalog:
    """The Composition's catalog, or the bundled one when the step has no input."""
    catalog = function_input(rec, ProviderCatalog, BUNDLED)
    within(catalog, CEILINGS)
    return catalog
