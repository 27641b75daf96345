"""protobuf ``Struct`` to plain data and back, at the cost of the data and nothing more.

Nearly everything a function reads and writes is a ``google.protobuf.Struct``:
the XR, every required and observed resource, every desired resource. The
SDK converts with ``json_format.MessageToDict`` one way and ``Struct.update``
the other; both dispatch through generic, descriptor-driven code for every
single value, and at the API's maxima that conversion was most of a
function's time (see bench/README.md). These walk the Struct's own fields.

They give exactly what the SDK's conversions give: the same keys in the same
order, numbers as floats (a Struct holds doubles), null as None, and the same
ValueError for a number JSON cannot hold or a value a Struct cannot hold.
"""

import math
from collections.abc import Mapping
from typing import Any

from google.protobuf import struct_pb2  # type: ignore[import-untyped]

_STRING, _STRUCT, _LIST, _NUMBER, _BOOL = (
    "string_value",
    "struct_value",
    "list_value",
    "number_value",
    "bool_value",
)


class NotJSONError(ValueError):
    """A Struct holds a number JSON cannot (NaN or an infinity).

    No Kubernetes object can hold one (the API server speaks JSON), so only a
    malformed request carries it; ``first_not_json`` says where.
    """


def to_dict(struct: struct_pb2.Struct, only: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``struct`` as a dict; the same as the SDK's ``resource.struct_to_dict``.

    With ``only``, just its keys (those present), each converted whole where
    it maps to None and as ``only[key]`` describes where it maps to a mapping
    (see ``models.wire_fields``); a value that is not a Struct where one is
    described is converted whole, for validation to refuse.
    """
    # Keys, then lookups: a protobuf map's items() is a pure-Python view that
    # does the same lookups one generator step at a time.
    fields = struct.fields
    if only is None:
        return {key: plain(fields[key]) for key in fields}
    out = {}
    for key, inner in only.items():
        if key in fields:
            value = fields[key]
            if inner is not None and value.WhichOneof("kind") == _STRUCT:
                out[key] = to_dict(value.struct_value, inner)
            else:
                out[key] = plain(value)
    return out


def plain(value: struct_pb2.Value) -> Any:
    """One Struct value as plain data, converted as ``to_dict`` converts it."""
    kind = value.WhichOneof("kind")
    # Ordered by how often each kind occurs in Kubernetes objects.
    if kind == _STRING:
        return value.string_value
    if kind == _STRUCT:
        fields = value.struct_value.fields
        return {key: plain(fields[key]) for key in fields}
    if kind == _LIST:
        return [plain(v) for v in value.list_value.values]
    if kind == _NUMBER:
        number = value.number_value
        if not math.isfinite(number):
            raise NotJSONError(f"a Struct number must be finite for JSON, not {number}")
        return number
    if kind == _BOOL:
        return value.bool_value
    return None  # null_value, or a Value with nothing set (as json_format reads it)


def first_not_json(struct: struct_pb2.Struct, path: str = "") -> str | None:
    """The path (``spec.endpoints[2].weight``) of the first number JSON cannot hold, or None."""
    for key in sorted(struct.fields):
        found = _not_json(struct.fields[key], f"{path}.{key}" if path else key)
        if found is not None:
            return found
    return None


def _not_json(value: struct_pb2.Value, path: str) -> str | None:
    kind = value.WhichOneof("kind")
    if kind == _NUMBER:
        return None if math.isfinite(value.number_value) else path
    if kind == _STRUCT:
        return first_not_json(value.struct_value, path)
    if kind == _LIST:
        for i, item in enumerate(value.list_value.values):
            found = _not_json(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def update(struct: struct_pb2.Struct, data: Mapping[str, Any]) -> None:
    """Set every key of ``data`` in ``struct``; the same as ``Struct.update(data)``."""
    fields = struct.fields
    for key, value in data.items():
        _set(fields[key], value)


def _set(target: struct_pb2.Value, value: Any) -> None:
    # Exact types first (JSON-shaped data is nothing else); anything unusual
    # (a subclass, a tuple, a Struct) goes through protobuf's own setter.
    kind = type(value)
    if kind is str:
        target.string_value = value
    elif kind is dict:
        sub = target.struct_value
        sub.Clear()
        update(sub, value)
    elif kind is list:
        items = target.list_value
        items.Clear()
        add = items.values.add
        for item in value:
            _set(add(), item)
    elif kind is bool:
        target.bool_value = value
    elif kind is int or kind is float:
        target.number_value = value
    elif value is None:
        target.null_value = struct_pb2.NULL_VALUE
    else:
        holder = struct_pb2.Struct()
        holder.update({"value": value})
        target.CopyFrom(holder.fields["value"])


def lookup(struct: struct_pb2.Struct, *path: str) -> struct_pb2.Value | None:
    """The value at ``path`` through nested Structs; None where a step is missing or not one.

    For reading one field of a large resource without converting all of it.
    """
    value: struct_pb2.Value | None = None
    fields = struct.fields
    for key in path:
        if key not in fields:
            return None
        value = fields[key]
        # A Value of another kind reads as an empty Struct: the next step misses.
        fields = value.struct_value.fields
    return value
