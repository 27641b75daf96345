"""Reading composed provider-kubernetes Objects back, as Crossplane observed them."""

from typing import Any


def remote_manifest(observed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The remote object as provider-kubernetes last saw it (``status.atProvider.manifest``)."""
    if not observed:
        return None
    manifest = (observed.get("status") or {}).get("atProvider", {}).get("manifest")
    return manifest if isinstance(manifest, dict) else None


def has_condition(obj: dict[str, Any] | None, type_: str, status: str = "True") -> bool:
    """Whether ``obj`` carries condition ``type_`` with ``status``."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, dict) and c.get("type") == type_ and c.get("status") == status
        for c in conditions
    )


def is_ready(observed: dict[str, Any] | None) -> bool:
    """Whether a composed resource is Ready as Crossplane judges it."""
    return has_condition(observed, "Ready")


def configmap_value(observed: dict[str, Any] | None, key: str) -> str | None:
    """A key of an observed ConfigMap, read through its Object; None until published."""
    data = (remote_manifest(observed) or {}).get("data") or {}
    value = data.get(key)
    return value if isinstance(value, str) and value.strip() else None


def list_conditions(
    obj: dict[str, Any] | None, list_field: str, type_: str
) -> list[dict[str, Any]]:
    """Conditions of ``type_`` reported per entry of ``status.<list_field>``.

    Gateway API policies report per ancestor (``ancestors``), routes per parent
    (``parents``); each entry carries its own conditions.
    """
    entries = ((obj or {}).get("status") or {}).get(list_field) or []
    return [
        c
        for entry in entries
        if isinstance(entry, dict)
        for c in entry.get("conditions") or []
        if isinstance(c, dict) and c.get("type") == type_
    ]
