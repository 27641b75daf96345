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
from typing import NamedTuple

from fleetgate.core.models import ServingProvider
from fleetgate.model_deployment.providers.base import (
    ENGINE_PREFERENCE,
    Capability,
    Provider,
    support,
)


class _Entry(NamedTuple):
    module: str  # the renderer's module, under this package
    renderer: str  # its class
    ceiling: Capability  # what it can run


# One row per provider.
_REGISTRY: Mapping[ServingProvider, _Entry] = {
    "Direct": _Entry(
        "direct", "Direct", Capability({e: support(gpu=True, cpu=True) for e in ENGINE_PREFERENCE})
    ),
    "LLMD": _Entry("llmd", "LLMD", Capability({"vllm": support(gpu=True)})),
    "KAITO": _Entry(
        "kaito",
        "KAITO",
        Capability({"vllm": support(gpu=True), "llamacpp": support(gpu=True, cpu=True)}),
    ),
    "Dynamo": _Entry(
        "dynamo",
        "Dynamo",
        Capability(
            {
                "vllm": support(gpu=True, disaggregated=True),
                "sglang": support(gpu=True, disaggregated=True),
                "trtllm": support(gpu=True),
            }
        ),
    ),
    "KubeRay": _Entry("kuberay", "KubeRay", Capability({"vllm": support(gpu=True)})),
}

CEILINGS: Mapping[ServingProvider, Capability] = {
    name: entry.ceiling for name, entry in _REGISTRY.items()
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
                entry = _REGISTRY[name]
                module = importlib.import_module(f"{__name__}.{entry.module}")
                made = getattr(module, entry.renderer)()
                self._made[name] = made
            return made

    def __iter__(self) -> Iterator[ServingProvider]:
        return iter(_REGISTRY)

    def __len__(self) -> int:
        return len(_REGISTRY)


PROVIDERS: Mapping[ServingProvider, Provider] = _Renderers()
