"""core/structs: the fast Struct conversions give exactly what the SDK's give."""

import json
from typing import Any

import pytest
from crossplane.function import resource
from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core import structs
from fleetgate.core.observed import Observed, dig, is_current
from fleetgate.core.reconcile import Reconcile
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


# The plain reading of conditions, which the view over a Struct must agree with.
def _current(obj: dict[str, Any]) -> list[dict[str, Any]]:
    found = dig(obj, "status", "conditions")
    at = dig(obj, "metadata", "generation")
    items = found if isinstance(found, list) else []
    return [c for c in items if isinstance(c, dict) and is_current(c, at)]


def has_condition(obj: dict[str, Any], type_: str, status: str = "True") -> bool:
    return any(c.get("type") == type_ and c.get("status") == status for c in _current(obj))


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in _current(obj) if c.get("type") == type_), None)


def remote_manifest(obj: dict[str, Any]) -> dict[str, Any] | None:
    manifest = dig(obj, "status", "atProvider", "manifest")
    return manifest if isinstance(manifest, dict) else None


@pytest.mark.parametrize("observed", [v for _, v in OBSERVED], ids=[n for n, _ in OBSERVED])
def test_readers_agree_with_the_dict_readers(observed: dict[str, Any]) -> None:
    s = sdk_struct(observed)
    for type_, status in [("Ready", "True"), ("Ready", "False"), ("Synced", "True")]:
        assert Observed(s).has_condition(type_, status) == has_condition(observed, type_, status)
    rec = Reconcile(request({"kind": "X"}, observed={"r": observed}), run_composer_rsp())
    view, full = rec.observed("r"), structs.to_dict(rec.req.observed.resources["r"].resource)
    assert view.exists
    assert not rec.observed("other").exists
    assert view.ready == has_condition(full, "Ready")
    assert not rec.observed("other").ready
    assert view.exists_remotely == (remote_manifest(full) is not None)
    assert not rec.observed("other").exists_remotely
    assert view.condition("Ready") == condition(full, "Ready")
    assert rec.observed("other").condition("Ready") is None
    # Each field read through the view is what the whole Object holds there.
    assert view.to_dict() == full
    for path in [("kind",), ("status", "conditions"), ("metadata", "name")]:
        assert view.get(*path) == dig(full, *path)
    for path in [("kind",), ("apiVersion",), ("metadata", "name"), ("status",)]:
        assert view.remote.get(*path) == dig(remote_manifest(full), *path)


def test_the_view_reads_the_remote_status_without_the_remote_spec() -> None:
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
    view = rec.observed("r")
    assert (view.get("kind"), view.generation, view.ready) == ("Object", 2.0, True)
    assert view.condition("Ready") == _cond("Ready", "True")
    assert view.remote.generation == 3.0
    assert view.remote.get("status") == {"readyReplicas": 2.0}
    assert view.remote.to_dict(only={"kind": None, "metadata": {"name": None}}) == {
        "kind": "Deployment",
        "metadata": {"name": "engine"},
    }
    assert rec.observed("r") is view, "read once per call"


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
