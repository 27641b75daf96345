"""Readiness queries, evaluated with a real CEL implementation as provider-kubernetes would."""

from typing import Any

import pytest

from fleetgate.core import readiness
from fleetgate.core.objects import remote_object
from sim.controllers import evaluate


def cond(type_: str, status: str = "True", generation: int | None = 3) -> dict[str, Any]:
    """A condition; stamped with ``generation`` unless it is None."""
    found: dict[str, Any] = {"type": type_, "status": status, "reason": "r", "message": "m"}
    if generation is not None:
        found["observedGeneration"] = generation
    return found


def kind(api_version: str, kind_: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind_, "metadata": {"name": "x", "generation": 3}}


GATEWAY = kind("gateway.networking.k8s.io/v1", "Gateway")
ROUTE = kind("gateway.networking.k8s.io/v1", "HTTPRoute")
POLICY = kind("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy")
BACKEND = kind("gateway.envoyproxy.io/v1alpha1", "Backend")
DEPLOYMENT = kind("apps/v1", "Deployment")
BUNDLE = kind("trust.cert-manager.io/v1alpha1", "Bundle")
CERTIFICATE = kind("cert-manager.io/v1", "Certificate")
ISSUER = kind("cert-manager.io/v1", "Issuer")
AI_ROUTE = kind("aigateway.envoyproxy.io/v1beta1", "AIGatewayRoute")
AI_BACKEND = kind("aigateway.envoyproxy.io/v1beta1", "AIServiceBackend")


def parents(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"parents": [{"parentRef": {"name": "g"}, "conditions": list(conditions)}]}


def ancestors(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"ancestors": [{"ancestorRef": {"name": "g"}, "conditions": list(conditions)}]}


def deployment(observed_generation: int | None, *conditions: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions)}
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    return status


# Every object above is at generation 3.
CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("gateway programmed", GATEWAY, {"conditions": [cond("Programmed")]}, True),
    ("gateway accepted only", GATEWAY, {"conditions": [cond("Accepted")]}, False),
    ("gateway not programmed", GATEWAY, {"conditions": [cond("Programmed", "False")]}, False),
    ("gateway without status", GATEWAY, {}, False),
    (
        "gateway programmed for an older spec",
        GATEWAY,
        {"conditions": [cond("Programmed", generation=2)]},
        False,
    ),
    (
        "gateway programmed, unstamped (Envoy Gateway always stamps)",
        GATEWAY,
        {"conditions": [cond("Programmed", generation=None)]},
        False,
    ),
    ("route accepted by its parent", ROUTE, parents(cond("Accepted")), True),
    ("route rejected by its parent", ROUTE, parents(cond("Accepted", "False")), False),
    ("route with no parents yet", ROUTE, {"parents": []}, False),
    ("route accepted for an older spec", ROUTE, parents(cond("Accepted", generation=1)), False),
    (
        "route accepted by one parent for its spec, by another for an older one",
        ROUTE,
        {
            "parents": [
                {"parentRef": {"name": "a"}, "conditions": [cond("Accepted", generation=2)]},
                {"parentRef": {"name": "b"}, "conditions": [cond("Accepted")]},
            ]
        },
        True,
    ),
    ("policy accepted by an ancestor", POLICY, ancestors(cond("Accepted")), True),
    ("policy without status", POLICY, {}, False),
    ("policy accepted for an older spec", POLICY, ancestors(cond("Accepted", generation=2)), False),
    ("backend accepted", BACKEND, {"conditions": [cond("Accepted")]}, True),
    # Envoy Gateway v1.8.3 reports a refused Backend under type "Invalid"
    # (internal/gatewayapi/status/backend.go:35-38), so an Accepted from
    # before stays: only its generation gives it away.
    (
        "backend refused after an earlier acceptance",
        BACKEND,
        {"conditions": [cond("Accepted", generation=2), cond("Invalid", "False")]},
        False,
    ),
    (
        "deployment available",
        DEPLOYMENT,
        deployment(3, cond("Available", generation=None)),
        True,
    ),
    (
        "deployment available, status of an older spec",
        DEPLOYMENT,
        deployment(2, cond("Available", generation=None)),
        False,
    ),
    (
        "deployment available, status never observed",
        DEPLOYMENT,
        deployment(None, cond("Available", generation=None)),
        False,
    ),
    (
        "deployment progressing",
        DEPLOYMENT,
        deployment(3, cond("Progressing", generation=None)),
        False,
    ),
    ("bundle synced", BUNDLE, {"conditions": [cond("Synced")]}, True),
    (
        "bundle synced for an older spec",
        BUNDLE,
        {"conditions": [cond("Synced", generation=2)]},
        False,
    ),
    ("certificate ready", CERTIFICATE, {"conditions": [cond("Ready")]}, True),
    (
        "certificate ready for an older spec",
        CERTIFICATE,
        {"conditions": [cond("Ready", generation=2)]},
        False,
    ),
    ("issuer ready", ISSUER, {"conditions": [cond("Ready")]}, True),
    (
        "issuer ready for an older spec",
        ISSUER,
        {"conditions": [cond("Ready", generation=1)]},
        False,
    ),
    # Envoy AI Gateway v1.1.0 never stamps its conditions
    # (internal/controller/controller.go:551-566): unstamped is its latest word.
    (
        "AIGatewayRoute accepted (unstamped, as v1.1.0 writes it)",
        AI_ROUTE,
        {"conditions": [cond("Accepted", generation=None)]},
        True,
    ),
    ("AIGatewayRoute accepted for its spec", AI_ROUTE, {"conditions": [cond("Accepted")]}, True),
    (
        "AIGatewayRoute refused (NotAccepted, as v1.1.0 writes it)",
        AI_ROUTE,
        {"conditions": [cond("NotAccepted", "False", generation=None)]},
        False,
    ),
    (
        "AIServiceBackend accepted (unstamped)",
        AI_BACKEND,
        {"conditions": [cond("Accepted", generation=None)]},
        True,
    ),
    (
        "AIServiceBackend accepted for an older spec",
        AI_BACKEND,
        {"conditions": [cond("Accepted", generation=2)]},
        False,
    ),
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


