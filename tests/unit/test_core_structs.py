"""core/structs: the fast Struct conversions give exactly what the SDK's give."""

import json
from typing import Any

import pytest
from crossplane.function import resource
from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core import structs

OBJECT = {
    "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
    "kind": "Object",
    "metadata": {"name": "x", "labels": {"a": "b"}, "annotations": {}},
    "spec": {
        "forProvider": {"manifest": {"kind": "Gateway", "spec": {"listeners": [{"port": 443}]}}},
        "managementPolicies": ["Observe"],
    },
}

VALUES: list[tuple[str, dict[str, Any]]] = [
    ("empty", {}),
    ("kubernetes object", OBJECT),
    ("numbers stay floats", {"int": 443, "float": 0.5, "negative": -3, "big": 2**53}),
    ("bool is not a number", {"t": True, "f": False}),
    ("null", {"n": None}),
    ("empty containers", {"d": {}, "l": [], "nested": {"l": [[], {}]}}),
    ("lists of everything", {"l": ["s", 1, 2.5, True, None, {"k": "v"}, ["x"]]}),
    ("unicode keys and values", {"ключ": "значение", "emoji": "🔑", "": "empty key"}),
    ("tuple goes through protobuf's setter", {"t": ("a", 1)}),
]


def sdk_struct(data: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(data)
    return s


@pytest.mark.parametrize("data", [v for _, v in VALUES], ids=[n for n, _ in VALUES])
def test_update_writes_what_struct_update_writes(data: dict[str, Any]) -> None:
    ours = struct_pb2.Struct()
    structs.update(ours, data)
    assert ours.SerializeToString(deterministic=True) == sdk_struct(data).SerializeToString(
        deterministic=True
    )


@pytest.mark.parametrize("data", [v for _, v in VALUES], ids=[n for n, _ in VALUES])
def test_to_dict_reads_what_the_sdk_reads(data: dict[str, Any]) -> None:
    s = sdk_struct(data)
    ours, sdk = structs.to_dict(s), resource.struct_to_dict(s)
    # Same values, same types (443.0, not 443) and the same key order.
    assert json.dumps(ours) == json.dumps(sdk)
    assert ours == sdk


def test_update_overwrites_like_struct_update() -> None:
    ours, sdk = sdk_struct({"a": {"old": 1}, "b": [1, 2]}), sdk_struct({"a": {"old": 1}, "b": [1]})
    structs.update(ours, {"a": {"new": 2}, "b": ["x"]})
    sdk.update({"a": {"new": 2}, "b": ["x"]})
    assert structs.to_dict(ours) == structs.to_dict(sdk) == {"a": {"new": 2.0}, "b": ["x"]}


@pytest.mark.parametrize(
    ("data", "error"),
    [({"s": {1, 2}}, ValueError), ({"o": object()}, ValueError)],
    ids=["set", "object"],
)
def test_update_refuses_what_a_struct_cannot_hold(data: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        structs.update(struct_pb2.Struct(), data)
    with pytest.raises(error):
        sdk_struct(data)


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")])
def test_to_dict_refuses_numbers_json_cannot_hold(number: float) -> None:
    s = struct_pb2.Struct()
    s.fields["n"].number_value = number
    with pytest.raises(ValueError, match="finite"):
        structs.to_dict(s)
    with pytest.raises(ValueError, match="Fail to serialize"):
        resource.struct_to_dict(s)
