"""Which engine and which serving provider run the deployment, and why.

A field the spec sets is used as given. An unset field keeps the choice
recorded in status (sticky: a later change of rules or of the fleet never
restarts a running model); only a deployment with nothing recorded is
selected afresh, from the provider catalog (``catalog.py``):

* **engine**: the first of vllm > sglang > trtllm > llamacpp that a candidate
  provider runs for this deployment's GPU/CPU need and serving mode. The
  candidates are the named provider when there is one, else every provider
  that has selection rules and is installed on a candidate cluster.
* **provider**: every catalog provider that runs the engine this way, is
  installed on a candidate cluster and has a matching rule scores the highest
  priority of its matching rules; the highest score wins, ties go to the
  provider name that sorts first. A provider without rules is never selected,
  only named. A rule that cannot be evaluated does not match and is reported.

When nothing qualifies, the reason lists why each provider was excluded.
"""

from typing import NamedTuple, TypeVar

from fleetgate.core.kinds.deployment import ModelDeploymentSpec
from fleetgate.core.models import EngineType, ServingProvider
from fleetgate.core.reconcile import bounded
from fleetgate.core.verdict import Verdict
from fleetgate.model_deployment import rules
from fleetgate.model_deployment.catalog import ProviderCatalog, ProviderEntry
from fleetgate.model_deployment.providers.base import ENGINE_PREFERENCE, ServingMode
from fleetgate.model_deployment.state import DeploymentStatus

NOT_INSTALLED = "not installed on a candidate cluster"
EXPLICIT_ONLY = "has no selection rules (runs only deployments that name it)"


class Choice(NamedTuple):
    engine: EngineType
    engine_reason: str
    provider: ServingProvider
    provider_reason: str


class Selection(NamedTuple):
    outcome: Choice | Verdict
    rule_errors: tuple[str, ...] = ()  # rules skipped because they could not be evaluated


class Need(NamedTuple):
    """What the deployment asks of a provider."""

    gpus: int
    mode: ServingMode

    @property
    def hardware(self) -> str:
        return f"{self.gpus} GPU(s)" if self.gpus else "CPU"


Name = TypeVar("Name", bound=str)


def _sticky(
    given: Name | None, field: str, recorded: Name | None, why: str
) -> tuple[Name, str] | None:
    """The spec's value if set, else the one recorded earlier (with its reason), else None."""
    if given is not None:
        return given, f"set in {field}"
    if recorded is not None:
        return recorded, why
    return None


def _excluded(why: dict[str, str]) -> str:
    return "; ".join(f"{name}: {reason}" for name, reason in sorted(why.items()))


def choose_engine(
    pool: list[ProviderEntry], need: Need, catalog: ProviderCatalog, *, named: bool = False
) -> tuple[EngineType, str] | Verdict:
    """The preferred engine some provider of ``pool`` runs for ``need``.

    ``pool`` is the named provider, or the providers selection may pick; the
    others are listed with why they were not candidates.
    """
    for engine in ENGINE_PREFERENCE:
        runners = sorted(
            p.name for p in pool if p.capability.refuses(engine, need.gpus, need.mode) is None
        )
        if runners:
            order = " > ".join(ENGINE_PREFERENCE)
            return engine, bounded(
                f"selected: the first of {order} that {', '.join(runners)} run(s) on "
                f"{need.hardware} in {need.mode} mode"
            )
    why: dict[str, str] = {}
    names = {p.name for p in pool}
    for entry in catalog.providers:
        if named and entry.name not in names:
            continue  # a named provider: the others were never in question
        if entry.name not in names:
            why[entry.name] = EXPLICIT_ONLY if not entry.selection_rules else NOT_INSTALLED
        else:
            why[entry.name] = f"runs no engine on {need.hardware} in {need.mode} mode"
    return Verdict.no(
        "NoEngineAvailable",
        f"spec.engine.type is unset and no candidate provider runs an engine on "
        f"{need.hardware} in {need.mode} mode: {_excluded(why)}",
    )


