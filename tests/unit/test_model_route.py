"""compose-model-service, for a ModelRoute: one gateway's route onto its cluster, through requests.

A ModelRoute is what a ModelService composes per serving gateway (see
test_model_service.py); here it is reconciled on its own, from hand-made
plans and from the canary's.
"""

import base64
import copy
from dataclasses import dataclass
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.names import fleet_gateway, gateway_client_certificate, gateway_cluster_ca
from fleetgate.core.secrets import holder_name
from fleetgate.model_service.composer import compose
from fleetgate.model_service.model_route import BEING_DELETED, ROUTE_LABEL
from fleetgate.model_service.naming import (
    ai_gateway_route_name,
    api_key_name,
    backend_name,
    endpoint_key,
    is_route_key,
    route_keys,
)
from tests.support import Outcome, request, run
from tests.support.model_service import (
    API,
    API_KEY_VALUE,
    CANARY,
    NS,
    SVC,
    as_observed,
    backends_arrived,
    canary_fleet,
    manifest,
    model_routes,
    objects_for,
    reconcile_route,
    route_manifest,
)

Obj = dict[str, Any]
# The canary's route on the public gateway, and the composition names of what it composes.
CANARY_ENDPOINTS = ("qwen-eu-1", "qwen-us-1", "openai")
CANARY_ROUTE = ai_gateway_route_name(SVC, "public", CANARY_ENDPOINTS)
CANARY_KEYS = route_keys(CANARY_ENDPOINTS)
EU_1 = "eu-1-0123456789.fleetgate-system.svc.cluster.local"


# Every attempt names its tier and endpoint, for the usage record and the metrics.
def attempt(priority: int, endpoint: str) -> Obj:
    return {
        "set": [
            {"name": "x-fleetgate-tier", "value": str(priority)},
            {"name": "x-fleetgate-endpoint", "value": endpoint},
        ]
    }


# What a third party never receives: the caller, the gateway, the caller's address
# (Envoy's own x-envoy-external-address goes at the fleet gateway's listeners).
THIRD_PARTY_REMOVED = ["x-fleetgate-caller", "x-fleetgate-gateway", "x-forwarded-for"]


def backend(endpoint: str, **fields: Any) -> Obj:
    """One backend of a plan: a third party over TLS unless ``fields`` say otherwise."""
    return {
        "endpoint": endpoint,
        "weight": 1,
        "priority": 0,
        "host": "api.example.com",
        "port": 443,
        "schema": "OpenAI",
        "prefix": "/v1",
        "tls": "System",
        **fields,
    }


def mutual_tls_backend(port: int) -> Obj:
    """The Backend spec of an endpoint on eu-1, which the public gateway reaches over mutual TLS."""
    return {
        "endpoints": [{"fqdn": {"hostname": EU_1, "port": port}}],
        "tls": {
            "caCertificateRefs": [
                {"group": "", "kind": "ConfigMap", "name": gateway_cluster_ca("public", "eu-1")}
            ],
            "sni": EU_1,
            "clientCertificateRef": {
                "group": "",
                "kind": "Secret",
                "name": gateway_client_certificate("public"),
            },
        },
    }


def model_route(*backends: Obj, **gateway: Any) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ModelRoute",
        "metadata": {"name": "chat-public-0123456789", "namespace": NS},
        "spec": {
            "model": "team-a/chat",
            "gateway": {
                "name": "public",
                "gatewayName": fleet_gateway("public"),
                "providerConfigName": "pc-edge",
                "requestTimeout": "300s",
                "streamIdleTimeout": "60s",
                **gateway,
            },
            "backends": list(backends) or [backend("openai")],
        },
    }


def canary_xr() -> Obj:
    """The ModelRoute the canary ModelService composes for gateway public."""
    xr: Obj = model_routes(run(compose, request(CANARY, required=canary_fleet())))["public"]
    return xr


def canary(observed: dict[str, Obj] | None = None) -> Outcome:
    """The canary's ModelRoute, reconciled."""
    return reconcile_route(canary_xr(), observed)


def settled_canary() -> Outcome:
    """The canary's ModelRoute once its Objects exist on the cluster (credentials patched in)."""
    return canary(as_observed(canary()))


def route(out: Outcome) -> Obj:
    return route_manifest(out)


# --- the canary's route, as its ModelService planned it ---------------------------


def test_a_route_for_a_tls_gateway_attaches_to_its_https_listener_only() -> None:
    spec = route(reconcile_route(model_route(sectionName="https")))["spec"]
    assert spec["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": fleet_gateway("public"),
            "sectionName": "https",
        }
    ]


