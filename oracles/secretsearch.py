"""The Secret values nobody may find outside Secrets: one list of them, one search.

Every check that no Secret value escapes reads its values here: the hardening
harness (requests, responses, logs of the functions), the examples' render, the
in-process fleet walk and the real control plane. A value counts as written
(``stringData``, or ``data`` decoded) and as stored (base64); values shorter
than ``MIN_LENGTH`` are left out, as they would turn up by chance anywhere.
Malformed Secrets count too: every string under their ``data`` and
``stringData``, decoded where it is base64.
"""

import base64
import binascii
import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

MIN_LENGTH = 8


def needles(objects: Iterable[Any]) -> dict[str, str]:
    """Every value the Secrets among ``objects`` hold, in each form → where it came from
    (``Secret <namespace>/<name> <key>``, ``(base64)`` for the stored form)."""
    found: dict[str, str] = {}
    for obj in objects:
        if not isinstance(obj, dict) or obj.get("kind") != "Secret":
            continue
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        where = f"Secret {meta.get('namespace', '')}/{meta.get('name', '')}"
        for field in ("data", "stringData"):
            for key, value in _strings(obj.get(field), ""):
                for form, origin in of_value(f"{where} {key}", value).items():
                    found.setdefault(form, origin)
    return found


def of_value(origin: str, value: str) -> dict[str, str]:
    """One value's forms to search for → where it came from: as given, base64-encoded, and
    decoded when it is base64 (a Secret's ``data`` holds the stored form)."""
    forms = {value: origin, base64.b64encode(value.encode()).decode(): f"{origin} (base64)"}
    with contextlib.suppress(binascii.Error, ValueError):  # not base64, or not text decoded
        forms.setdefault(base64.b64decode(value, validate=True).decode(), f"{origin} (decoded)")
    return {form: where for form, where in forms.items() if len(form) >= MIN_LENGTH}


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def leaks(values: Iterable[str], texts: Iterable[bytes | str]) -> list[str]:
    """The values (shortened) found in any of ``texts``."""
    blobs = [t if isinstance(t, bytes) else t.encode() for t in texts]
    return sorted(f"{v[:6]}…" for v in values if any(v.encode() in blob for blob in blobs))
