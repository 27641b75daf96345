"""Serving providers: one renderer module each, behind ``base.Provider``.

``CEILINGS`` is what each provider's renderer can run: the most a
Composition's provider catalog may offer for it (``catalog.within``). It is
data every call reads, so it is here; the renderer module is imported the
first time a deployment is placed on that provider (``PROVIDERS[name]``). A
renderer module holds the provider's strict override models, and building
those for providers no deployment uses was about 2 ms of every cold start
(bench/README.md).
"""

import importlib
import threading
from collections.abc import Iterator, Mapping

from fleetgate.core.models import ServingProvider
from fleetgate.model_deployment.providers.base import (
    ENGINE_PREFERENCE,
    Capability,
    Provider,
    support,
)

CEILINGS: Mapping[ServingProvider, Capability] = {
    "Direct": Capability({e: support(gpu=True, cpu=True) for e in ENGINE_PREFERENCE}),
    "LLMD": Capability({"vllm": support(gpu=True)}),
    "KAITO": Capability({"vllm": support(gpu=True), "llamacpp": support(gpu=True, cpu=True)}),
    "Dynamo": Capability(
        {
            "vllm": support(gpu=True, disaggregated=True),
            "sglang": support(gpu=True, disaggregated=True),
            "trtllm": support(gpu=True),
        }
    ),
    "KubeRay": Capability({"vllm": support(gpu=True)}),
}

# Provider → (its module under this package, its renderer class).
_RENDERERS: Mapping[ServingProvider, tuple[str, str]] = {
    "Direct": ("direct", "Direct"),
    "LLMD": ("llmd", "LLMD"),
    "KAITO": ("kaito", "KAITO"),
    "Dynamo": ("dynamo", "Dynamo"),
    "KubeRay": ("kuberay", "KubeRay"),
}


class _Renderers(Mapping[ServingProvider, Provider]):
    """Provider name → its renderer, the renderer's module imported on first use."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # composing runs on several threads
        self._made: dict[ServingProvider, Provider] = {}

    def __getitem__(self, name: ServingProvider) -> Provider:
        with self._lock:
            made = self._made.get(name)
            if made is None:
                module, cls = _RENDERERS[name]
                made = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
                self._made[name] = made
            return made

    def __iter__(self) -> Iterator[ServingProvider]:
        return iter(_RENDERERS)

    def __len__(self) -> int:
        return len(_RENDERERS)


PROVIDERS: Mapping[ServingProvider, Provider] = _Renderers()
