"""When is a remote object ready? One answer per kind, as its controller reports it.

provider-kubernetes' ``DeriveFromObject`` policy requires a ``Ready``
condition on the remote object and reports every object without one as
unavailable forever. Few of the kinds Fleetgate composes carry ``Ready``:
a Gateway says ``Programmed``, routes and policies report per parent or
ancestor, a Deployment says ``Available``, a trust-manager Bundle
``Synced``. So readiness is chosen by kind here, with CEL queries
(provider-kubernetes binds the remote object as ``object``) for the rest.
"""

from typing import Any, Final

Readiness = dict[str, str]

SUCCESSFUL_CREATE: Final[Readiness] = {"policy": "SuccessfulCreate"}
DERIVE_FROM_OBJECT: Final[Readiness] = {"policy": "DeriveFromObject"}


def _true(type_: str) -> str:
    return f"c.type == '{type_}' && c.status == 'True'"


def condition_query(type_: str) -> str:
    """The remote object has condition ``type_`` True in ``status.conditions``."""
    return (
        "has(object.status) && has(object.status.conditions) && "
        f"object.status.conditions.exists(c, {_true(type_)})"
    )


def per_parent_query(field: str, type_: str) -> str:
    """Some entry of ``status.<field>`` (route parents, policy ancestors) has ``type_`` True.

    Gateway API routes and Envoy Gateway policies report one status per
    parent they attach to, not a condition of their own.
    """
    entry_ok = f"has(p.conditions) && p.conditions.exists(c, {_true(type_)})"
    return (
        f"has(object.status) && has(object.status.{field}) && "
        f"object.status.{field}.exists(p, {entry_ok})"
    )


def query(cel: str) -> Readiness:
    return {"policy": "DeriveFromCelQuery", "celQuery": cel}


_BY_KIND: Final[dict[tuple[str, str], Readiness]] = {
    ("cert-manager.io", "Certificate"): DERIVE_FROM_OBJECT,
    ("cert-manager.io", "Issuer"): DERIVE_FROM_OBJECT,
    ("trust.cert-manager.io", "Bundle"): query(condition_query("Synced")),
    ("gateway.networking.k8s.io", "Gateway"): query(condition_query("Programmed")),
    ("gateway.networking.k8s.io", "HTTPRoute"): query(per_parent_query("parents", "Accepted")),
    ("inference.networking.k8s.io", "InferencePool"): query(
        per_parent_query("parents", "Accepted")
    ),
    ("gateway.envoyproxy.io", "SecurityPolicy"): query(per_parent_query("ancestors", "Accepted")),
    ("gateway.envoyproxy.io", "ClientTrafficPolicy"): query(
        per_parent_query("ancestors", "Accepted")
    ),
    ("gateway.envoyproxy.io", "BackendTrafficPolicy"): query(
        per_parent_query("ancestors", "Accepted")
    ),
    ("gateway.envoyproxy.io", "Backend"): query(condition_query("Accepted")),
    ("aigateway.envoyproxy.io", "AIGatewayRoute"): query(condition_query("Accepted")),
    ("aigateway.envoyproxy.io", "AIServiceBackend"): query(condition_query("Accepted")),
    ("aigateway.envoyproxy.io", "BackendSecurityPolicy"): query(condition_query("Accepted")),
    ("apps", "Deployment"): query(condition_query("Available")),
}


def for_manifest(manifest: dict[str, Any]) -> Readiness:
    """The readiness policy for ``manifest``'s kind.

    Kinds with no status to wait for (ConfigMap, Service, EndpointSlice,
    EnvoyProxy, HTTPRouteFilter, …) are ready once created.
    """
    group = str(manifest.get("apiVersion", "")).rpartition("/")[0]
    return dict(_BY_KIND.get((group, str(manifest.get("kind", ""))), SUCCESSFUL_CREATE))
