"""What an InferenceCluster publishes in its status, apart from its spec.

Every kind that reaches a cluster (a gateway routing to it, a service's
routes) reads only this: how to reach the cluster and its gateway's CA. Kept
apart so that those functions do not build the models of a cluster's spec.
"""

from pydantic import Field

from fleetgate.core.models import Condition, Model


class ProviderConfigRef(Model):
    name: str | None = None


class ClusterGatewayStatus(Model):
    address: str | None = None
    ca_certificate: str | None = Field(None, alias="caCertificate")
    hostname: str | None = None


class InferenceClusterStatus(Model):
    provider_config_ref: ProviderConfigRef = Field(default_factory=ProviderConfigRef)
    gateway: ClusterGatewayStatus = Field(default_factory=ClusterGatewayStatus)
    conditions: list[Condition] = Field(default_factory=list)
