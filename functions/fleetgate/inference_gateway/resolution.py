"""Reaching the fleet's clusters from this gateway's cluster: their names and their CAs.

Backends dial a cluster by its derived hostname
``<label>.fleetgate-system.svc.cluster.local``. On the gateway's cluster that
name resolves only through a Service called ``<label>`` in fleetgate-system:
an ExternalName Service when the cluster gateway's address is a DNS name, a
headless one plus an EndpointSlice when it is an IP (headless, so Envoy
connects to the load balancer directly instead of through a ClusterIP).

One owner per remote object: the Service name is fixed by the hostname, so
when several InferenceGateways share a cluster exactly one of them composes
the name resolution for all (see ``resolver``). Each gateway composes its own
copy of every cluster's CA (named after the gateway), which its routes use.
"""

import ipaddress
import re
from collections.abc import Iterable
from typing import Any, Final, Literal, NamedTuple

from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.objects import Manifest
from fleetgate.core.pki import BUNDLE_KEY
from fleetgate.inference_gateway.naming import GatewayNames

Family = Literal["IPv4", "IPv6"]

CLUSTER_GATEWAY_PORT: Final = 443
HOSTNAME_SUFFIX: Final = f".{SYSTEM_NAMESPACE}.svc.cluster.local"
_LABEL: Final = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_DNS_NAME: Final = re.compile(
    r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.?$"
)


class PublishedCluster(NamedTuple):
    """A cluster whose gateway this gateway can reach by name."""

    name: str
    label: str  # the Service name: the first label of its published hostname
    address: str
    family: Family | None  # None: a DNS name
    ca_certificate: str | None


class Unreachable(NamedTuple):
    """A cluster that published a hostname and address no Service can make resolve."""

    name: str
    why: str


def published(
    clusters: Iterable[InferenceCluster],
) -> tuple[list[PublishedCluster], list[Unreachable]]:
    """Clusters with both address and hostname published, sorted by name; the unusable apart."""
    usable: list[PublishedCluster] = []
    unusable: list[Unreachable] = []
    owners: dict[str, str] = {}  # Service name -> the cluster it resolves
    for cluster in sorted(clusters, key=lambda c: c.metadata.name):
        status = cluster.status.gateway
        if not status.address or not status.hostname:
            continue
        name = cluster.metadata.name
        label = status.hostname.removesuffix(HOSTNAME_SUFFIX)
        if not status.hostname.endswith(HOSTNAME_SUFFIX) or not _LABEL.match(label):
            unusable.append(Unreachable(name, f"hostname is not <label>{HOSTNAME_SUFFIX}"))
            continue
        family = address_family(status.address)
        # Kubernetes takes an ExternalName only in lower case.
        address = status.address if family else status.address.lower()
        if family is None and not _DNS_NAME.match(address):
            unusable.append(Unreachable(name, "address is neither an IP nor a DNS name"))
        elif label in owners:
            # Derived labels hash the cluster name, so this is a status no
            # function wrote; one Service cannot resolve to two clusters.
            unusable.append(Unreachable(name, f"hostname is InferenceCluster {owners[label]}'s"))
        else:
            owners[label] = name
            usable.append(PublishedCluster(name, label, address, family, status.ca_certificate))
    return usable, unusable


def address_family(address: str) -> Family | None:
    """IPv4 or IPv6 for an IP literal, None for anything else (a DNS name)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    return "IPv4" if ip.version == 4 else "IPv6"


class Peer(NamedTuple):
    """An InferenceGateway as the ownership rule sees it."""

    name: str
    cluster: str
    created: str  # RFC 3339; empty when unknown, which counts as oldest
    deleting: bool


def resolver(me: Peer, peers: Iterable[Peer]) -> str:
    """The gateway that composes name resolution on ``me``'s cluster.

    The oldest gateway there that is not being deleted (name breaks ties).
    A newcomer never takes over: ownership moves only when its owner goes,
    and every gateway computes the same answer from the same list.
    """
    here = {p.name: p for p in peers if p.cluster == me.cluster and not p.deleting}
    here.setdefault(me.name, me)
    return min(here.values(), key=lambda p: (p.created, p.name)).name


def _remote(
    names: GatewayNames, cluster: PublishedCluster, kind: str, name: str, **body: Any
) -> Manifest:
    api_version = "discovery.k8s.io/v1" if kind == "EndpointSlice" else "v1"
    obj = names.remote(api_version, kind, name, **body)
    obj["metadata"]["labels"]["fleetgate.dev/resolves"] = cluster.label
    return obj


def service(cluster: PublishedCluster, names: GatewayNames) -> Manifest:
    """The Service that makes the cluster's derived hostname resolve here."""
    if cluster.family is None:
        spec: dict[str, Any] = {"type": "ExternalName", "externalName": cluster.address}
    else:
        spec = {
            "type": "ClusterIP",
            "clusterIP": "None",
            "ports": [
                {
                    "name": "https",
                    "port": CLUSTER_GATEWAY_PORT,
                    "protocol": "TCP",
                    "targetPort": CLUSTER_GATEWAY_PORT,
                }
            ],
        }
    return _remote(names, cluster, "Service", cluster.label, spec=spec)


def endpoint_slice(cluster: PublishedCluster, names: GatewayNames) -> Manifest:
    """The address behind a headless Service (IP addresses only)."""
    assert cluster.family is not None, "a DNS address resolves through ExternalName"
    eps = _remote(
        names,
        cluster,
        "EndpointSlice",
        f"{cluster.label}-{cluster.family.lower()}",
        addressType=cluster.family,
        ports=[{"name": "https", "port": CLUSTER_GATEWAY_PORT, "protocol": "TCP"}],
        endpoints=[{"addresses": [cluster.address], "conditions": {"ready": True}}],
    )
    eps["metadata"]["labels"] |= {
        "kubernetes.io/service-name": cluster.label,
        # Not the EndpointSlice controller's: it must leave this slice alone.
        "endpointslice.kubernetes.io/managed-by": "fleetgate.dev",
    }
    return eps


def cluster_ca(cluster: PublishedCluster, names: GatewayNames) -> Manifest:
    """This gateway's copy of the cluster's CA, which Backends reaching that cluster trust."""
    assert cluster.ca_certificate is not None
    return _remote(
        names,
        cluster,
        "ConfigMap",
        names.cluster_ca(cluster.name),
        data={BUNDLE_KEY: cluster.ca_certificate},
    )
