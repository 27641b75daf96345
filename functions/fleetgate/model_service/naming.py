"""Every name this function gives: the service's identity, its ModelRoutes, the remote objects
each ModelRoute composes on its gateway's cluster, and desired-state keys.

Every remote name is derived from the service *and* the gateway (two gateways
may share a cluster) and, per backend, the endpoint, so no two XRs ever
compose the same remote object and a credential reaches only the gateways
that route to it. Each is hashed over its exact inputs (``hashed_label``), so
``-`` joins can never make two meet.
"""

from typing import Final, NamedTuple

from fleetgate.core.constants import LABEL_PREFIX
from fleetgate.core.names import hashed_label, resource_key


class Service(NamedTuple):
    """The ModelService being routed."""

    namespace: str
    name: str

    @property
    def model(self) -> str:
        """The public model name: the contract with callers, never hashed."""
        return f"{self.namespace}/{self.name}"


# --- the ModelService's ModelRoutes, one per serving gateway -------------------

LABEL_SERVICE: Final = f"{LABEL_PREFIX}service"
LABEL_GATEWAY: Final = f"{LABEL_PREFIX}gateway"


def model_route_key(gateway: str) -> str:
    """The composition resource name of a gateway's ModelRoute in the ModelService."""
    return resource_key("route-", gateway)


def model_route_name(service: Service, gateway: str) -> str:
    """The ModelRoute's name in the service's namespace.

    A DNS label, always hashed over (service, gateway): Crossplane copies an
    XR's name into a label on everything it composes, and ``a-b`` + ``c``
    must not meet ``a`` + ``b-c``.
    """
    return hashed_label(f"{service.name}-{gateway}", service.name, gateway)


# --- what a ModelRoute composes on its gateway's cluster ------------------------


def _remote_name(role: str, service: Service, gateway: str, *endpoint: str, tag: str = "") -> str:
    readable = "-".join((service.namespace, service.name, *endpoint, *([tag] if tag else [])))
    return hashed_label(readable, role, service.namespace, service.name, gateway, *endpoint)


def ai_gateway_route_name(service: Service, gateway: str) -> str:
    """The AIGatewayRoute's name, shared by the HTTPRoute generated from it and the patch
    policy on that route's Envoy cluster (different kinds)."""
    return _remote_name("route", service, gateway)


def backend_name(service: Service, gateway: str, endpoint: str) -> str:
    """Shared by the Backend, AIServiceBackend and BackendSecurityPolicy (different kinds)."""
    return _remote_name("backend", service, gateway, endpoint)


def api_key_name(service: Service, gateway: str, endpoint: str) -> str:
    return _remote_name("apikey", service, gateway, endpoint, tag="apikey")


# Composition resource names within a ModelRoute: endpoint names cannot hold
# "/", so these never collide with each other or with the route's.
AI_GATEWAY_ROUTE_KEY: Final = "route"
GENERATED_ROUTE_KEY: Final = "generated-route"
TIERS_KEY: Final = "strict-tiers"
CALLER_ACCESS_KEY: Final = "caller-access"
CALLER_TRAFFIC_KEY: Final = "caller-traffic"
FAILOVER_ALERTS_KEY: Final = "failover-alerts"


def endpoint_key(endpoint: str, role: str) -> str:
    return f"{endpoint}/{role}"