def choose_provider(
    spec: ModelDeploymentSpec,
    engine: EngineType,
    need: Need,
    catalog: ProviderCatalog,
    installed: frozenset[str],
) -> tuple[tuple[ServingProvider, str] | Verdict, list[str]]:
    """The winning provider by the catalog's rules, and the rules that could not be evaluated."""
    view = rules.spec_view(spec, engine)
    scores: dict[ServingProvider, tuple[int, str]] = {}
    why: dict[str, str] = {}
    errors: list[str] = []
    for entry in sorted(catalog.providers, key=lambda p: p.name):
        refused = entry.capability.refuses(engine, need.gpus, need.mode)
        if not entry.selection_rules:
            why[entry.name] = EXPLICIT_ONLY
        elif refused is not None:
            why[entry.name] = refused
        elif entry.name not in installed:
            why[entry.name] = NOT_INSTALLED
        else:
            best: tuple[int, str] | None = None
            for i, rule in enumerate(entry.selection_rules):
                result = rules.evaluate(rule.condition, view)
                if isinstance(result, str):
                    errors.append(f"provider {entry.name} selection rule {i} skipped: {result}")
                elif result and (best is None or rule.priority > best[0]):
                    best = (rule.priority, rule.condition)
            if best is None:
                why[entry.name] = "no selection rule matches"
            else:
                scores[entry.name] = best
    if not scores:
        return Verdict.no(
            "NoCandidateProvider",
            f"spec.provider.name is unset and no provider can be selected for {engine} on "
            f"{need.hardware} in {need.mode} mode: {_excluded(why)}",
        ), errors
    ranked = sorted(scores.items(), key=lambda item: (-item[1][0], item[0]))
    winner, (priority, condition) = ranked[0]
    others = ", ".join(f"{name} ({score[0]})" for name, score in ranked[1:])
    reason = f"selected by rule `{condition}` (priority {priority})" + (
        f"; also matched: {others}" if others else ""
    )
    return (winner, bounded(reason)), errors


def choose(
    spec: ModelDeploymentSpec,
    previous: DeploymentStatus,
    catalog: ProviderCatalog,
    installed: frozenset[str],
) -> Selection:
    """Engine and provider for ``spec``; ``installed``: providers on some candidate cluster."""
    need = Need(gpus=spec.resources.gpu.count or 0, mode=spec.serving_mode)
    provider: tuple[ServingProvider, str] | None = _sticky(
        spec.provider.name,
        "spec.provider.name",
        previous.provider.name,
        previous.provider.selected_reason,
    )
    named = None
    if provider is not None:
        named = catalog.entry(provider[0])
        if named is None:
            return Selection(
                Verdict.no(
                    "ProviderNotOffered",
                    f"provider {provider[0]} is not in the Composition's provider catalog "
                    f"(offered: {', '.join(catalog.names)})",
                )
            )

    engine: tuple[EngineType, str] | Verdict | None = _sticky(
        spec.engine.type, "spec.engine.type", previous.engine.type, previous.engine.selected_reason
    )
    if engine is None:
        pool = (
            [named]
            if named is not None
            else [p for p in catalog.providers if p.selection_rules and p.name in installed]
        )
        engine = choose_engine(pool, need, catalog, named=named is not None)
    if isinstance(engine, Verdict):
        return Selection(engine)

    if named is not None and provider is not None:
        refused = named.capability.refuses(engine[0], need.gpus, need.mode)
        if refused is not None:
            return Selection(Verdict.no("ProviderCannotServe", f"provider {named.name} {refused}"))
        return Selection(Choice(engine[0], engine[1], provider[0], provider[1]))

    chosen, errors = choose_provider(spec, engine[0], need, catalog, installed)
    if isinstance(chosen, Verdict):
        return Selection(chosen, tuple(errors))
    return Selection(Choice(engine[0], engine[1], chosen[0], chosen[1]), tuple(errors))
