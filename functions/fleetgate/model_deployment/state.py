"""What this function reads back: its own earlier status, and other deployments' placements.

Placements are the memory of the scheduler: the XR's ``status.placements``
from the last reconcile is what "keep what runs" keeps. Other deployments'
published placements are what they use of each cluster's GPUs.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from fleetgate.core.models import (
    EngineType,
    Model,
    Name,
    ObjectMeta,
    ServingProvider,
    parse,
    wire_fields,
)
from fleetgate.core.observed import Observed
from fleetgate.core.reconcile import describe_object
from fleetgate.model_deployment.placement import gpus_per_replica

Replicas = Annotated[int, Field(ge=0, le=1024)]


class PlacementEntry(Model):
    cluster: Name
    replicas: Replicas


class EngineChoice(Model):
    type: EngineType | None = None
    selected_reason: str = ""


class ProviderChoice(Model):
    name: ServingProvider | None = None
    selected_reason: str = ""


class ReplicaCounts(Model):
    desired: Replicas = 0
    ready: Replicas = 0


class ScalingStatus(Model):
    state: Literal["Active", "Idle", "Waking"] | None = None
    last_request_time: str | None = None


class DeploymentStatus(Model):
    engine: EngineChoice = Field(default_factory=EngineChoice)
    provider: ProviderChoice = Field(default_factory=ProviderChoice)
    placements: Annotated[tuple[PlacementEntry, ...], Field(max_length=1024)] = ()
    replicas: ReplicaCounts = Field(default_factory=ReplicaCounts)
    scaling: ScalingStatus = Field(default_factory=ScalingStatus)


class _Observed(Model):
    status: DeploymentStatus = Field(default_factory=DeploymentStatus)


def own_status(xr: Observed) -> DeploymentStatus:
    """This deployment's status as last written; InputError names a malformed field."""
    read = wire_fields(_Observed)  # its status; a model that reads everything gets None
    # With the kind and name its messages give.
    data = xr.to_dict(None if read is None else {"kind": None, "metadata": {"name": None}, **read})
    return parse(_Observed, data, describe_object(data, "ModelDeployment")).status


class _GPU(Model):
    count: Annotated[int, Field(ge=0, le=64)] | None = None


class _Resources(Model):
    gpu: _GPU = Field(default_factory=_GPU)


class _PeerSpec(Model):
    resources: _Resources = Field(default_factory=_Resources)
    serving_mode: str = "Aggregated"


class _PeerStatus(Model):
    placements: Annotated[tuple[PlacementEntry, ...], Field(max_length=1024)] = ()


class _Peer(Model):
    metadata: ObjectMeta
    spec: _PeerSpec = Field(default_factory=_PeerSpec)
    status: _PeerStatus = Field(default_factory=_PeerStatus)


def gpus_used_by_peers(
    peers: list[dict[str, Any]], namespace: str, name: str
) -> tuple[dict[str, int], list[str]]:
    """GPUs each cluster gives other deployments (replicas times GPUs per replica), and problems.

    A peer that cannot be read is left out with a warning rather than failing
    this deployment: one team's broken object must not stop every other
    team's placements (the API server validates both fields, so this is rare).
    """
    used: dict[str, int] = {}
    problems = []
    for raw in peers:
        try:
            peer = _Peer.model_validate(raw)
        except ValidationError:
            problems.append(f"{describe_object(raw, 'ModelDeployment')}: unreadable, not counted")
            continue
        if (peer.metadata.namespace, peer.metadata.name) == (namespace, name):
            continue
        per_replica = gpus_per_replica(peer.spec.resources.gpu.count or 0, peer.spec.serving_mode)
        for entry in peer.status.placements:
            used[entry.cluster] = used.get(entry.cluster, 0) + entry.replicas * per_replica
    return used, sorted(problems)
