"""The one small interface every serving provider implements.

A provider turns a ``Workload`` (the deployment's share on one cluster, with
its engine resolved) into the remote objects that run it, names the backend
the cluster gateway's HTTPRoute sends traffic to, and reads back how many
replicas are ready. Everything around that (selection, placement, the route,
the ModelEndpoint, status) is the same for every provider and lives outside.

A provider also declares how it takes ``spec.provider.overrides``
(``overrides``: a strict model whose fields are the root keys it accepts).
What it *can* render (the ceiling a Composition's provider catalog may offer,
never exceed) is its ``Capability`` in the package's ``CEILINGS``.
"""

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import BaseModel

from fleetgate.core import names
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.models import EngineType, ServingProvider
from fleetgate.core.observed import Observed

Manifest = dict[str, Any]
ServingMode = Literal["Aggregated", "Disaggregated"]

# Selects one workload's pods; its value is unique per (namespace, deployment).
WORKLOAD_LABEL = "fleetgate.dev/workload"

# Engines in the order selection prefers them (api.md).
ENGINE_PREFERENCE: tuple[EngineType, ...] = ("vllm", "sglang", "trtllm", "llamacpp")


class EngineRun(NamedTuple):
    """The engine exactly as it will run: image, command line, environment, where it listens."""

    type: EngineType
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # the served model name first
    port: int
    health_path: str


class Workload(NamedTuple):
    """One deployment's replicas on one cluster, as a provider renders them.

    ``name`` is unique per (namespace, deployment) and a DNS-1035 label, so
    every provider can use it for a Service as well as for anything else.
    """

    name: str
    namespace: str  # on the workload cluster (every deployment shares it)
    labels: Mapping[str, str]  # stamped on every remote object and pod
    engine: EngineRun
    gpus: int  # per engine process (per replica, or per prefill/decode worker); 0 runs on CPU
    replicas: int
    model: str = ""  # spec.model.name, for providers that start the engine themselves
    served: str = ""  # the served model name, <namespace>/<name>
    mode: ServingMode = "Aggregated"
    overrides: BaseModel | None = None  # the provider's decoded spec.provider.overrides
    instance_type: str | None = None  # KAITO: the node type it provisions (the cluster's)

    @property
    def selector(self) -> dict[str, str]:
        """The label that picks this workload's engine pods and nothing else."""
        return {WORKLOAD_LABEL: self.name}

    def child(self, suffix: str) -> str:
        """A DNS-1035 name for a helper object of this workload (e.g. its endpoint picker)."""
        return names.dns_label(self.name, suffix)


class RemotePart(NamedTuple):
    """One object a provider puts on the cluster.

    ``part`` names it among the workload's objects (stable across passes: it
    becomes part of the composition resource name). ``readiness_query`` is a
    CEL query over the remote object, or None for the default of its kind.
    """

    part: str
    manifest: Manifest
    readiness_query: str | None = None
    # The part whose spec.replicas sizes the workload, which a scaler may own instead
    # (through its scale subresource).
    scaled: bool = False


class Rendered(NamedTuple):
    parts: tuple[RemotePart, ...]
    backend_ref: Manifest  # an HTTPRoute backendRef to what serves the engine
    notes: tuple[str, ...] = ()  # what the user should know about how the spec was taken


class EngineSupport(NamedTuple):
    """How one engine can run: on GPUs, on CPUs, in which serving modes."""

    gpu: bool
    cpu: bool
    modes: frozenset[ServingMode]


class Capability(NamedTuple):
    """What a provider runs, engine by engine: data, so selection can reason on it."""

    engines: Mapping[EngineType, EngineSupport]

    def refuses(self, engine: EngineType, gpus: int, mode: ServingMode) -> str | None:
        """Why this provider cannot run ``engine`` with ``gpus`` per replica in ``mode``."""
        support = self.engines.get(engine)
        if support is None:
            offered = ", ".join(e for e in ENGINE_PREFERENCE if e in self.engines) or "none"
            return f"does not run engine {engine} (runs {offered})"
        if gpus > 0 and not support.gpu:
            return f"does not run {engine} on GPUs"
        if gpus == 0 and not support.cpu:
            return f"does not run {engine} on CPU (set spec.resources.gpu.count)"
        if mode not in support.modes:
            return f"does not run {engine} in servingMode {mode}"
        return None

    def exceeds(self, ceiling: "Capability") -> list[str]:
        """What this capability claims beyond ``ceiling`` (empty when it fits)."""
        beyond = []
        for engine, support in sorted(self.engines.items()):
            top = ceiling.engines.get(engine)
            if top is None:
                beyond.append(f"engine {engine}")
                continue
            if support.gpu and not top.gpu:
                beyond.append(f"{engine} on GPUs")
            if support.cpu and not top.cpu:
                beyond.append(f"{engine} on CPU")
            beyond += [f"{engine} in {m}" for m in sorted(support.modes - top.modes)]
        return beyond


def support(*, gpu: bool = True, cpu: bool = False, disaggregated: bool = False) -> EngineSupport:
    modes: frozenset[ServingMode] = frozenset(
        ("Aggregated", "Disaggregated") if disaggregated else ("Aggregated",)
    )
    return EngineSupport(gpu=gpu, cpu=cpu, modes=modes)


class Renderer:
    """What most providers share; each provider states only what differs."""

    starts_engine: bool = True
    scales: bool = False
    sizing_paths: frozenset[str] = frozenset()

    def default_image(self, engine: EngineType) -> str | None:
        return None

    def check(self, workload: Workload) -> str | None:
        return None

    def refuses_cluster(self, workload: Workload, cluster: InferenceCluster) -> str | None:
        return None

    def for_cluster(self, workload: Workload, cluster: InferenceCluster) -> Workload:
        return workload


class Provider(Protocol):
    name: ServingProvider
    # Root keys of spec.provider.overrides, decoded strictly (unknown keys at
    # any depth are errors). An empty model accepts no overrides.
    overrides: type[BaseModel]
    # Whether the provider starts the engine itself from spec.model.name and the
    # served model name (KAITO, Dynamo, KubeRay) rather than running the user's
    # command line as written (Direct, LLMD).
    starts_engine: bool
    # Whether one of its parts is ``scaled``: a scaler can size it, down to zero.
    scales: bool
    # Override paths (dotted, below the root) that size the workload in this
    # provider's own terms: refused like the sizing keys every provider refuses.
    sizing_paths: frozenset[str]

    def default_image(self, engine: EngineType) -> str | None:
        """The image for ``engine`` when the user names none; None: the engine's own."""
        ...

    def check(self, workload: Workload) -> str | None:
        """Why this provider cannot run ``workload`` as given; None when it can."""
        ...

    def refuses_cluster(self, workload: Workload, cluster: InferenceCluster) -> str | None:
        """Why the provider on ``cluster`` would refuse ``workload``; None when it accepts it.

        Checked before a new replica is placed there, so that nothing the
        cluster's admission would refuse is composed.
        """
        ...

    def for_cluster(self, workload: Workload, cluster: InferenceCluster) -> Workload:
        """``workload`` with what ``cluster`` adds to how the provider runs it."""
        ...

    def render(self, workload: Workload) -> Rendered:
        """The remote objects running ``workload`` and the backend the route targets."""
        ...

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        """Engine replicas ready, from each part's Object as observed (``.remote`` is the
        remote object); a part missing from ``observed`` was not observed."""
        ...
