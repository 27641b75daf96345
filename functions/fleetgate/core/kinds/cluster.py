"""The InferenceCluster XR."""

from typing import Annotated, Self

from pydantic import Field, model_validator

from fleetgate.core.kinds.cluster_status import InferenceClusterStatus
from fleetgate.core.models import (
    Composite,
    GPUType,
    LabelKey,
    LabelValue,
    Model,
    Name,
    ObjectName,
    SecretKey,
    SecretKeyRef,
    ServingProvider,
)


class KubeconfigRef(SecretKeyRef):
    key: SecretKey = "kubeconfig"


class ClusterCredentials(Model):
    secret_ref: KubeconfigRef | None = None
    provider_config_name: ObjectName | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.secret_ref is None) == (self.provider_config_name is None):
            raise ValueError("set exactly one of secretRef or providerConfigName")
        return self


class PlacementMetadata(Model):
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=16)


class ClusterPlacement(Model):
    metadata: PlacementMetadata = Field(default_factory=PlacementMetadata)


class Capacity(Model):
    gpus: Annotated[int, Field(ge=0, le=100000)] = 0
    gpu_type: GPUType | None = None


class ClusterGatewaySpec(Model):
    class_name: ObjectName = "envoy"


# host:port, or a comma-separated list of them (Redis Sentinel or Cluster), as
# Envoy Gateway takes it (RateLimitRedisSettings.URL, api/v1alpha1/
# envoygateway_types.go:667-670 at v1.8.3).
RedisAddress = Annotated[
    str,
    Field(
        max_length=1024,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?:[0-9]{1,5}(,[a-z0-9]([-a-z0-9.]*[a-z0-9])?:[0-9]{1,5})*$",
    ),
]


class StackSpec(Model):
    install: bool = False
    # None: the stack's own Redis on the cluster.
    rate_limit_redis: RedisAddress | None = None


class KaitoSpec(Model):
    """How KAITO runs on the cluster; read by compose-model-deployment for KAITO Workspaces."""

    # KAITO v0.12.0's default (featureGates.disableNodeAutoProvisioning: false).
    node_auto_provisioning: bool = True
    instance_type: Name | None = None


class InferenceClusterSpec(Model):
    credentials: ClusterCredentials
    placement: ClusterPlacement = Field(default_factory=ClusterPlacement)
    capacity: Capacity = Field(default_factory=Capacity)
    providers: Annotated[list[ServingProvider], Field(min_length=1, max_length=5)] = ["Direct"]
    gateway: ClusterGatewaySpec = Field(default_factory=ClusterGatewaySpec)
    stack: StackSpec = Field(default_factory=StackSpec)
    kaito: KaitoSpec = Field(default_factory=KaitoSpec)
    schedulable: bool = True


class InferenceCluster(Composite):
    spec: InferenceClusterSpec
    status: InferenceClusterStatus = Field(default_factory=InferenceClusterStatus)
