"""Reading composed provider-kubernetes Objects back, as Crossplane observed them.

Observed state is written by controllers the function does not control
(provider-kubernetes copies whatever the workload cluster's controllers put in
a remote object's status), so every reader here is total: a field of the
wrong type reads as absent, never as an exception that would fail the XR.
"""

from collections.abc import Mapping
from typing import Any


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]…``, or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def remote_manifest(observed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The remote object as provider-kubernetes last saw it (``status.atProvider.manifest``)."""
    manifest = dig(observed, "status", "atProvider", "manifest")
    return manifest if isinstance(manifest, dict) else None


def _whole(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_current(condition: Mapping[str, Any], generation: Any) -> bool:
    """Whether ``condition`` speaks of the spec at ``generation`` (the object's
    ``metadata.generation``), not of an older one.

    A condition stamped with ``observedGeneration`` is current only when the
    stamp is the object's generation: a controller that has not caught up
    with a new spec still shows what it said of the old one, and an
    AIGatewayRoute at generation 5 whose only Accepted said 1 read as
    accepted while six of its backends were unavailable. A condition
    without a stamp is its writer's latest word: Envoy AI Gateway v1.1.0
    never stamps (internal/controller/controller.go:551-566), nor does
    provider-kubernetes its Objects' Ready (v1.2.1 internal/controller/
    namespaced/object/object.go:534-565, crossplane-runtime's SetConditions),
    nor Crossplane a function's conditions (v2.2.0 internal/controller/
    apiextensions/composite/composition_functions.go:403-425). The writers
    that stamp always do; the readiness queries (``core.readiness``) hold
    those to it, and only this project's emulations leave their stamps out.
    An object without a generation did not come from an API server (those
    emulations, tests): there is nothing to judge against.
    """
    stamp = condition.get("observedGeneration")
    if stamp is None or not _whole(generation):
        return True
    return _whole(stamp) and stamp == generation


def generation(obj: Any) -> Any:
    """``metadata.generation`` of ``obj``, or None."""
    return dig(obj, "metadata", "generation")


def _conditions(obj: Any, of: Any = None) -> list[dict[str, Any]]:
    """The current conditions in ``obj``'s ``status.conditions``, judged against ``of``'s
    generation (``obj``'s own unless given: a route parent's conditions are the route's)."""
    found = dig(obj, "status", "conditions")
    if not isinstance(found, list):
        return []
    at = generation(obj if of is None else of)
    return [c for c in found if isinstance(c, dict) and is_current(c, at)]


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """``obj``'s condition ``type_``, if there is one and it is current (``is_current``)."""
    return next((c for c in _conditions(obj) if c.get("type") == type_), None)


def has_condition(obj: dict[str, Any] | None, type_: str, status: str = "True") -> bool:
    """Whether ``obj`` carries a current condition ``type_`` with ``status``."""
    return any(c.get("type") == type_ and c.get("status") == status for c in _conditions(obj))


def is_ready(observed: dict[str, Any] | None) -> bool:
    """Whether a composed resource is Ready as Crossplane judges it, for its current spec."""
    return has_condition(observed, "Ready")


def configmap_value(observed: dict[str, Any] | None, key: str) -> str | None:
    """A key of an observed ConfigMap, read through its Object; None until published."""
    value = dig(remote_manifest(observed), "data", key)
    return value if isinstance(value, str) and value.strip() else None


def list_conditions(
    obj: dict[str, Any] | None, list_field: str, type_: str
) -> list[dict[str, Any]]:
    """Current conditions of ``type_`` reported per entry of ``status.<list_field>``.

    Gateway API policies report per ancestor (``ancestors``), routes per parent
    (``parents``); each entry carries its own conditions, stamped with the
    generation of ``obj`` they speak of (Envoy Gateway v1.8.3
    internal/gatewayapi/status/route.go:21-33, policy.go:132-169).
    """
    entries = dig(obj, "status", list_field)
    return [
        c
        for entry in (entries if isinstance(entries, list) else [])
        for c in _conditions({"status": entry}, of=obj)
        if c.get("type") == type_
    ]
