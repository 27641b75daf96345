"""The InferenceCluster XR."""

from typing import Annotated, Self

from pydantic import Field, model_validator

from fleetgate.core.kinds.cluster_status import InferenceClusterStatus
from fleetgate.core.models import (
    Composite,
    EndpointLabels,
    GPUType,
    Model,
    Name,
    ObjectName,
    SecretKey,
    SecretKeyRef,
    ServingProvider,
)


class KubeconfigRef(SecretKeyRef):
    key: SecretKey = "kubeconfig"
    """Key of the Secret holding the kubeconfig. Defaults to kubeconfig."""


class ClusterCredentials(Model):
    secret_ref: KubeconfigRef | None = None
    """A kubeconfig Secret in the fleetgate-system namespace of the control plane. Fleetgate
    composes a provider-kubernetes ClusterProviderConfig from it (and a provider-helm one when
    stack.install is true)."""
    provider_config_name: ObjectName | None = None
    """Name of an existing provider-kubernetes ClusterProviderConfig (kubernetes.m.crossplane.io)
    that reaches the cluster. Fleetgate uses it as is and composes no provider config of its
    own."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.secret_ref is None) == (self.provider_config_name is None):
            raise ValueError("set exactly one of secretRef or providerConfigName")
        return self


class PlacementMetadata(Model):
    labels: EndpointLabels = Field(default_factory=dict)
    """Labels (at most 16) stamped onto every ModelEndpoint composed for this cluster, so
    ModelServices can select endpoints by cluster traits (e.g. region: eu). On a key collision
    the cluster's value wins over a ModelDeployment's template label. Keys under
    fleetgate.dev/ are reserved for labels Fleetgate manages."""


class ClusterPlacement(Model):
    metadata: PlacementMetadata = Field(default_factory=PlacementMetadata)
    """Metadata stamped onto objects composed for this cluster."""


class Capacity(Model):
    gpus: Annotated[int, Field(ge=0, le=100000)] = 0
    """Total schedulable GPUs on the cluster. 0 (the default) means the cluster is CPU-only."""
    gpu_type: GPUType | None = None
    """GPU model of the cluster's GPUs, e.g. nvidia-h100."""


class ClusterGatewaySpec(Model):
    class_name: ObjectName = "envoy"
    """GatewayClass of the cluster gateway. Defaults to envoy."""


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


class StackMetrics(Model):
    prometheus_address: (
        Annotated[
            str, Field(min_length=8, max_length=2048, pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")
        ]
        | None
    ) = None
    """URL of a Prometheus-compatible query API holding the fleet gateways' metrics (e.g.
    http://prometheus.monitoring.svc:9090), reachable from this cluster. The scaler on this
    cluster reads a deployment's demand there; a cluster without it is no candidate for a
    ModelDeployment with spec.scaling.minReplicas 0."""


class StackSpec(Model):
    install: bool = False
    """When true, Fleetgate also installs the serving stack with provider-helm Releases at pinned
    versions (cert-manager, trust-manager, Envoy Gateway, Envoy AI Gateway and its CRDs,
    Gateway API Inference Extension CRDs), each created only once what it depends on is ready;
    Envoy Gateway gets InferencePool support only after AI Gateway, which grants it the RBAC
    to read InferencePools, is ready. Setting it back to false, or deleting the
    InferenceCluster, removes nothing from the cluster: the Helm releases (and the CRDs they
    carry, which hold every AIGatewayRoute, AIServiceBackend, Certificate and Gateway there),
    the Inference Extension CRDs and the GatewayClass stay installed and are no longer
    managed; uninstall them with helm uninstall. Defaults to false."""
    rate_limit_redis: RedisAddress | None = None
    """Where Envoy Gateway's rate-limit service on this cluster counts the callers' limits, as
    host:port (a comma-separated list for Redis Sentinel or Cluster). Absent: the stack
    composes a Redis of its own on the cluster, so limits count per cluster. Give every
    cluster the same Redis to count each caller's limits across all their gateways. Only with
    install: true."""
    metrics: StackMetrics = Field(default_factory=StackMetrics)
    """Where this cluster reads the fleet's metrics from."""


class KaitoSpec(Model):
    """How KAITO runs on the cluster; read by compose-model-deployment for KAITO Workspaces."""

    # KAITO v0.12.0's default (featureGates.disableNodeAutoProvisioning: false).
    node_auto_provisioning: bool = True
    """Whether KAITO provisions nodes for its Workspaces (KAITO's default,
    featureGates.disableNodeAutoProvisioning false). Set false for a KAITO installed to run on
    existing nodes. Defaults to true."""
    instance_type: Name | None = None
    """The instance type KAITO provisions Workspace nodes of (e.g. Standard_NC24ads_A100_v4),
    used when a ModelDeployment does not set spec.provider.overrides.resource.instanceType.
    Only with nodeAutoProvisioning; without one, such deployments must set the override."""


class InferenceClusterSpec(Model):
    credentials: ClusterCredentials = Field(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.secretRef) != has(self.providerConfigName)",
                    "message": (
                        "spec.credentials must set exactly one of secretRef or providerConfigName"
                    ),
                },
            ],
        }
    )
    """How Fleetgate reaches the cluster. Set exactly one of secretRef (Fleetgate builds a
    ClusterProviderConfig from a kubeconfig Secret) or providerConfigName (use an existing
    provider-kubernetes ClusterProviderConfig as is)."""
    placement: ClusterPlacement = Field(default_factory=ClusterPlacement)
    """What ModelDeployments see of this cluster when they place replicas."""
    capacity: Capacity = Field(default_factory=Capacity)
    """What the cluster can run. Used by ModelDeployment placement."""
    providers: Annotated[list[ServingProvider], Field(min_length=1, max_length=5)] = Field(
        ["Direct"],
        json_schema_extra={
            "x-kubernetes-list-type": "set",
        },
    )
    """Serving providers installed on the cluster; a ModelDeployment is only placed where its
    provider is installed. Defaults to [Direct]."""
    gateway: ClusterGatewaySpec = Field(default_factory=ClusterGatewaySpec)
    """The cluster gateway that fleet gateways reach over mutual TLS."""
    stack: StackSpec = Field(default_factory=StackSpec)
    """Optional installation of the serving stack on the cluster."""
    kaito: KaitoSpec = Field(
        default_factory=KaitoSpec,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": (
                        "!has(self.instanceType) || !has(self.nodeAutoProvisioning) || "
                        "self.nodeAutoProvisioning"
                    ),
                    "message": (
                        "spec.kaito.instanceType is only for a KAITO that provisions nodes "
                        "(spec.kaito.nodeAutoProvisioning true)"
                    ),
                },
            ],
        },
    )
    """How KAITO runs on this cluster, when providers includes KAITO. KAITO v0.12.0's admission
    webhook requires a Workspace's resource.instanceType when KAITO provisions nodes itself
    (its default) and refuses one when it does not: a ModelDeployment served by KAITO is
    placed here only when the two agree, and Scheduled names the field to set otherwise."""
    schedulable: bool = True
    """Whether ModelDeployments may place replicas here. false drains the cluster: no new
    placements, and its existing endpoints are withdrawn. Defaults to true."""


class InferenceCluster(Composite):
    spec: InferenceClusterSpec
    """Desired state of the InferenceCluster."""
    status: InferenceClusterStatus = Field(default_factory=InferenceClusterStatus)
    """Observed state of the InferenceCluster, published for the other Fleetgate functions."""
