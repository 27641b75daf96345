"""Every name this function gives: remote objects on the gateway's cluster, and desired-state keys.

Several InferenceGateways may share a cluster, so each remote name is derived
from the gateway's name. The three names other functions rely on (the
Gateway, the client certificate's Secret, the per-cluster CA ConfigMaps) come
from ``core.names``; the rest hang off the same ``fleetgate-gw-<gateway>``
prefix. Names built from a second input (a source Secret) always
end in a hash of the exact inputs, so ``-`` joins can never make two meet.
"""

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from fleetgate.core import names
from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.pki import CertificateAuthority

# --- desired-state keys (composition resource names) ------------------------
# Grouped by the step that owns them, so a gated step keeps exactly its own.

GATEWAY = "gateway"
ENVOY_PROXY = "envoy-proxy"
CALLER_AUTH = "caller-auth"
CALLER_KEYS = "caller-keys"
TLS = "tls-"
FAILOVER = "failover-policy"
LISTENER_POLICY = "listener-policy"
HEALTHZ_FILTER = "healthz-filter"
HEALTHZ_ROUTE = "healthz-route"
HEALTHZ_AUTH = "healthz-auth"
ADDRESS_HIDDEN = "address-hidden"
ANSWERS_COUNTED = "answers-counted"
# What serves from the projected Secrets (CALLER_KEYS, TLS), which are composed first
SERVING = (
    GATEWAY,
    ENVOY_PROXY,
    CALLER_AUTH,
    FAILOVER,
    LISTENER_POLICY,
    "healthz-",
    ADDRESS_HIDDEN,
    ANSWERS_COUNTED,
)
FRONT_DOOR = (*SERVING, CALLER_KEYS, TLS)

CLIENT_PKI = "client-"
CLIENT_CA_CONFIGMAP = "client-ca-configmap"
CLIENT_CERTIFICATE = "client-certificate"

RESOLVE = "resolve-"
CLUSTER_CA = "cluster-ca-"


def pki_key(role: str) -> str:
    """``CertificateAuthority.manifests()`` roles under the client PKI's prefix."""
    return names.resource_key(CLIENT_PKI, role)


def tls_key(source: str) -> str:
    return names.resource_key(TLS, source)


def resolve_key(cluster: str) -> str:
    return names.resource_key(RESOLVE, names.cluster_label(cluster))


def resolve_slice_key(cluster: str, family: str) -> str:
    # Per family: an EndpointSlice's addressType is immutable, so a cluster
    # moving from IPv4 to IPv6 gets a new slice rather than a rejected update.
    return names.resource_key(RESOLVE, family.lower(), names.cluster_label(cluster))


def cluster_ca_key(cluster: str) -> str:
    return names.resource_key(CLUSTER_CA, names.cluster_label(cluster))


# --- remote names -----------------------------------------------------------


@dataclass(frozen=True)
class GatewayNames:
    """The remote names of one InferenceGateway's objects on its cluster."""

    gateway_name: str

    @cached_property
    def gateway(self) -> str:
        return names.fleet_gateway(self.gateway_name)

    @property
    def prefix(self) -> str:
        return self.gateway

    def remote(self, api_version: str, kind: str, name: str, **body: Any) -> dict[str, Any]:
        """A remote object of this gateway's, labelled so ``kubectl -l`` finds them all."""
        meta = {
            "name": name,
            "namespace": SYSTEM_NAMESPACE,
            "labels": {
                "app.kubernetes.io/managed-by": "fleetgate",
                "fleetgate.dev/gateway": self.gateway,
            },
        }
        return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}

    @property
    def envoy_proxy(self) -> str:
        return self.gateway

    @property
    def caller_policy(self) -> str:
        return names.object_name(self.prefix, "callers")

    @property
    def failover_policy(self) -> str:
        return names.object_name(self.prefix, "failover")

    @property
    def listener_policy(self) -> str:
        return names.object_name(self.prefix, "listener")

    @property
    def address_hidden(self) -> str:
        return names.object_name(self.prefix, "address-hidden")

    @property
    def answers_counted(self) -> str:
        return names.object_name(self.prefix, "answers-counted")

    @property
    def healthz(self) -> str:
        """The /healthz HTTPRouteFilter, HTTPRoute and (with auth) its open SecurityPolicy."""
        return names.object_name(self.prefix, "healthz")

    @property
    def client_certificate(self) -> str:
        return names.gateway_client_certificate(self.gateway_name)

    @cached_property
    def client_ca(self) -> CertificateAuthority:
        return CertificateAuthority(
            prefix=self.prefix, subject=f"Fleetgate gateway {self.gateway_name} client CA"
        )

    @property
    def client_subject(self) -> str:
        return f"Fleetgate gateway {self.gateway_name}"

    @property
    def caller_keys(self) -> str:
        """The Secret holding every caller key (``OnCluster.caller_secret`` says why one)."""
        return names.object_name(self.prefix, "callers")

    def tls(self, source: str) -> str:
        return names.object_name(
            self.prefix, "tls", source, names.digest(f"{self.gateway_name}\x1f{source}")
        )

    def cluster_ca(self, cluster: str) -> str:
        return names.gateway_cluster_ca(self.gateway_name, cluster)