def test_canary_route() -> None:
    out = canary()
    assert out.fatal == []
    assert out.warnings == []
    assert set(out.desired) == objects_for(
        "qwen-eu-1", "qwen-us-1", "openai", credentials=("openai",)
    )
    assert route(out)["metadata"] == {
        "name": CANARY_ROUTE,
        "namespace": "fleetgate-system",
    }
    spec = route(out)["spec"]
    assert spec["parentRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": fleet_gateway("public")}
    ]
    rule = spec["rules"][0]
    assert rule["matches"] == [
        {"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "team-a/chat"}]}
    ]
    assert rule["backendRefs"] == [
        {
            "name": backend_name(SVC, "public", "qwen-eu-1"),
            "weight": 9,
            "priority": 0,
            "headerMutation": attempt(0, "qwen-eu-1"),
            "modelNameOverride": "team-a/qwen",
        },
        {
            "name": backend_name(SVC, "public", "qwen-us-1"),
            "weight": 1,
            "priority": 0,
            "headerMutation": attempt(0, "qwen-us-1"),
            "modelNameOverride": "team-a/qwen",
        },
        {
            "name": backend_name(SVC, "public", "openai"),
            "weight": 1,
            "priority": 1,
            "headerMutation": attempt(1, "openai"),
            "modelNameOverride": "gpt-4o-mini",
        },
    ]
    assert rule["timeouts"] == {"request": "300s"}
    assert rule["streamIdleTimeout"] == "60s"
    assert spec["llmRequestCosts"] == [
        {"metadataKey": "llm_input_token", "type": "InputToken"},
        {"metadataKey": "llm_cached_input_token", "type": "CachedInputToken"},
        {"metadataKey": "llm_output_token", "type": "OutputToken"},
        {"metadataKey": "llm_total_token", "type": "TotalToken"},
        # No backend is priced: every response costs 0.
        {"metadataKey": "cost", "type": "CEL", "cel": "0u"},
        {"metadataKey": "cost_milli", "type": "CEL", "cel": "0u"},
    ]
    assert out.conditions["RouteAccepted"] == ("False", "Pending", "route not accepted yet")
    assert out.composite["status"] == {"route": CANARY_ROUTE, "backends": 3}
    assert out.composite_ready == "READY_FALSE"


def test_fleet_hosted_backend_uses_mutual_tls() -> None:
    out = canary()
    assert manifest(out, endpoint_key("qwen-eu-1", "backend"))["spec"] == mutual_tls_backend(443)
    ai = manifest(out, endpoint_key("qwen-eu-1", "ai-service-backend"))["spec"]
    assert ai == {
        "schema": {"name": "OpenAI", "prefix": "/team-a/qwen/v1"},
        "backendRef": {
            "group": "gateway.envoyproxy.io",
            "kind": "Backend",
            "name": backend_name(SVC, "public", "qwen-eu-1"),
        },
    }, "a fleet-hosted endpoint keeps the caller header"


def test_third_party_backend_uses_system_trust_and_loses_the_caller_header() -> None:
    out = canary()
    assert manifest(out, endpoint_key("openai", "backend"))["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "api.openai.com", "port": 443}}],
        "tls": {"wellKnownCACertificates": "System", "sni": "api.openai.com"},
    }
    ai = manifest(out, endpoint_key("openai", "ai-service-backend"))["spec"]
    assert ai["headerMutation"] == {"remove": THIRD_PARTY_REMOVED}
    assert ai["schema"] == {"name": "OpenAI", "prefix": "/v1"}


def test_credential_is_a_policy_and_a_projected_secret() -> None:
    out = settled_canary()
    policy = manifest(out, endpoint_key("openai", "security-policy"))
    secret_name = api_key_name(SVC, "public", "openai")
    assert policy["spec"] == {
        "type": "APIKey",
        "apiKey": {"secretRef": {"name": secret_name}},
        "targetRefs": [
            {
                "group": "aigateway.envoyproxy.io",
                "kind": "AIServiceBackend",
                "name": backend_name(SVC, "public", "openai"),
            }
        ],
    }
    obj = out.desired[endpoint_key("openai", "api-key")]
    assert obj["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name, "namespace": "fleetgate-system"},
        "type": "Opaque",
        "data": {"apiKey": ""},
    }
    [reference] = obj["spec"]["references"]
    assert reference["patchesFrom"]["name"] == "openai"
    assert reference["patchesFrom"]["namespace"] == NS
    assert reference["toFieldPath"] == "data[apiKey]"
    assert obj["spec"]["watch"] is True
    assert obj["spec"]["readiness"] == {
        "policy": "DeriveFromCelQuery",
        "celQuery": "has(object.data) && size(object.data) == 1 && ['apiKey']"
        ".all(k, k in object.data && object.data[k] != '')",
    }


def test_a_credential_is_patched_in_by_an_object_that_never_creates_it() -> None:
    """provider-kubernetes saves the Object it creates a remote object from (#223), and adds
    its finalizer with one whole-Object update: the filler gets its references after that,
    and a holder without references creates and deletes the Secret."""
    key = endpoint_key("openai", "api-key")
    first = canary().desired[key]
    assert first["spec"]["managementPolicies"] == ["Observe", "Update"]
    assert "references" not in first["spec"]
    holder = canary().desired[holder_name(key)]["spec"]
    assert holder["managementPolicies"] == ["Observe", "Create", "Delete"]
    # Ready once the Secret exists: SuccessfulCreate would read the filler's values as drift.
    assert holder["readiness"] == {
        "policy": "DeriveFromCelQuery",
        "celQuery": "has(object.metadata.name)",
    }
    assert "references" not in holder
    assert holder["forProvider"] == first["spec"]["forProvider"]
    assert first["spec"]["forProvider"]["manifest"]["data"] == {"apiKey": ""}
    assert "references" in settled_canary().desired[key]["spec"]


def test_a_credential_waits_for_the_fillers_finalizer_not_for_the_secret() -> None:
    """The Secret can exist (its holder made it) before the filler's finalizer is on: a
    reference added then would be saved with the finalizer."""
    key = endpoint_key("openai", "api-key")
    observed = as_observed(canary())
    del observed[key]["metadata"]["finalizers"]
    assert observed[key]["status"]["atProvider"]["manifest"]["kind"] == "Secret"
    assert "references" not in canary(observed).desired[key]["spec"]


def test_every_object_lands_on_the_gateway_cluster() -> None:
    for obj in canary().desired.values():
        assert obj["apiVersion"] == "kubernetes.m.crossplane.io/v1alpha1"
        assert obj["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": "pc-edge",
        }
        assert obj["spec"]["forProvider"]["manifest"]["metadata"]["namespace"] == "fleetgate-system"


def test_every_object_is_watched_since_the_route_reads_each_ones_status() -> None:
    """Accepted, ResolvedRefs, StrictTiers and a filled credential reach the route on change."""
    out = settled_canary()
    assert {manifest(out, key)["kind"] for key in out.desired} >= {
        "AIGatewayRoute",
        "HTTPRoute",
        "EnvoyPatchPolicy",
        "Backend",
        "AIServiceBackend",
        "BackendSecurityPolicy",
        "Secret",
    }
    assert [k for k, obj in out.desired.items() if obj["spec"].get("watch") is not True] == []


# --- plans made by hand ------------------------------------------------------------------

BACKENDS: list[tuple[str, Obj, Obj, Obj, set[str]]] = [
    # name, the planned backend, Backend spec, AIServiceBackend spec (beyond backendRef),
    # composition resources besides its Backend and AIServiceBackend
    (
        "plain HTTP, no model override",
        backend("plain", host="vllm.models.svc", port=8000, tls="Off"),
        {"endpoints": [{"fqdn": {"hostname": "vllm.models.svc", "port": 8000}}]},
        {
            "schema": {"name": "OpenAI", "prefix": "/v1"},
            "headerMutation": {"remove": THIRD_PARTY_REMOVED},
        },
        set(),
    ),
    (
        "Anthropic with a credential",
        backend(
            "claude",
            host="api.anthropic.com",
            schema="Anthropic",
            credential={"name": "anthropic", "key": "token"},
        ),
        {
            "endpoints": [{"fqdn": {"hostname": "api.anthropic.com", "port": 443}}],
            "tls": {"wellKnownCACertificates": "System", "sni": "api.anthropic.com"},
        },
        {
            "schema": {"name": "Anthropic", "prefix": "/v1"},
            "headerMutation": {"remove": THIRD_PARTY_REMOVED},
        },
        {"claude/security-policy", "claude/api-key", "claude/api-key-holder"},
    ),
    (
        "mutual TLS to a cluster on another port",
        backend("hosted", host=EU_1, port=8443, tls="Mutual", cluster="eu-1", prefix="/a/b/v1"),
        mutual_tls_backend(8443),
        {"schema": {"name": "OpenAI", "prefix": "/a/b/v1"}},
        set(),
    ),
]


@pytest.mark.parametrize(
    ("planned", "backend_spec", "ai_spec", "extra"),
    [c[1:] for c in BACKENDS],
    ids=[c[0] for c in BACKENDS],
)
def test_each_kind_of_backend(
    planned: Obj, backend_spec: Obj, ai_spec: Obj, extra: set[str]
) -> None:
    out = reconcile_route(model_route(planned))
    assert out.fatal == []
    name = planned["endpoint"]
    keys = route_keys([name])
    assert set(out.desired) == {
        keys.route,
        keys.generated,
        keys.tiers,
        endpoint_key(name, "backend"),
        endpoint_key(name, "ai-service-backend"),
        *extra,
    }
    assert manifest(out, endpoint_key(name, "backend"))["spec"] == backend_spec
    ai = manifest(out, endpoint_key(name, "ai-service-backend"))["spec"]
    assert {k: v for k, v in ai.items() if k != "backendRef"} == ai_spec
    [ref] = route(out)["spec"]["rules"][0]["backendRefs"]
    assert ("modelNameOverride" in ref) == ("modelNameOverride" in planned)


def test_anthropic_credential_goes_in_the_anthropic_header() -> None:
    planned = backend("claude", schema="Anthropic", credential={"name": "anthropic", "key": "k"})
    xr = model_route(planned)
    out = reconcile_route(xr, as_observed(reconcile_route(xr)))
    policy = manifest(out, endpoint_key("claude", "security-policy"))["spec"]
    assert policy["type"] == "AnthropicAPIKey"
    assert policy["anthropicAPIKey"] == {
        "secretRef": {"name": api_key_name(SVC, "public", "claude")}
    }
    [reference] = out.desired[endpoint_key("claude", "api-key")]["spec"]["references"]
    assert reference["patchesFrom"]["fieldPath"] == "data[k]"
    assert reference["toFieldPath"] == "data[apiKey]", "the key AI Gateway reads"


def test_the_gateway_block_drives_the_route_rule() -> None:
    xr = model_route(gatewayName="gw-x", requestTimeout="15m", streamIdleTimeout="20s")
    spec = route(reconcile_route(xr))["spec"]
    assert spec["parentRefs"][0]["name"] == "gw-x"
    assert spec["rules"][0]["timeouts"] == {"request": "15m"}
    assert spec["rules"][0]["streamIdleTimeout"] == "20s"


# --- backends joining and leaving ----------------------------------------------------------
# Envoy AI Gateway v1.1.0 crash-loops when its route names a backend Envoy Gateway did not
# translate (envoyproxy/ai-gateway#2610): a route names only backends on the cluster, and no
# AIGatewayRoute ever gains one: a new backend set is a new route, which replaces the old.


def named(out: Outcome) -> list[str]:
    return [ref["name"] for ref in route(out)["spec"]["rules"][0]["backendRefs"]]


def routes(out: Outcome) -> dict[str, list[str]]:
    """Every AIGatewayRoute composed, by name, with the endpoints it names."""
    found = [manifest(out, k) for k in out.desired if k.startswith("route")]
    return {
        r["metadata"]["name"]: [ref["name"] for ref in r["spec"]["rules"][0]["backendRefs"]]
        for r in found
    }


def route_of_endpoints(*endpoints: str) -> tuple[str, list[str]]:
    """The AIGatewayRoute naming ``endpoints``: (its name, its backends' names)."""
    names = [backend_name(SVC, "public", e) for e in endpoints]
    return ai_gateway_route_name(SVC, "public", endpoints), names


def test_a_backend_joins_a_new_route_once_its_objects_are_on_the_cluster() -> None:
    one = model_route(backend("a"))
    two = model_route(backend("a"), backend("b", priority=1))
    before = reconcile_route(one)
    out = reconcile_route(two, as_observed(before))
    assert routes(out) == dict([route_of_endpoints("a")])
    assert manifest(out, route_keys(["a"]).route) == manifest(before, route_keys(["a"]).route)
    assert {endpoint_key("b", "backend"), endpoint_key("b", "ai-service-backend")} <= set(
        out.desired
    ), "its objects are composed meanwhile"
    status, reason, message = out.conditions["RouteAccepted"]
    assert (status, reason) == ("False", "BackendsMoving")
    assert "b (arriving)" in message
    joined = reconcile_route(two, as_observed(out))
    # Created whole beside the old route, which answers until the new one serves.
    assert routes(joined) == dict([route_of_endpoints("a"), route_of_endpoints("a", "b")])
    assert joined.conditions["RouteAccepted"] == ("False", "Pending", "route not accepted yet")
    served = reconcile_route(two, as_observed(joined))
    assert routes(served) == dict([route_of_endpoints("a", "b")])
    assert set(served.desired) == objects_for("a", "b")
    assert served.conditions["RouteAccepted"][:2] == ("True", "Accepted")


def test_the_old_route_serves_until_the_new_ones_caller_policies_are_attached() -> None:
    access = {"callers": ["team-a"]}
    one = model_route(backend("a"))
    one["spec"]["access"] = access
    two = copy.deepcopy(one)
    two["spec"]["backends"].append(backend("b"))
    settled = reconcile_route(one, as_observed(reconcile_route(one)))
    joined = reconcile_route(two, as_observed(reconcile_route(two, as_observed(settled))))
    new = route_keys(["a", "b"])
    observed = as_observed(joined)
    observed[new.access]["status"]["conditions"][0]["status"] = "False"
    waiting = reconcile_route(two, observed)
    assert routes(waiting) == dict([route_of_endpoints("a"), route_of_endpoints("a", "b")])
    assert route_keys(["a"]).access in waiting.desired, "the old route keeps its caller policy"
    assert routes(reconcile_route(two, as_observed(joined))) == dict([route_of_endpoints("a", "b")])


def test_a_route_with_no_backend_on_the_cluster_is_not_composed() -> None:
    out = run(compose, request(model_route(backend("a"))))
    assert not [k for k in out.desired if is_route_key(k)]
    assert endpoint_key("a", "backend") in out.desired
    assert out.conditions["RouteAccepted"][:2] == ("False", "BackendsMoving")


def test_a_backend_leaves_in_stages_route_objects_then_credential() -> None:
    """Deleted with its BackendSecurityPolicy, an AIServiceBackend can stay Terminating for
    good in Envoy AI Gateway v1.1.0 (envoyproxy/ai-gateway#2565)."""
    two = model_route(backend("a"), backend("b", priority=1, credential={"name": "k", "key": "v"}))
    one = model_route(backend("a"))
    settled = reconcile_route(two, as_observed(reconcile_route(two)))
    b_objects = {k for k in objects_for("b", credentials=("b",)) if k.startswith("b/")}
    out = reconcile_route(one, as_observed(settled))
    assert routes(out) == dict([route_of_endpoints("a", "b"), route_of_endpoints("a")])
    assert set(out.desired) == objects_for("a", "b") | objects_for("a") | b_objects
    assert "b (leaving)" in out.conditions["RouteAccepted"][2]
    swapped = reconcile_route(one, as_observed(out))
    assert routes(swapped) == dict([route_of_endpoints("a")])
    assert set(swapped.desired) == objects_for("a") | b_objects, "named until the old route goes"
    unnamed = reconcile_route(one, as_observed(swapped))
    credential = {endpoint_key("b", "security-policy"), endpoint_key("b", "api-key")}
    holder = holder_name(endpoint_key("b", "api-key"))
    assert set(unnamed.desired) == objects_for("a") | credential | {holder}
    assert "b (leaving)" in unnamed.conditions["RouteAccepted"][2]
    gone = reconcile_route(one, as_observed(unnamed))
    # The credential's holder goes a call after its filler (Reconcile's projected Secrets).
    assert set(gone.desired) == objects_for("a") | {holder}
    assert gone.conditions["RouteAccepted"][:2] == ("True", "Accepted")


def test_a_stage_waits_for_an_object_being_deleted_that_crossplane_no_longer_observes() -> None:
    """Crossplane forgets a composed resource the moment it deletes it, so the route's
    Objects carry its uid: while the old route's Object is still being deleted (Envoy AI
    Gateway's finalizer), the backend it named stays, and while the AIServiceBackend's is,
    its credential stays; the route is withdrawn only once none is left."""
    uid = {"uid": "route-uid"}
    two = model_route(backend("a"), backend("b", priority=1, credential={"name": "k", "key": "v"}))
    one = model_route(backend("a"))
    for xr in (one, two):
        xr["metadata"] |= uid
    settled = reconcile_route(two, as_observed(reconcile_route(two)))
    labelled = {
        k: o["metadata"].get("labels", {}).get(ROUTE_LABEL)
        for k, o in settled.desired.items()
        if o["kind"] == "Object"
    }
    assert set(labelled.values()) == {"route-uid"}, labelled
    beside = reconcile_route(one, as_observed(settled))
    replaced = reconcile_route(one, as_observed(beside))
    old = route_keys(["a", "b"]).route
    assert old not in replaced.desired, "the old route goes once the new one serves"

    def deleting(out: Outcome, key: str) -> Obj:
        obj = copy.deepcopy(as_observed(out)[key])
        obj["metadata"]["deletionTimestamp"] = "2026-12-07T10:00:00Z"
        return obj

    def step(observed: dict[str, Obj], *being_deleted: Obj, xr: Obj = one) -> Outcome:
        required = {BEING_DELETED: list(being_deleted)}
        return run(compose, request(xr, observed=observed, required=required))

    b_objects = {k for k in objects_for("b", credentials=("b",)) if k.startswith("b/")}
    observed = {k: v for k, v in as_observed(replaced).items() if k != old}
    waiting = step(observed, deleting(beside, old))
    assert b_objects <= set(waiting.desired), "named by a route still being deleted"
    unnamed = step(as_observed(waiting))
    assert endpoint_key("b", "ai-service-backend") not in unnamed.desired
    service_backend = deleting(waiting, endpoint_key("b", "ai-service-backend"))
    observed = as_observed(unnamed)
    held = step(observed, service_backend)
    assert endpoint_key("b", "api-key") in held.desired, "its AIServiceBackend is still going"
    assert endpoint_key("b", "api-key") not in step(observed).desired
    withdrawn = copy.deepcopy(one)
    withdrawn["spec"]["withdraw"] = True
    assert step({}, service_backend, xr=withdrawn).composite["status"]["withdrawn"] is False
    assert step({}, xr=withdrawn).composite["status"]["withdrawn"] is True


def test_a_route_composed_before_routes_were_keyed_serves_until_its_successor_does() -> None:
    """Upgrading Fleetgate: the route's Objects under their old names are replaced the same way."""
    xr = model_route(backend("a"))
    observed = as_observed(reconcile_route(xr))
    keys = route_keys(["a"])
    for old, new in (("route", keys.route), ("generated-route", keys.generated)):
        observed[old] = observed.pop(new)
    observed["strict-tiers"] = observed.pop(keys.tiers)
    first = reconcile_route(xr, observed)
    assert {"route", "generated-route", "strict-tiers", *keys[:3]} <= set(first.desired)
    then = reconcile_route(xr, as_observed(first))
    assert set(then.desired) == objects_for("a")


# --- reporting acceptance ------------------------------------------------------------------


@dataclass(frozen=True)
class Acceptance:
    """What the route reports once its Objects read ``accepted`` (None: not created yet)."""

    id: str
    accepted: bool | None
    route_accepted: tuple[str, str, str]  # RouteAccepted: status, reason, message
    refusal: str = ""  # the Objects' refusal message
    ready: str = "READY_FALSE"  # the composite's


ACCEPTANCE = [
    Acceptance("nothing created yet", None, ("False", "Pending", "route not accepted yet")),
    Acceptance(
        "accepted",
        True,
        ("True", "Accepted", "Envoy AI Gateway accepted the route, Envoy Gateway resolved it"),
        ready="READY_UNSPECIFIED",  # Ready as Crossplane derives it: every Object is
    ),
    Acceptance(
        "refused with a message",
        False,
        ("False", "Refused", "Envoy AI Gateway refused the route: backend not found"),
        refusal="backend not found",
    ),
    Acceptance(
        "refused without a message",
        False,
        ("False", "Refused", "Envoy AI Gateway refused the route: ReconciliationFailed"),
    ),
]


@pytest.mark.parametrize("case", ACCEPTANCE, ids=[c.id for c in ACCEPTANCE])
def test_route_accepted_is_reported(case: Acceptance) -> None:
    accepted, refusal, expected = case.accepted, case.refusal, case.route_accepted
    composed = canary() if accepted is None else settled_canary()
    observed = (
        backends_arrived(composed)
        if accepted is None
        else as_observed(composed, accepted=accepted, refusal=refusal)
    )
    out = canary(observed)
    assert out.conditions["RouteAccepted"] == expected
    assert out.composite_ready == case.ready
    assert out.xr_ready is (expected[0] == "True")
    assert out.desired == composed.desired, "nothing flaps on the way"
    for key, desired in out.rsp.desired.resources.items():
        conditions = observed.get(key, {}).get("status", {}).get("conditions", [])
        was_ready = {"type": "Ready", "status": "True", "reason": "Available"} in conditions
        assert desired.ready == (fnv1.READY_TRUE if was_ready else fnv1.READY_FALSE), key


def test_a_backend_envoy_gateway_cannot_resolve_keeps_the_route_unaccepted() -> None:
    """AI Gateway accepts the route and every Backend reads Accepted, but the HTTPRoute it
    generates has a backend Envoy Gateway cannot resolve (its rule turns into weighted
    clusters with a share answering 500): RouteAccepted says so, with Envoy Gateway's words."""
    why = "Failed to process route rule 0 backendRef 0: ConfigMap fleetgate-system/ca not found."
    out = canary(as_observed(canary(), unresolved=why))
    assert out.conditions["RouteAccepted"] == (
        "False",
        "Unresolved",
        f"Envoy Gateway on HTTPRoute {CANARY_ROUTE}: {why}",
    )
    assert out.composite_ready == "READY_FALSE"


def test_the_generated_httproute_is_observed_never_written() -> None:
    obj = canary().desired[CANARY_KEYS.generated]
    assert obj["spec"]["managementPolicies"] == ["Observe"]
    assert obj["spec"]["forProvider"]["manifest"]["metadata"] == {
        "name": CANARY_ROUTE,
        "namespace": "fleetgate-system",
    }


def test_until_envoy_gateway_reports_on_the_generated_httproute_the_route_is_pending() -> None:
    observed = as_observed(canary())
    del observed[CANARY_KEYS.generated]["status"]["atProvider"]
    out = canary(observed)
    assert out.conditions["RouteAccepted"][:2] == ("False", "Pending")
    assert "has not reported Accepted" in out.conditions["RouteAccepted"][2]


def test_priority_tiers_are_made_strict_on_the_routes_envoy_cluster() -> None:
    """Envoy's default overprovisioning factor (140) sends a share to the next tier once a tier
    is under ~72% healthy: one of two hosted endpoints ejected put ~30% on the paid fallback."""
    patch = manifest(canary(), CANARY_KEYS.tiers)
    assert patch["kind"] == "EnvoyPatchPolicy"
    assert patch["metadata"] == {
        "name": CANARY_ROUTE,
        "namespace": "fleetgate-system",
    }
    assert patch["spec"] == {
        "targetRef": {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": fleet_gateway("public"),
        },
        "type": "JSONPatch",
        "jsonPatches": [
            {
                "type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
                "name": f"httproute/fleetgate-system/{CANARY_ROUTE}/rule/0",
                "operation": {
                    "op": "add",
                    "path": "/load_assignment/policy",
                    "value": {"overprovisioning_factor": 100000},
                },
            }
        ],
    }


def test_an_envoy_gateway_without_patch_policies_is_reported() -> None:
    observed = as_observed(canary())
    refused = {
        "type": "Accepted",
        "status": "False",
        "reason": "Disabled",
        "message": "EnvoyPatchPolicy is disabled in the EnvoyGateway configuration",
    }
    remote = observed[CANARY_KEYS.tiers]["status"]["atProvider"]["manifest"]
    remote["status"]["ancestors"][0]["conditions"] = [refused]
    out = canary(observed)
    status, reason, message = out.conditions["StrictTiers"]
    assert (status, reason) == ("False", "Disabled")
    assert "disabled in the EnvoyGateway configuration" in message
    assert any("strict priority tiers" in w for w in out.warnings)
    # The route still serves: only the tiers' strictness is lost.
    assert out.conditions["RouteAccepted"][0] == "True"
    assert canary(as_observed(canary())).conditions["StrictTiers"][:2] == ("True", "Programmed")


# What Envoy Gateway v1.8.3 writes beside Accepted=True when a patch did not apply
# (internal/gatewayapi/status/envoypatchpolicy.go:38-51)
UNAPPLIED = {
    "target-missing": {
        "reason": "ResourceNotFound",
        "message": "Unable to find xds resources: type.googleapis.com/envoy.config.cluster.v3"
        ".Cluster/httproute/fleetgate-system/x/rule/0",
    },
    "patch-invalid": {"reason": "Invalid", "message": "validation failed for xds resource"},
}


@pytest.mark.parametrize("programmed", UNAPPLIED.values(), ids=UNAPPLIED.keys())
def test_an_accepted_patch_that_did_not_apply_leaves_tiers_unstrict(programmed: Obj) -> None:
    """Issue 31: a patch whose target cluster is gone reads Accepted=True, Programmed=False."""
    observed = as_observed(canary())
    remote = observed[CANARY_KEYS.tiers]["status"]["atProvider"]["manifest"]
    conditions = remote["status"]["ancestors"][0]["conditions"]
    assert [c["type"] for c in conditions] == ["Accepted", "Programmed"]
    conditions[1] = {**conditions[1], "status": "False", **programmed}
    out = canary(observed)
    status, reason, message = out.conditions["StrictTiers"]
    assert (status, reason) == ("False", programmed["reason"])
    assert message.startswith("Envoy Gateway accepted but did not apply EnvoyPatchPolicy")
    assert programmed["message"] in message
    assert any("strict priority tiers" in w for w in out.warnings)
    # Accepted without any word on Programmed yet: not yet known, not strict.
    del conditions[1]
    assert canary(observed).conditions["StrictTiers"][:2] == ("False", "Pending")


def _stamped(observed: dict[str, Obj], key: str, *, generation: int, stamp: int) -> Obj:
    """The remote object of ``key`` at ``generation``, each condition stamped ``stamp``."""
    remote: Obj = observed[key]["status"]["atProvider"]["manifest"]
    remote["metadata"]["generation"] = generation
    status = remote["status"]
    for entry in [status, *status.get("parents", []), *status.get("ancestors", [])]:
        for cond in entry.get("conditions", []):
            cond["observedGeneration"] = stamp
    return remote


def test_an_accepted_route_with_unavailable_backends_is_not_ready() -> None:
    """Issue 15: RouteAccepted=True, six Backends/AIServiceBackends unavailable, and the
    function's READY_TRUE made the ModelRoute Ready over them. Crossplane's own verdict
    (every composed resource ready) now stands."""
    observed = as_observed(canary())
    unavailable = [k for k in observed if k.endswith(("-backend", "-ai-service-backend"))]
    assert len(unavailable) >= 2
    for key in unavailable:
        observed[key]["status"]["conditions"][0]["status"] = "False"
    out = canary(observed)
    assert out.conditions["RouteAccepted"][0] == "True"
    assert out.composite_ready == "READY_UNSPECIFIED"
    assert not out.xr_ready
    assert {k for k, r in out.rsp.desired.resources.items() if r.ready != fnv1.READY_TRUE} == set(
        unavailable
    )


def test_envoy_gateway_resolving_an_older_httproute_leaves_the_route_pending() -> None:
    """Issue 15: a status written for an older spec said RouteAccepted=True."""
    observed = as_observed(canary())
    _stamped(observed, CANARY_KEYS.generated, generation=5, stamp=1)
    out = canary(observed)
    status, reason, message = out.conditions["RouteAccepted"]
    assert (status, reason) == ("False", "Pending")
    assert "has not reported Accepted" in message
    assert out.composite_ready == "READY_FALSE"
    _stamped(observed, CANARY_KEYS.generated, generation=5, stamp=5)
    assert canary(observed).conditions["RouteAccepted"][0] == "True"


def test_a_refusal_of_an_older_spec_is_not_this_ones() -> None:
    refused = as_observed(canary(), accepted=False, refusal="backend x not found")
    for obj in refused.values():  # the Objects Ready again: only the route's status lags
        obj["status"]["conditions"][0]["status"] = "True"
    _stamped(refused, CANARY_KEYS.route, generation=2, stamp=1)
    assert canary(refused).conditions["RouteAccepted"][0] == "True"
    _stamped(refused, CANARY_KEYS.route, generation=2, stamp=2)
    assert canary(refused).conditions["RouteAccepted"][:2] == ("False", "Refused")


def test_strict_tiers_from_an_older_patch_policy_are_pending() -> None:
    observed = as_observed(canary())
    _stamped(observed, CANARY_KEYS.tiers, generation=3, stamp=2)
    assert canary(observed).conditions["StrictTiers"][:2] == ("False", "Pending")


# --- invariants ---------------------------------------------------------------------------


def test_no_secret_value_anywhere_in_the_response() -> None:
    composed = canary()
    observed = as_observed(composed)
    needles = (API_KEY_VALUE, base64.b64encode(API_KEY_VALUE.encode()).decode())
    assert any(n in str(observed) for n in needles), "the observed state does carry the value"
    out = canary(observed)
    assert out.fatal == []
    assert endpoint_key("openai", "api-key") in out.desired
    wire = out.rsp.SerializeToString()
    for needle in needles:
        assert needle.encode() not in wire
        assert needle not in str(out.rsp)


def test_same_plan_same_output() -> None:
    first = run(compose, request(model_route(backend("a"), backend("b", priority=1))))
    again = run(compose, request(model_route(backend("a"), backend("b", priority=1))))
    assert first.rsp.SerializeToString(deterministic=True) == again.rsp.SerializeToString(
        deterministic=True
    )


# --- bad input ----------------------------------------------------------------------------


def _with(path: str, value: Any, xr: Obj | None = None) -> Obj:
    """``xr`` (default: a one-backend ModelRoute) with the dotted ``path`` set to ``value``."""
    changed = copy.deepcopy(xr or model_route())
    *parents, leaf = path.split(".")
    node = changed
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is None:
        del node[leaf]
    else:
        node[leaf] = value
    return changed


MALFORMED: list[tuple[str, Obj, str]] = [
    # name, the ModelRoute, the field the fatal result names
    ("not a kind this function composes", _with("kind", "ModelThing"), "kind"),
    ("model of another namespace", _with("spec.model", "team-b/chat"), "spec.model"),
    ("model without a service name", _with("spec.model", "team-a/"), "spec.model"),
    ("namespace missing", _with("metadata.namespace", None), "metadata.namespace is required"),
    ("gateway missing", _with("spec.gateway", None), "spec.gateway"),
    ("Gateway name not a label", _with("spec.gateway.gatewayName", "Gw_1"), "gatewayName"),
    ("bad duration", _with("spec.gateway.requestTimeout", "5 minutes"), "requestTimeout"),
    ("no backends", _with("spec.backends", []), "spec.backends"),
    (
        "129 backends",
        _with("spec.backends", [backend(f"e{i}") for i in range(129)]),
        "spec.backends",
    ),
    (
        "one endpoint twice",
        _with("spec.backends", [backend("a"), backend("a", priority=1)]),
        "backends[].endpoint must be unique",
    ),
    ("weight 0", _with("spec.backends.0.weight", 0), "spec.backends[0].weight"),
    ("priority 64", _with("spec.backends.0.priority", 64), "spec.backends[0].priority"),
    ("port 0", _with("spec.backends.0.port", 0), "spec.backends[0].port"),
    ("unknown TLS mode", _with("spec.backends.0.tls", "Maybe"), "spec.backends[0].tls"),
    ("Mutual without a cluster", _with("spec.backends.0.tls", "Mutual"), "cluster"),
    ("a cluster without Mutual", _with("spec.backends.0.cluster", "eu-1"), "cluster"),
    ("uppercase host", _with("spec.backends.0.host", "API.example.com"), "backends[0].host"),
    ("IPv4 host", _with("spec.backends.0.host", "10.0.0.7"), "spec.backends[0].host"),
    ("short IPv4 host", _with("spec.backends.0.host", "10.1"), "spec.backends[0].host"),
    (
        "huge model name",
        _with("spec.backends.0.modelNameOverride", "m" * 100_000),
        "modelNameOverride",
    ),
    (
        "credential without a key",
        _with("spec.backends.0.credential", {"name": "openai"}),
        "credential.key",
    ),
]


@pytest.mark.parametrize(("xr", "field"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_bad_input_is_a_fatal_result_naming_the_field(xr: Obj, field: str) -> None:
    out = run(compose, request(xr))
    assert len(out.fatal) == 1
    assert field in out.fatal[0]
    assert out.desired == {}


def test_deleted_whole_a_route_goes_before_its_backends_and_they_before_their_credential() -> None:
    """A ModelService deleted leaves its ModelRoutes' Objects to Kubernetes' garbage collector,
    all at once: each backend's Objects are also owned by the route's Object, and its
    credential's by its AIServiceBackend's, so each goes only once those are gone."""
    xr = model_route(backend("a", credential={"name": "k", "key": "v"}))
    observed = as_observed(reconcile_route(xr))
    for key, obj in observed.items():
        obj["metadata"] |= {"name": f"object-{key}", "uid": f"uid-{key}"}
    out = reconcile_route(xr, observed)
    route = route_keys(["a"]).route

    def owners(key: str) -> list[tuple[str, str, str]]:
        refs = out.desired[key]["metadata"].get("ownerReferences") or []
        return [(r["kind"], r["name"], r["uid"]) for r in refs]

    assert owners(endpoint_key("a", "backend")) == [("Object", f"object-{route}", f"uid-{route}")]
    assert owners(endpoint_key("a", "ai-service-backend")) == owners(endpoint_key("a", "backend"))
    service_backend = endpoint_key("a", "ai-service-backend")
    first = [("Object", f"object-{service_backend}", f"uid-{service_backend}")]
    api_key = endpoint_key("a", "api-key")
    for key in (endpoint_key("a", "security-policy"), api_key, holder_name(api_key)):
        assert owners(key) == first, key
    assert owners(route) == [], "the route itself goes first"
