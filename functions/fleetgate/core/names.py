"""Bounded, deterministic, collision-free names.

Kubernetes bounds a DNS label at 63 characters and an object name at 253;
X.509 bounds a commonName at 64 bytes. A name that is already valid and short
enough is used as is, so the common case stays readable. Anything else keeps a
sanitised, truncated readable part and gains a hash of the *raw* input, so two
inputs that sanitise alike (``a.b`` and ``a-b``) or share a long prefix never
meet.
"""

import hashlib
import re
from typing import Final

from fleetgate.core.constants import SYSTEM_NAMESPACE

DNS_LABEL_MAX: Final = 63
OBJECT_NAME_MAX: Final = 253
COMMON_NAME_MAX: Final = 64
HASH_LEN: Final = 10

_LABEL_OK = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_SUBDOMAIN_OK = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
_NOT_LABEL_CHAR = re.compile(r"[^a-z0-9-]+")


def digest(raw: str, length: int = HASH_LEN) -> str:
    """A short, stable hex digest of ``raw``."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:length]


def _with_hash(readable: str, raw: str, limit: int) -> str:
    suffix = digest(raw)
    head = readable[: limit - len(suffix) - 1].strip("-.")
    return f"{head}-{suffix}" if head else suffix


def dns_label(*parts: str) -> str:
    """A DNS label (≤63, ``[a-z0-9-]``) naming ``parts`` joined by ``-``."""
    raw = "-".join(parts)
    if len(raw) <= DNS_LABEL_MAX and _LABEL_OK.match(raw):
        return raw
    readable = _NOT_LABEL_CHAR.sub("-", raw.lower()).strip("-")
    return _with_hash(readable, raw, DNS_LABEL_MAX)


def object_name(*parts: str) -> str:
    """A Kubernetes object name (DNS subdomain, ≤253) for ``parts`` joined by ``-``."""
    raw = "-".join(parts)
    if len(raw) <= OBJECT_NAME_MAX and _SUBDOMAIN_OK.match(raw):
        return raw
    readable = re.sub(r"[^a-z0-9.-]+", "-", raw.lower()).strip("-.")
    return _with_hash(readable, raw, OBJECT_NAME_MAX)


def common_name(*parts: str) -> str:
    """An X.509 commonName of at most 64 bytes (ASCII, so bytes == characters)."""
    raw = " ".join(parts)
    if len(raw) <= COMMON_NAME_MAX and raw.isascii():
        return raw
    readable = re.sub(r"[^A-Za-z0-9 .-]+", "-", raw)
    return _with_hash(readable, raw, COMMON_NAME_MAX)


_LABEL_VALUE_OK = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NOT_LABEL_VALUE_CHAR = re.compile(r"[^A-Za-z0-9._-]+")


def label_value(raw: str) -> str:
    """A Kubernetes label value (≤63, ``[-._A-Za-z0-9]``, alphanumeric at both ends) for ``raw``.

    ``raw`` itself when it already is one, so selectors written by hand (e.g.
    ``fleetgate.dev/deployment: qwen3``) keep matching; otherwise a sanitised
    readable prefix and a hash of the raw string, so long names stay distinct.
    """
    if len(raw) <= DNS_LABEL_MAX and _LABEL_VALUE_OK.match(raw):
        return raw
    suffix = digest(raw)
    head = _NOT_LABEL_VALUE_CHAR.sub("-", raw)[: DNS_LABEL_MAX - len(suffix) - 1].strip("-._")
    return f"{head}-{suffix}" if head else suffix


def cluster_label(cluster_name: str) -> str:
    """The DNS label fleet gateways know a cluster by.

    Always hashed, even when the name is a valid label: cluster names may
    contain dots, and ``eu.west`` and ``eu-west`` must not share a hostname.
    """
    readable = _NOT_LABEL_CHAR.sub("-", cluster_name.lower()).strip("-")
    return _with_hash(readable, cluster_name, DNS_LABEL_MAX)


def resource_key(prefix: str, *parts: str) -> str:
    """A composition resource name (a key of the desired state): ``prefix``, then ``parts``.

    ``prefix`` ends in ``-`` and names the whole group, which a step keeps or drops at
    once (``Reconcile.keep_all``); ``parts``, joined by ``-``, name one member. Never an
    object's name, so neither bounded nor hashed.
    """
    return prefix + "-".join(parts)


def cluster_hostname(cluster_name: str) -> str:
    """The derived hostname of a cluster's gateway, resolvable on every fleet gateway."""
    return f"{cluster_label(cluster_name)}.{SYSTEM_NAMESPACE}.svc.cluster.local"


# --- Remote names more than one function must agree on ----------------------
# Each is derived from its owner's name only, so the owner and every reader
# compute the same string without sharing anything but the XRs.

CLUSTER_GATEWAY: Final = "fleetgate-cluster-gateway"
"""The cluster gateway's Gateway on every InferenceCluster (one per cluster)."""


def fleet_gateway(gateway: str) -> str:
    """The Gateway an InferenceGateway composes on its cluster.

    A DNS label, not just an object name: Envoy Gateway copies the Gateway's
    name into label values, which stop at 63 characters.
    """
    return dns_label("fleetgate-gw", gateway)


def gateway_client_certificate(gateway: str) -> str:
    """Secret (on the gateway's cluster) holding the fleet gateway's client certificate."""
    return object_name("fleetgate-gw", gateway, "client")


def gateway_cluster_ca(gateway: str, cluster: str) -> str:
    """ConfigMap (on the gateway's cluster) holding ``cluster``'s CA, owned by the gateway."""
    return object_name("fleetgate-gw", gateway, "ca", cluster_label(cluster))


def hashed_label(readable: str, *identity: str) -> str:
    """A DNS label: ``readable`` sanitised and cut to fit, then a hash of ``identity``.

    For names derived from several inputs. Joining parts with ``-`` is
    ambiguous (``a-b`` + ``c`` reads like ``a`` + ``b-c``) and a readable part
    may leave an input out, so the hash is always appended and covers the exact
    tuple, joined by a character no Kubernetes name can hold.
    """
    readable = _NOT_LABEL_CHAR.sub("-", readable.lower()).strip("-")
    return _with_hash(readable, "\x1f".join(identity), DNS_LABEL_MAX)
