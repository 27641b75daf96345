"""Reading composed provider-kubernetes Objects back, as Crossplane observed them.

Observed state is written by controllers the function does not control
(provider-kubernetes copies whatever the workload cluster's controllers put in
a remote object's status), so every reader here is total: a field of the
wrong type reads as absent, never as an exception that would fail the XR.
"""

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


def _conditions(obj: Any) -> list[dict[str, Any]]:
    found = dig(obj, "status", "conditions")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def has_condition(obj: dict[str, Any] | None, type_: str, status: str = "True") -> bool:
    """Whether ``obj`` carries condition ``type_`` with ``status``."""
    return any(c.get("type") == type_ and c.get("status") == status for c in _conditions(obj))


def is_ready(observed: dict[str, Any] | None) -> bool:
    """Whether a composed resource is Ready as Crossplane judges it."""
    return has_condition(observed, "Ready")


def configmap_value(observed: dict[str, Any] | None, key: str) -> str | None:
    """A key of an observed ConfigMap, read through its Object; None until published."""
    value = dig(remote_manifest(observed), "data", key)
    return value if isinstance(value, str) and value.strip() else None


def list_conditions(
    obj: dict[str, Any] | None, list_field: str, type_: str
) -> list[dict[str, Any]]:
    """Conditions of ``type_`` reported per entry of ``status.<list_field>``.

    Gateway API policies report per ancestor (``ancestors``), routes per parent
    (``parents``); each entry carries its own conditions.
    """
    entries = dig(obj, "status", list_field)
    return [
        c
        for entry in (entries if isinstance(entries, list) else [])
        for c in _conditions({"status": entry})
        if c.get("type") == type_
    ]
