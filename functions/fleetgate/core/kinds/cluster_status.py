"""What an InferenceCluster publishes in its status, apart from its spec.

Every kind that reaches a cluster (a gateway routing to it, a service's
routes) reads only this: how to reach the cluster and its gateway's CA. Kept
apart so that those functions do not build the models of a cluster's spec.
"""

from typing import Annotated

from pydantic import Field

from fleetgate.core.models import Condition, Model

# A PEM certificate as a status carries it.
PEM = Annotated[str, Field(max_length=32768)]


class ProviderConfigRef(Model):
    name: Annotated[str, Field(max_length=253)] | None = None
    """Name of the ClusterProviderConfig."""


class ClusterGatewayStatus(Model):
    address: Annotated[str, Field(max_length=253)] | None = None
    """Load-balancer address (IP or DNS name) of the cluster gateway."""
    ca_certificate: PEM | None = Field(None, alias="caCertificate")
    """PEM of the cluster's own CA, read from the ConfigMap trust-manager publishes (never from a
    Secret)."""
    hostname: Annotated[str, Field(max_length=253)] | None = None
    """Derived name fleet gateways use for this cluster
    (<label>.fleetgate-system.svc.cluster.local). Published only once the cluster has an
    address, its own CA and trusts at least one fleet gateway client CA; only then is the
    cluster schedulable."""


class InferenceClusterStatus(Model):
    provider_config_ref: ProviderConfigRef = Field(default_factory=ProviderConfigRef)
    """The provider-kubernetes ClusterProviderConfig used to reach the cluster."""
    gateway: ClusterGatewayStatus = Field(default_factory=ClusterGatewayStatus)
    """The cluster gateway as fleet gateways must address and trust it."""
    conditions: list[Condition] = Field(default_factory=list)
