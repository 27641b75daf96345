"""core/structs: the fast Struct conversions give exactly what the SDK's give."""

import json
from typing import Any

import pytest
from crossplane.function import resource
from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core import structs
from fleetgate.core.function import Reconcile
from fleetgate.core.observed import condition, dig, has_condition, is_ready, remote_manifest
from fleetgate.core.runner import run_composer
from tests.support import request

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


def _cond(type_: Any, status: Any) -> dict[str, Any]:
    return {"type": type_, "status": status}


def _stamped(type_: str, generation: Any, status: str = "True") -> dict[str, Any]:
    return {**_cond(type_, status), "observedGeneration": generation}


OBSERVED: list[tuple[str, dict[str, Any]]] = [
    ("nothing", {}),
    ("no status", {"kind": "Object"}),
    ("empty status", {"status": {}}),
    ("ready", {"status": {"conditions": [_cond("Synced", "True"), _cond("Ready", "True")]}}),
    ("not ready", {"status": {"conditions": [_cond("Ready", "False")]}}),
    (
        "ready twice, once true",
        {"status": {"conditions": [_cond("Ready", "False"), _cond("Ready", "True")]}},
    ),
    ("status not a string", {"status": {"conditions": [_cond("Ready", True)]}}),
    ("condition not an object", {"status": {"conditions": ["Ready", 1, None]}}),
    ("conditions not a list", {"status": {"conditions": {"type": "Ready"}}}),
    ("remote manifest", {"status": {"atProvider": {"manifest": {"kind": "Gateway"}}}}),
    ("remote manifest empty", {"status": {"atProvider": {"manifest": {}}}}),
    ("remote manifest not an object", {"status": {"atProvider": {"manifest": "x"}}}),
    ("at provider empty", {"status": {"atProvider": {}}}),
    # Judged against the object's generation (observed.is_current).
    (
        "ready for its generation",
        {"metadata": {"generation": 4}, "status": {"conditions": [_stamped("Ready", 4)]}},
    ),
    (
        "ready for an older generation",
        {"metadata": {"generation": 4}, "status": {"conditions": [_stamped("Ready", 3)]}},
    ),
    (
        "ready unstamped at a generation",
        {"metadata": {"generation": 4}, "status": {"conditions": [_cond("Ready", "True")]}},
    ),
    ("ready stamped, no generation", {"status": {"conditions": [_stamped("Ready", 3)]}}),
    (
        "stamp not a number",
        {"metadata": {"generation": 4}, "status": {"conditions": [_stamped("Ready", "4")]}},
    ),
    (
        "stamp null",
        {"metadata": {"generation": 4}, "status": {"conditions": [_stamped("Ready", None)]}},
    ),
    (
        "generation not a number",
        {"metadata": {"generation": "4"}, "status": {"conditions": [_stamped("Ready", 3)]}},
    ),
    (
        "stale Ready False, current Ready True",
        {
            "metadata": {"generation": 4},
            "status": {"conditions": [_stamped("Ready", 3, "False"), _stamped("Ready", 4)]},
        },
    ),
]


@pytest.mark.parametrize("observed", [v for _, v in OBSERVED], ids=[n for n, _ in OBSERVED])
def test_readers_agree_with_the_dict_readers(observed: dict[str, Any]) -> None:
    s = sdk_struct(observed)
    for type_, status in [("Ready", "True"), ("Ready", "False"), ("Synced", "True")]:
        assert structs.has_condition(s, type_, status) == has_condition(observed, type_, status)
    rec = Reconcile(request({"kind": "X"}, observed={"r": observed}), run_composer_rsp())
    assert rec.has_observed("r")
    assert not rec.has_observed("other")
    assert rec.observed_ready("r") == is_ready(rec.observed("r"))
    assert not rec.observed_ready("other")
    assert rec.observed_remote_exists("r") == (remote_manifest(rec.observed("r")) is not None)
    assert not rec.observed_remote_exists("other")
    assert rec.observed_condition("r", "Ready") == condition(rec.observed("r"), "Ready")
    assert rec.observed_condition("other", "Ready") is None
    # The reduced state reads as the whole Object does for everything it keeps.
    state, full = rec.observed_state("r"), rec.observed("r")
    assert rec.observed_state("other") is None
    assert state is not None
    for type_, status in [("Ready", "True"), ("Ready", "False"), ("Synced", "True")]:
        assert has_condition(state, type_, status) == has_condition(full, type_, status)
    for path in [("kind",), ("status", "conditions"), ("metadata", "name")]:
        assert dig(state, *path) == dig(full, *path)
    assert condition(state, "Ready") == condition(full, "Ready")
    for path in [("kind",), ("apiVersion",), ("metadata", "name"), ("status",)]:
        assert dig(remote_manifest(state), *path) == dig(remote_manifest(full), *path)


def test_observed_state_leaves_out_the_remote_spec_and_the_desired_copy() -> None:
    remote = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "engine",
            "namespace": "ns",
            "generation": 3,
            "managedFields": [{"big": "x"}],
        },
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "vllm"}]}}},
        "status": {"readyReplicas": 2.0},
    }
    observed = {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "o", "generation": 2, "annotations": {"a": "b"}},
        "spec": {"forProvider": {"manifest": remote}},
        "status": {"conditions": [_cond("Ready", "True")], "atProvider": {"manifest": remote}},
    }
    rec = Reconcile(request({"kind": "X"}, observed={"r": observed}), run_composer_rsp())
    assert rec.observed_state("r") == {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "o", "generation": 2.0},
        "status": {
            "conditions": [_cond("Ready", "True")],
            "atProvider": {
                "manifest": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "engine", "namespace": "ns", "generation": 3.0},
                    "status": {"readyReplicas": 2.0},
                }
            },
        },
    }


def run_composer_rsp() -> Any:
    return run_composer(lambda rec: None, request({"kind": "X"}))


@pytest.mark.parametrize(
    ("path", "found"),
    [
        (("status",), True),
        (("status", "atProvider", "manifest", "kind"), True),
        (("status", "missing"), False),
        (("status", "atProvider", "manifest", "kind", "deeper"), False),
        (("spec",), False),
    ],
    ids=["top", "deep", "missing", "through a string", "absent"],
)
def test_lookup(path: tuple[str, ...], found: bool) -> None:
    s = sdk_struct({"status": {"atProvider": {"manifest": {"kind": "Gateway"}}}})
    before = s.SerializeToString(deterministic=True)
    assert (structs.lookup(s, *path) is not None) == found
    assert s.SerializeToString(deterministic=True) == before, "reading changes nothing"
