"""Readiness queries, evaluated with a real CEL implementation as provider-kubernetes would."""

from typing import Any

import celpy
import pytest
from celpy.adapter import json_to_cel

from fleetgate.core import readiness
from fleetgate.core.objects import remote_object


def evaluate(cel: str, obj: dict[str, Any]) -> bool:
    env = celpy.Environment()
    program = env.program(env.compile(cel))
    return bool(program.evaluate({"object": json_to_cel(obj)}))


def cond(type_: str, status: str = "True") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": "r", "message": "m"}


GATEWAY = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway"}
ROUTE = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute"}
POLICY = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "SecurityPolicy"}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment"}
BUNDLE = {"apiVersion": "trust.cert-manager.io/v1alpha1", "kind": "Bundle"}

CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("gateway programmed", GATEWAY, {"conditions": [cond("Programmed")]}, True),
    ("gateway accepted only", GATEWAY, {"conditions": [cond("Accepted")]}, False),
    ("gateway not programmed", GATEWAY, {"conditions": [cond("Programmed", "False")]}, False),
    ("gateway without status", GATEWAY, {}, False),
    (
        "route accepted by its parent",
        ROUTE,
        {"parents": [{"parentRef": {"name": "g"}, "conditions": [cond("Accepted")]}]},
        True,
    ),
    (
        "route rejected by its parent",
        ROUTE,
        {"parents": [{"parentRef": {"name": "g"}, "conditions": [cond("Accepted", "False")]}]},
        False,
    ),
    ("route with no parents yet", ROUTE, {"parents": []}, False),
    (
        "policy accepted by an ancestor",
        POLICY,
        {"ancestors": [{"ancestorRef": {"name": "g"}, "conditions": [cond("Accepted")]}]},
        True,
    ),
    ("policy without status", POLICY, {}, False),
    ("deployment available", DEPLOYMENT, {"conditions": [cond("Available")]}, True),
    ("deployment progressing", DEPLOYMENT, {"conditions": [cond("Progressing")]}, False),
    ("bundle synced", BUNDLE, {"conditions": [cond("Synced")]}, True),
]


@pytest.mark.parametrize(
    ("manifest", "status", "ready"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_readiness_query_by_kind(
    manifest: dict[str, Any], status: dict[str, Any], ready: bool
) -> None:
    policy = readiness.for_manifest(manifest)
    assert policy["policy"] == "DeriveFromCelQuery"
    observed = {**manifest, "status": status} if status else dict(manifest)
    assert evaluate(policy["celQuery"], observed) is ready


@pytest.mark.parametrize(
    ("api_version", "kind", "policy"),
    [
        ("v1", "ConfigMap", "SuccessfulCreate"),
        ("v1", "Service", "SuccessfulCreate"),
        ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy", "SuccessfulCreate"),
        ("cert-manager.io/v1", "Certificate", "DeriveFromObject"),
        ("cert-manager.io/v1", "Issuer", "DeriveFromObject"),
    ],
)
def test_kinds_without_a_query(api_version: str, kind: str, policy: str) -> None:
    assert readiness.for_manifest({"apiVersion": api_version, "kind": kind}) == {"policy": policy}


def test_remote_object_uses_the_kind_readiness_unless_told_otherwise() -> None:
    gateway = remote_object(manifest=dict(GATEWAY), provider_config="pc")
    assert gateway["spec"]["readiness"]["policy"] == "DeriveFromCelQuery"
    custom = remote_object(manifest=dict(GATEWAY), provider_config="pc", readiness_query="true")
    assert custom["spec"]["readiness"] == {"policy": "DeriveFromCelQuery", "celQuery": "true"}
    observed = remote_object(manifest=dict(GATEWAY), provider_config="pc", observe_only=True)
    assert observed["spec"]["readiness"] == {"policy": "SuccessfulCreate"}
