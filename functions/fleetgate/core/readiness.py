"""When is a remote object ready? One answer per kind, as its controller reports it.

provider-kubernetes' ``DeriveFromObject`` policy requires a ``Ready``
condition on the remote object and reports every object without one as
unavailable forever. Few of the kinds Fleetgate composes carry ``Ready``:
a Gateway says ``Programmed``, routes and policies report per parent or
ancestor, a Deployment says ``Available``, a trust-manager Bundle
``Synced``. So readiness is chosen by kind here, with CEL queries
(provider-kubernetes binds the remote object as ``object``) for the rest.

Every query judges a condition against the object's generation: a status
written for an older spec says nothing about the current one. An
AIGatewayRoute at generation 5 whose only ``Accepted`` had
``observedGeneration: 1`` read as accepted while six of its backends were
unavailable. ``DeriveFromObject`` cannot judge it: it reads ``Ready``'s
status alone (provider-kubernetes v1.2.1
internal/controller/namespaced/object/object.go:588-599; crossplane-runtime
v2.0.0-rc.1 apis/common/condition.go:173-195 matches on type only), so no
kind uses it. Each controller says in its own way which generation a
condition is about (``Stamp``).
"""

from enum import Enum
from typing import Any, Final

Readiness = dict[str, str]

SUCCESSFUL_CREATE: Final[Readiness] = {"policy": "SuccessfulCreate"}
GENERATION: Final = "object.metadata.generation"


class Stamp(Enum):
    """How a controller records the generation a condition was written for.

    CONDITION: every condition carries ``observedGeneration`` (the
    ``metav1.Condition`` convention); one without it is no generation's
    (0), so stale. OPTIONAL: the controller does not stamp its conditions;
    a stamped one must match, an unstamped one is its controller's latest
    word. STATUS: the object's ``status.observedGeneration`` says what the
    status as a whole was written for (a Deployment's conditions have no
    field for it).

    provider-kubernetes decodes the remote object with ``json.Unmarshal``
    into ``map[string]any`` (object.go:656-674): both generations are
    doubles, so they compare equal exactly when the integers do.
    """

    CONDITION = "condition"
    OPTIONAL = "optional"
    STATUS = "status"


def _current(var: str, stamp: Stamp) -> str:
    stamped = f"{var}.observedGeneration == {GENERATION}"
    if stamp is Stamp.CONDITION:
        return f" && has({var}.observedGeneration) && {stamped}"
    if stamp is Stamp.OPTIONAL:
        return f" && (!has({var}.observedGeneration) || {stamped})"
    return ""


def _true(type_: str, stamp: Stamp) -> str:
    return f"c.type == '{type_}' && c.status == 'True'" + _current("c", stamp)


def _status_current(stamp: Stamp) -> str:
    if stamp is not Stamp.STATUS:
        return ""
    return (
        "has(object.status.observedGeneration) && "
        f"object.status.observedGeneration == {GENERATION} && "
    )


def condition_query(type_: str, stamp: Stamp = Stamp.CONDITION) -> str:
    """The remote object has condition ``type_`` True in ``status.conditions``, for its spec."""
    return (
        f"has(object.status) && {_status_current(stamp)}has(object.status.conditions) && "
        f"object.status.conditions.exists(c, {_true(type_, stamp)})"
    )


def per_parent_query(field: str, type_: str, stamp: Stamp = Stamp.CONDITION) -> str:
    """Some entry of ``status.<field>`` (route parents, policy ancestors) has ``type_`` True.

    Gateway API routes and Envoy Gateway policies report one status per
    parent they attach to, not a condition of their own.
    """
    entry_ok = f"has(p.conditions) && p.conditions.exists(c, {_true(type_, stamp)})"
    return (
        f"has(object.status) && has(object.status.{field}) && "
        f"object.status.{field}.exists(p, {entry_ok})"
    )


def query(cel: str) -> Readiness:
    return {"policy": "DeriveFromCelQuery", "celQuery": cel}


# Who stamps what, at the pinned versions:
# - cert-manager v1.21.2: SetIssuerCondition and SetCertificateCondition stamp
#   every condition (pkg/api/util/conditions.go:60-72, 174-187), with the
#   object's generation (readiness_controller.go:207, issuer/selfsigned/
#   setup.go:32, issuer/ca/setup.go:53-78).
# - trust-manager v0.25.0: Bundle's Synced carries bundle.Generation
#   (pkg/bundle/bundle.go:126-136, 316-322).
# - Envoy Gateway v1.8.3: Gateway and listener conditions (internal/
#   gatewayapi/status/gateway.go:20-38, 128-139, 151-191), route parents
#   (status/route.go:21-33), policy ancestors (status/policy.go:132-169),
#   Backend (status/backend.go:29-39); MergeConditions carries the new
#   generation over (status/conditions.go:31-55).
# - Envoy AI Gateway v1.1.0: AIGatewayRoute, AIServiceBackend and
#   BackendSecurityPolicy get one unstamped condition each reconcile
#   (internal/controller/controller.go:551-566, ai_gateway_route.go:446-456,
#   ai_service_backend.go:104-113, backend_security_policy.go:382); the
#   InferencePool parents it writes are stamped (inference_pool.go:287-305,
#   390-404).
# - Kubernetes v1.35.4: a Deployment's status.observedGeneration
#   (pkg/controller/deployment/sync.go:507); DeploymentCondition has no
#   observedGeneration (k8s.io/api apps/v1 types.go:553-566).
_BY_KIND: Final[dict[tuple[str, str], Readiness]] = {
    ("cert-manager.io", "Certificate"): query(condition_query("Ready")),
    ("cert-manager.io", "Issuer"): query(condition_query("Ready")),
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
    ("aigateway.envoyproxy.io", "AIGatewayRoute"): query(
        condition_query("Accepted", Stamp.OPTIONAL)
    ),
    ("aigateway.envoyproxy.io", "AIServiceBackend"): query(
        condition_query("Accepted", Stamp.OPTIONAL)
    ),
    ("aigateway.envoyproxy.io", "BackendSecurityPolicy"): query(
        condition_query("Accepted", Stamp.OPTIONAL)
    ),
    ("apps", "Deployment"): query(condition_query("Available", Stamp.STATUS)),
}


def for_manifest(manifest: dict[str, Any]) -> Readiness:
    """The readiness policy for ``manifest``'s kind.

    Kinds with no status to wait for (ConfigMap, Service, EndpointSlice,
    EnvoyProxy, HTTPRouteFilter, …) are ready once created.
    """
    group = str(manifest.get("apiVersion", "")).rpartition("/")[0]
    return dict(_BY_KIND.get((group, str(manifest.get("kind", ""))), SUCCESSFUL_CREATE))
