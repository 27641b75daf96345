"""A ModelEndpoint's origin, parsed into what a Backend needs, with the IP guard.

The XRD already rejects IP origins, but an endpoint written through an older
XRD may still carry one. Envoy AI Gateway silently stops applying model
rewriting, credentials and priority failover to a route with any
address-typed backend, and an IPv4 literal even passes the Backend's ``fqdn``
pattern, so the function refuses such an origin itself rather than let one
endpoint quietly degrade the whole route.
"""

import ipaddress
import re
from typing import Literal, NamedTuple

DEFAULT_PORTS = {"https": 443, "http": 80}
HOST_MAX = 253

_ORIGIN = re.compile(r"^(?P<scheme>https?)://(?P<authority>[^/?#@\s]*)$", re.IGNORECASE)
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# A last label of digits (or 0x-hex) makes resolvers read the host as an IPv4
# address in one of its legacy forms (``10.1``, ``2130706433``, ``0x7f.1``).
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


class OriginError(ValueError):
    """An origin the gateway cannot route to; the message says why, for a person."""


class Origin(NamedTuple):
    scheme: Literal["http", "https"]
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.scheme == "https"


def parse_origin(origin: str) -> Origin:
    """``scheme://host[:port]`` → Origin; OriginError for anything else, IPs included."""
    match = _ORIGIN.match(origin.strip())
    if match is None:
        raise OriginError("origin must be http(s)://host[:port] with nothing after the host")
    scheme: Literal["http", "https"] = "https" if match["scheme"].lower() == "https" else "http"
    authority = match["authority"]
    if authority.startswith("["):
        raise OriginError("origin host is an IPv6 address; it must be a DNS name")
    host, sep, port_text = authority.partition(":")
    port = DEFAULT_PORTS[scheme]
    if sep:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise OriginError("origin port must be a number from 1 to 65535")
        port = int(port_text)
    # DNS names are case-insensitive; the Backend's fqdn must be lowercase.
    host = host.lower().rstrip(".")
    check_host(host)
    return Origin(scheme, host, port)


def check_host(host: str) -> None:
    """OriginError unless ``host`` is a lowercase DNS name, and no IP address in any form."""
    if _is_address(host):
        raise OriginError("origin host is an IP address; it must be a DNS name")
    if len(host) > HOST_MAX or not _DNS_NAME.match(host):
        raise OriginError("origin host is not a valid DNS name")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return bool(host) and bool(_NUMERIC_LABEL.match(host.rsplit(".", 1)[-1]))
    return True
