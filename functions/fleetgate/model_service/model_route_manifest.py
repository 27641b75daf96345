"""The ModelRoute manifest: one serving gateway's route, as the ModelService resolved it.

A ModelService at the API's maxima routes 128 backends on 16 gateways: some
8,000 remote Objects, far over the 4 MiB Crossplane allows a function's
request and response. So the service resolves everything (gateways,
clusters, endpoints, credentials) and composes one ModelRoute per serving
gateway carrying that gateway's finished plan; each ModelRoute composes its
gateway's Objects in its own, bounded call. Pure functions, the parent's side:
the ModelRoute's manifest, carrying one over, reading its progress (its name
is in ``naming``).
"""

from collections.abc import Mapping, Sequence
from typing import Any, Final

from fleetgate.core.constants import API_VERSION, HTTPS_LISTENER, LABEL_PREFIX
from fleetgate.core.kinds.route import BackendTLS
from fleetgate.core.kinds.service import FailoverAlert
from fleetgate.core.names import fleet_gateway, label_value
from fleetgate.core.objects import Manifest
from fleetgate.core.observed import dig, explanation
from fleetgate.model_service.access import Access
from fleetgate.model_service.naming import LABEL_GATEWAY, LABEL_SERVICE, Service, model_route_name
from fleetgate.model_service.selection import Planned, Routable, ServingGateway

KIND: Final = "ModelRoute"
ACCEPTED: Final = "RouteAccepted"


def _tls(endpoint: Routable) -> BackendTLS:
    if endpoint.cluster is not None:
        return "Mutual"
    return "System" if endpoint.origin.tls else "Off"


def _backend(plan: Planned) -> dict[str, Any]:
    endpoint = plan.endpoint
    backend: dict[str, Any] = {
        "endpoint": endpoint.name,
        "weight": plan.weight,
        "priority": plan.level,
    }
    if endpoint.model:
        backend["modelNameOverride"] = endpoint.model
    backend |= {
        "host": endpoint.origin.host,
        "port": endpoint.origin.port,
        "schema": endpoint.schema,
        "prefix": endpoint.prefix,
        "tls": _tls(endpoint),
    }
    if endpoint.cluster is not None:
        backend["cluster"] = endpoint.cluster
    if endpoint.credential is not None:
        backend["credential"] = {"name": endpoint.credential.name, "key": endpoint.credential.key}
    if endpoint.pricing is not None:
        backend["pricing"] = endpoint.pricing.model_dump(by_alias=True, exclude_none=True)
    return backend


def model_route(
    service: Service,
    gateway: ServingGateway,
    planned: Sequence[Planned],
    allowed: Access | None = None,
    alert: FailoverAlert | None = None,
) -> Manifest:
    """The ModelRoute for ``gateway``: everything its function needs, nothing it must look up.

    ``allowed``: who may call and how much, resolved from the service's access;
    None, anyone the gateway authenticates. ``alert``: the service's failover
    alert, carried only to a gateway that composes PrometheusRules.
    """
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": model_route_name(service, gateway.name),
            "namespace": service.namespace,
            "labels": {
                LABEL_GATEWAY: label_value(gateway.name),
                LABEL_SERVICE: label_value(service.name),
            },
        },
        "spec": {
            "model": service.model,
            "gateway": {
                "name": gateway.name,
                "gatewayName": fleet_gateway(gateway.name),
                "providerConfigName": gateway.provider_config,
                "requestTimeout": gateway.failover.request_timeout,
                "streamIdleTimeout": gateway.failover.stream_idle_timeout,
                # Models are never served in plaintext: with TLS, the https listener only.
                **({"sectionName": HTTPS_LISTENER} if gateway.tls else {}),
            },
            "backends": [_backend(plan) for plan in planned],
            **_access(allowed),
            **(
                {"failoverAlert": alert.model_dump(by_alias=True)}
                if alert is not None and gateway.prometheus_rules
                else {}
            ),
        },
    }


def _access(allowed: Access | None) -> dict[str, Any]:
    """The route's ``spec.access``: who may call and how much; nothing when anyone may."""
    if allowed is None:
        return {}
    limits = [limit.model_dump(by_alias=True, exclude_none=True) for limit in allowed.limits]
    return {"access": {"callers": list(allowed.callers), **({"limits": limits} if limits else {})}}


def with_access(route: Manifest, allowed: Access | None) -> Manifest:
    """``route`` (carried over) restricted as the service's access is now.

    Who may call depends on nothing a route waits for (endpoints, gateways),
    so a narrowed or revoked access reaches every route at once, even one
    otherwise kept as it was.
    """
    spec = {k: v for k, v in route["spec"].items() if k != "access"}
    return {**route, "spec": {**spec, **_access(allowed)}}


def carried_over(observed: dict[str, Any]) -> Manifest:
    """A ModelRoute as observed, reduced to what the ModelService composed.

    Crossplane records what the ModelRoute composed under ``spec.crossplane``;
    handing that back as desired state would make the ModelService the owner
    of fields Crossplane keeps rewriting for the child.
    """
    meta, spec, labels = (
        value if isinstance(value, dict) else {}
        for value in (
            observed.get("metadata"),
            observed.get("spec"),
            dig(observed, "metadata", "labels"),
        )
    )
    spec = {k: v for k, v in spec.items() if k != "crossplane"}
    labels = {k: v for k, v in labels.items() if k.startswith(LABEL_PREFIX)}
    kept: dict[str, Any] = {"name": meta.get("name"), "namespace": meta.get("namespace")}
    return {
        "apiVersion": observed.get("apiVersion", API_VERSION),
        "kind": KIND,
        "metadata": {k: v for k, v in {**kept, "labels": labels}.items() if v},
        "spec": spec,
    }


def progress(accepted: Mapping[str, Any] | None) -> str | None:
    """Why a ModelRoute's route is not accepted yet, or None once it is.

    ``accepted`` is the observed ModelRoute's own ``RouteAccepted`` condition,
    None while it reports none; the controller's refusal is in its message.
    """
    if accepted is None:
        return "ModelRoute not reconciled yet"
    if accepted.get("status") == "True":
        return None
    return explanation(accepted) or "route not accepted yet"
