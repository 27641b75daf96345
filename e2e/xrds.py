"""The XRDs of ``apis/`` as data: one reader for everything that needs a field's schema
(the fault drills' defaults, the bad-input drill's breaks, tests at the API's limits)."""

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

APIS = Path(__file__).resolve().parent.parent / "apis"

Schema = dict[str, Any]


def plural(kind: str) -> str:
    """The XRD's plural, which names its folder under ``apis/``: every kind takes an s."""
    return f"{kind.lower()}s"


@functools.cache
def schema(kind: str) -> Schema:
    """The XR's OpenAPI schema (its XRD's one version); callers must not mutate it."""
    xrd = yaml.safe_load((APIS / plural(kind) / "definition.yaml").read_text())
    found: Schema = xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return found


def walk(node: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every node of an OpenAPI schema with its path: ``spec.endpoints[].weight``,
    ``spec.labels{}`` for a map's values."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}" if path else name)
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


def field(kind: str, path: str) -> Schema:
    """The schema of one field, by its ``walk`` path (``spec.failover.retries``): what the
    API allows and defaults, for drills and tests that use or go up to it."""
    return dict(walk(schema(kind)))[path]