def test_a_route_accepted_for_an_older_spec_is_not_ready() -> None:
    """What a real control plane showed: generation 5, the only Accepted stamped 1."""
    route = {
        **AI_ROUTE,
        "metadata": {"name": "svc", "generation": 5},
        "status": {"conditions": [cond("Accepted", generation=1)]},
    }
    assert evaluate(readiness.for_manifest(route)["celQuery"], route) is False
    route["status"]["conditions"][0]["observedGeneration"] = 5
    assert evaluate(readiness.for_manifest(route)["celQuery"], route) is True


@pytest.mark.parametrize(
    ("stamp", "stamped", "ready"),
    [
        pytest.param(readiness.Stamp.CONDITION, 3, True, id="stamped: current"),
        pytest.param(readiness.Stamp.CONDITION, 2, False, id="stamped: stale"),
        pytest.param(readiness.Stamp.CONDITION, None, False, id="stamped: not yet"),
        pytest.param(readiness.Stamp.OPTIONAL, 3, True, id="optional: current"),
        pytest.param(readiness.Stamp.OPTIONAL, 2, False, id="optional: stale"),
        pytest.param(readiness.Stamp.OPTIONAL, None, True, id="optional: never stamped"),
    ],
)
def test_condition_query_by_stamp(stamp: readiness.Stamp, stamped: int | None, ready: bool) -> None:
    obj = {**GATEWAY, "status": {"conditions": [cond("Established", generation=stamped)]}}
    assert evaluate(readiness.condition_query("Established", stamp), obj) is ready


@pytest.mark.parametrize(
    ("api_version", "kind_", "policy"),
    [
        ("v1", "ConfigMap", "SuccessfulCreate"),
        ("v1", "Service", "SuccessfulCreate"),
        ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy", "SuccessfulCreate"),
    ],
)
def test_kinds_without_a_query(api_version: str, kind_: str, policy: str) -> None:
    assert readiness.for_manifest({"apiVersion": api_version, "kind": kind_}) == {"policy": policy}


def test_no_kind_derives_readiness_from_the_object() -> None:
    """DeriveFromObject reads Ready's status alone, never its generation."""
    assert all(policy["policy"] != "DeriveFromObject" for policy in readiness._BY_KIND.values())


def test_remote_object_uses_the_kind_readiness_unless_told_otherwise() -> None:
    gateway = remote_object(manifest=dict(GATEWAY), provider_config="pc")
    assert gateway["spec"]["readiness"]["policy"] == "DeriveFromCelQuery"
    custom = remote_object(manifest=dict(GATEWAY), provider_config="pc", readiness_query="true")
    assert custom["spec"]["readiness"] == {"policy": "DeriveFromCelQuery", "celQuery": "true"}
    observed = remote_object(manifest=dict(GATEWAY), provider_config="pc", observe_only=True)
    assert observed["spec"]["readiness"] == {"policy": "SuccessfulCreate"}
