"""The one small interface every serving provider implements.

A provider turns a ``Workload`` (the deployment's share on one cluster, with
its engine resolved) into the remote objects that run it, names the backend
the cluster gateway's HTTPRoute sends traffic to, and reads back how many
replicas are ready. Everything around that (placement, the route, the
ModelEndpoint, status) is the same for every provider and lives outside.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from fleetgate.core import names
from fleetgate.core.models import EngineType, ServingProvider

Manifest = dict[str, Any]
ServingMode = Literal["Aggregated", "Disaggregated"]

# Selects one workload's pods; its value is unique per (namespace, deployment).
WORKLOAD_LABEL = "fleetgate.dev/workload"


@dataclass(frozen=True)
class EngineRun:
    """The engine exactly as it will run: image, command line, environment, where it listens."""

    type: EngineType
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # the served model name first
    port: int
    health_path: str


@dataclass(frozen=True)
class Workload:
    """One deployment's replicas on one cluster, as a provider renders them.

    ``name`` is unique per (namespace, deployment) and a DNS-1035 label, so
    every provider can use it for a Service as well as for anything else.
    """

    name: str
    namespace: str  # on the workload cluster (every deployment shares it)
    labels: Mapping[str, str]  # stamped on every remote object and pod
    engine: EngineRun
    gpus: int  # per replica; 0 runs on CPU
    replicas: int

    @property
    def selector(self) -> dict[str, str]:
        """The label that picks this workload's engine pods and nothing else."""
        return {WORKLOAD_LABEL: self.name}

    def child(self, suffix: str) -> str:
        """A DNS-1035 name for a helper object of this workload (e.g. its endpoint picker)."""
        return names.dns_label(self.name, suffix)


@dataclass(frozen=True)
class RemotePart:
    """One object a provider puts on the cluster.

    ``part`` names it among the workload's objects (stable across passes: it
    becomes part of the composition resource name). ``readiness_query`` is a
    CEL query over the remote object, or None for the default of its kind.
    """

    part: str
    manifest: Manifest
    readiness_query: str | None = None


@dataclass(frozen=True)
class Rendered:
    parts: tuple[RemotePart, ...]
    backend_ref: Manifest  # an HTTPRoute backendRef to what serves the engine


@dataclass(frozen=True)
class Capability:
    """What a provider can run: data, so selection (and part 2's catalog) can reason on it."""

    engines: frozenset[EngineType]
    gpu: bool
    cpu: bool
    modes: frozenset[ServingMode]

    def refuses(self, engine: EngineType, gpus: int, mode: ServingMode) -> str | None:
        """Why this provider cannot run ``engine`` with ``gpus`` per replica in ``mode``."""
        if engine not in self.engines:
            return f"does not run engine {engine} (runs {', '.join(sorted(self.engines))})"
        if gpus > 0 and not self.gpu:
            return "does not run GPU models"
        if gpus == 0 and not self.cpu:
            return "does not run CPU models (set spec.resources.gpu.count)"
        if mode not in self.modes:
            return f"does not support servingMode {mode}"
        return None


class Provider(Protocol):
    name: ServingProvider
    capability: Capability

    def render(self, workload: Workload) -> Rendered:
        """The remote objects running ``workload`` and the backend the route targets."""
        ...

    def ready_replicas(self, observed: Mapping[str, Manifest | None]) -> int:
        """Engine replicas ready, from the remote objects as observed (keyed by part)."""
        ...
