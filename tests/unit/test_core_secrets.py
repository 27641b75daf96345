"""Reading a required Secret: its name and key names, never a value."""

from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core.reconcile import Reconcile, Selector
from fleetgate.core.secrets import SecretKeys

API_KEY = "sk-never-read"


def struct(data: dict[str, Any]) -> struct_pb2.Struct:
    return resource.dict_to_struct(data)


@pytest.mark.parametrize(
    ("secret", "keys"),
    [
        pytest.param(
            {"metadata": {"name": "s"}, "data": {"a": "eA==", "tls.crt": "eA=="}},
            {"a", "tls.crt"},
            id="data",
        ),
        pytest.param(
            {"metadata": {"name": "s"}, "stringData": {"b": API_KEY}}, {"b"}, id="stringData"
        ),
        pytest.param(
            {"metadata": {"name": "s"}, "data": {"a": "eA=="}, "stringData": {"a": "x", "c": "y"}},
            {"a", "c"},
            id="both, a key in each",
        ),
        pytest.param({"metadata": {"name": "s"}}, set(), id="empty"),
        # Malformed: values in a list, or a string, where a map belongs: no key.
        pytest.param({"metadata": {"name": "s"}, "data": [API_KEY]}, set(), id="data a list"),
        pytest.param({"metadata": {"name": "s"}, "data": API_KEY}, set(), id="data a string"),
    ],
)
def test_keys_come_from_data_and_string_data(secret: dict[str, Any], keys: set[str]) -> None:
    assert SecretKeys.of(struct(secret)) == SecretKeys("s", frozenset(keys))


def test_a_secret_without_a_readable_name_has_an_empty_one() -> None:
    assert SecretKeys.of(struct({"data": {"k": "eA=="}})).name == ""
    assert SecretKeys.of(struct({"metadata": {"name": 7}})).name == ""


def test_no_value_is_held() -> None:
    found = SecretKeys.of(struct({"metadata": {"name": "s"}, "stringData": {"k": API_KEY}}))
    assert API_KEY not in repr(found)
    assert API_KEY not in str(found._asdict())


def _reconcile(required: dict[str, list[dict[str, Any]]]) -> Reconcile:
    req = fnv1.RunFunctionRequest()
    for key, items in required.items():
        req.required_resources[key].SetInParent()
        for item in items:
            req.required_resources[key].items.add().resource.CopyFrom(struct(item))
    return Reconcile(req, fnv1.RunFunctionResponse())


def test_require_secrets_declares_the_requirement_and_tells_unresolved_from_none() -> None:
    selector = Selector("v1", "Secret", name="s", namespace="ns")
    unresolved = _reconcile({})
    assert unresolved.require_secrets("cred", selector) is None
    assert unresolved.rsp.requirements.resources["cred"] == selector.to_proto()
    assert _reconcile({"cred": []}).require_secrets("cred", selector) == []
    found = _reconcile({"cred": [{"metadata": {"name": "s"}, "data": {"k": "eA=="}}]})
    assert found.require_secrets("cred", selector) == [SecretKeys("s", frozenset({"k"}))]


def test_a_secret_being_deleted_counts_as_gone() -> None:
    """Held by a finalizer it is still listed; read as present it would never be let go."""
    selector = Selector("v1", "Secret", name="s", namespace="ns")
    deleting = {
        "metadata": {
            "name": "s",
            "deletionTimestamp": "2026-12-01T00:00:00Z",
            "finalizers": ["kubernetes.crossplane.io/referred-by-object-0000"],
        },
        "data": {"k": "eA=="},
    }
    kept = {"metadata": {"name": "t"}, "data": {"k": "eA=="}}
    found = _reconcile({"cred": [deleting, kept]}).require_secrets("cred", selector)
    assert found == [SecretKeys("t", frozenset({"k"}))]
