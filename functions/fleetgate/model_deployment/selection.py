"""Which engine and which serving provider run the deployment, and why.

Part 1 runs what the user names. A choice, once made, is recorded in status
and kept (sticky) while the spec leaves the field unset, so a later change of
defaults never restarts a running model. Automatic selection (rules over the
deployment, a catalog of provider capabilities) takes the place of
``_sticky``'s last resort without changing ``choose``'s shape.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from fleetgate.core.models import EngineType, ModelDeploymentSpec, ServingProvider
from fleetgate.model_deployment.providers.base import Provider
from fleetgate.model_deployment.state import DeploymentStatus


@dataclass(frozen=True)
class Choice:
    engine: EngineType
    engine_reason: str
    provider: ServingProvider
    provider_reason: str


@dataclass(frozen=True)
class Unchosen:
    """No runnable choice: the Scheduled condition's reason and message."""

    reason: str
    message: str


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


def choose(
    spec: ModelDeploymentSpec,
    previous: DeploymentStatus,
    providers: Mapping[ServingProvider, Provider],
) -> Choice | Unchosen:
    available = ", ".join(sorted(providers))
    engine: tuple[EngineType, str] | None = _sticky(
        spec.engine.type, "spec.engine.type", previous.engine.type, previous.engine.selected_reason
    )
    if engine is None:
        return Unchosen(
            "EngineRequired",
            "spec.engine.type is unset and engines are not selected automatically yet: "
            "set one of vllm, sglang, trtllm, llamacpp",
        )
    provider: tuple[ServingProvider, str] | None = _sticky(
        spec.provider.name,
        "spec.provider.name",
        previous.provider.name,
        previous.provider.selected_reason,
    )
    if provider is None:
        return Unchosen(
            "ProviderRequired",
            "spec.provider.name is unset and providers are not selected automatically yet: "
            f"set one of {available}",
        )
    renderer = providers.get(provider[0])
    if renderer is None:
        return Unchosen(
            "ProviderUnavailable",
            f"provider {provider[0]} cannot be rendered by this version (available: {available})",
        )
    refused = renderer.capability.refuses(
        engine[0], spec.resources.gpu.count or 0, spec.serving_mode
    )
    if refused is not None:
        return Unchosen("ProviderCannotServe", f"provider {provider[0]} {refused}")
    return Choice(engine[0], engine[1], provider[0], provider[1])
