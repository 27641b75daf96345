"""Every name this function gives: the service's identity, its ModelRoutes, the remote objects
each ModelRoute composes on its gateway's cluster, and desired-state keys.

Every remote name is derived from the service *and* the gateway (two gateways
may share a cluster) and, per backend, the endpoint, so no two XRs ever
compose the same remote object and a credential reaches only the gateways
that route to it. Each is hashed over its exact inputs (``hashed_label``), so
``-`` joins can never make two meet.
"""

from collections.abc import Sequence
from typing import Final, NamedTuple

from fleetgate.core.constants import LABEL_PREFIX
from fleetgate.core.names import digest, hashed_label, resource_key


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


def ai_gateway_route_name(service: Service, gateway: str, endpoints: Sequence[str]) -> str:
    """The AIGatewayRoute's name, shared by the HTTPRoute generated from it, the patch policy
    on that route's Envoy cluster and the caller policies on it (different kinds).

    Hashed over the endpoints it names, in order: an AIGatewayRoute never gains, loses
    or reorders a backend. Envoy AI Gateway v1.1.0's extension server indexes the
    route's backends by the Envoy endpoints Envoy Gateway translated from the
    HTTPRoute it generated, and panics, crash-looping its controller, whenever the
    route names more backends than a not yet regenerated HTTPRoute held
    (internal/extensionserver/post_translate_modify.go:374-381; envoyproxy/
    ai-gateway#2610). A new backend set is a new route, created whole, which
    replaces the old one once it serves (``model_route.py``).
    """
    readable = f"{service.namespace}-{service.name}"
    return hashed_label(readable, "route", service.namespace, service.name, gateway, *endpoints)


def alerts_rule_name(service: Service, gateway: str) -> str:
    """The PrometheusRule's name: one per route whatever its backends, so alerts outlive a
    change of backends."""
    return _remote_name("route", service, gateway)


def backend_name(service: Service, gateway: str, endpoint: str) -> str:
    """Shared by the Backend, AIServiceBackend and BackendSecurityPolicy (different kinds)."""
    return _remote_name("backend", service, gateway, endpoint)


def api_key_name(service: Service, gateway: str, endpoint: str) -> str:
    return _remote_name("apikey", service, gateway, endpoint, tag="apikey")


# Composition resource names within a ModelRoute: endpoint names cannot hold
# "/" or "@", so these never collide with each other or with the route's.
FAILOVER_ALERTS_KEY: Final = "failover-alerts"
ROUTE_KEY_MARK: Final = "@"


class RouteKeys(NamedTuple):
    """The composition names of one AIGatewayRoute and of everything named after it.

    Each carries a digest of the route's backend set: provider-kubernetes finds
    an Object's remote object by the name in its manifest (internal/controller/
    namespaced/object/object.go:393-400 at v1.2.1), so an Object whose remote
    name changed would create the new object and orphan the old one. A new
    backend set gets new Objects instead, and the old ones are deleted with
    their remote objects.
    """

    route: str
    generated: str
    tiers: str
    access: str
    traffic: str
    counted: str


# The keys of the one route a ModelRoute composed before routes were keyed by
# their backends: replaced like any other once the new route serves.
_UNKEYED: Final = RouteKeys(
    "route", "generated-route", "strict-tiers", "caller-access", "caller-traffic", "answers-counted"
)


def route_keys(endpoints: Sequence[str]) -> RouteKeys:
    """The keys of the route naming ``endpoints`` in this order."""
    tag = digest("\n".join(endpoints))
    return RouteKeys(*(f"{role}{ROUTE_KEY_MARK}{tag}" for role in _UNKEYED))


def is_route_key(key: str) -> bool:
    """Whether ``key`` names an AIGatewayRoute or something named after it."""
    return ROUTE_KEY_MARK in key or key in _UNKEYED


def is_ai_gateway_route_key(key: str) -> bool:
    return key.startswith(f"{_UNKEYED.route}{ROUTE_KEY_MARK}") or key == _UNKEYED.route


def endpoint_key(endpoint: str, role: str) -> str:
    return f"{endpoint}/{role}"
