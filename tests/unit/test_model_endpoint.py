"""compose-model-endpoint: EndpointReady from the credential, nothing composed."""

from typing import Any

import pytest

from fleetgate.model_endpoint.composer import compose
from tests.support import Outcome, request, run, secret

NS = "team-a"
KEY_VALUE = "sk-live-0123456789abcdef"


def endpoint(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": "openai", "namespace": NS},
        "spec": {"origin": "https://api.openai.com", **spec},
    }


CASES: list[
    tuple[str, dict[str, Any], dict[str, list[dict[str, Any]]] | None, tuple[str, str], str]
] = [
    # name, spec, required resources, (status, reason), message fragment
    ("no credential", {}, None, ("True", "NoCredentialNeeded"), "needs no credential"),
    (
        "credential present",
        {"credentialRef": {"name": "openai"}},
        {"credential": [secret("openai", NS, {"apiKey": KEY_VALUE})]},
        ("True", "CredentialPresent"),
        "Secret team-a/openai, key 'apiKey'",
    ),
    (
        "non-default key",
        {"credentialRef": {"name": "openai", "key": "token"}},
        {"credential": [secret("openai", NS, {"token": KEY_VALUE})]},
        ("True", "CredentialPresent"),
        "key 'token'",
    ),
    (
        "requirement not resolved yet",
        {"credentialRef": {"name": "openai"}},
        None,
        ("False", "WaitingForCredential"),
        "Secret team-a/openai",
    ),
    (
        "secret missing",
        {"credentialRef": {"name": "openai"}},
        {"credential": []},
        ("False", "CredentialMissing"),
        "Secret team-a/openai does not exist",
    ),
    (
        "key missing",
        {"credentialRef": {"name": "openai", "key": "token"}},
        {"credential": [secret("openai", NS, {"apiKey": KEY_VALUE})]},
        ("False", "CredentialMissing"),
        "has no key 'token'",
    ),
    (
        "secret without data",
        {"credentialRef": {"name": "openai"}},
        {"credential": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "openai"}}]},
        ("False", "CredentialMissing"),
        "has no key 'apiKey'",
    ),
]


@pytest.mark.parametrize(
    ("spec", "required", "expected", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_endpoint_ready(
    spec: dict[str, Any],
    required: dict[str, list[dict[str, Any]]] | None,
    expected: tuple[str, str],
    fragment: str,
) -> None:
    out = run(compose, request(endpoint(**spec), required=required))
    status, reason, message = out.conditions["EndpointReady"]
    assert (status, reason) == expected
    assert fragment in message
    assert out.desired == {}, "a ModelEndpoint composes nothing"
    assert out.fatal == []
    # Composing nothing, it is Ready as Crossplane derives it unless held back.
    assert out.composite_ready == ("READY_UNSPECIFIED" if status == "True" else "READY_FALSE")
    assert out.xr_ready is (status == "True")
    if status == "False":
        assert any(fragment in w for w in out.warnings), "a not-ready endpoint says why"
    assert KEY_VALUE not in str(out.rsp), "the credential's value never reaches the response"


def test_credential_is_required_by_name_in_the_endpoint_namespace() -> None:
    out = run(compose, request(endpoint(credentialRef={"name": "openai"})))
    assert out.required_secret("credential") == ("openai", NS)


def test_no_requirement_without_credential() -> None:
    assert run(compose, request(endpoint())).requirements == {}


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("origin missing", {"metadata": {"name": "x", "namespace": NS}, "spec": {}}, "spec.origin"),
    ("spec missing", {"metadata": {"name": "x", "namespace": NS}}, "spec"),
    ("origin wrong type", endpoint(origin=["https://x"]), "spec.origin"),
    ("schema unknown", endpoint(api={"schema": "Gemini"}), "spec.api.schema"),
    ("credential name empty", endpoint(credentialRef={"name": ""}), "spec.credentialRef.name"),
    ("credential wrong type", endpoint(credentialRef="openai"), "spec.credentialRef"),
    ("huge model", endpoint(model="m" * 100_000), "spec.model"),
    ("name missing", {"metadata": {}, "spec": {"origin": "https://x"}}, "metadata.name"),
]


@pytest.mark.parametrize(("xr", "field"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_endpoint_is_a_fatal_result_naming_the_field(
    xr: dict[str, Any], field: str
) -> None:
    out: Outcome = run(compose, request(xr))
    assert len(out.fatal) == 1
    assert field in out.fatal[0]
    assert out.desired == {}
