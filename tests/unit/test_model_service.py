"""compose-model-service: the AI gateway route of a ModelService, through whole requests."""

import base64
import copy
import json
import random
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from e2e.pki import ca
from fleetgate.core.names import fleet_gateway, gateway_client_certificate, gateway_cluster_ca
from fleetgate.model_service.builders import (
    Service,
    api_key_name,
    backend_name,
    endpoint_key,
    route_key,
    route_name,
)
from fleetgate.model_service.composer import compose
from tests.support import Outcome, request, run, secret

NS = "team-a"
API = "fleetgate.dev/v1alpha1"
API_KEY_VALUE = "sk-live-do-not-leak-0123456789"
SVC = Service(NS, "chat")
CLUSTER_CA = ca("eu-1 cluster CA").cert_pem.decode()
CLIENT_CA = ca("public gateway client CA").cert_pem.decode()

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

Required = dict[str, list[dict[str, Any]]]


# --- fixtures: the resources Crossplane hands the function --------------------


def service(*entries: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": {"name": "chat", "namespace": NS, "labels": labels or {}},
        "spec": {"endpoints": list(entries)},
    }


def entry(weight: int = 1, priority: int = 0, **labels: str) -> dict[str, Any]:
    return {"selector": {"matchLabels": labels}, "weight": weight, "priority": priority}


def endpoint(
    name: str,
    origin: str,
    *,
    labels: dict[str, str] | None = None,
    ready: str | None = "True",
    **spec: Any,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
        "spec": {"origin": origin, **spec},
    }
    if ready is not None:
        reason = "CredentialPresent" if ready == "True" else "CredentialMissing"
        obj["status"] = {
            "conditions": [{"type": "EndpointReady", "status": ready, "reason": reason}]
        }
    return obj


def hosted(name: str, cluster: str, **kwargs: Any) -> dict[str, Any]:
    """A fleet-hosted endpoint, as compose-model-deployment publishes it."""
    labels = {"fleetgate.dev/cluster": cluster, "fleetgate.dev/deployment": "qwen"}
    labels |= kwargs.pop("labels", {})
    return endpoint(
        name,
        f"https://{cluster}-0123456789.fleetgate-system.svc.cluster.local",
        labels=labels,
        api={"schema": "OpenAI", "prefix": f"/{NS}/qwen/v1"},
        model=f"{NS}/qwen",
        **kwargs,
    )


def third_party(name: str, **kwargs: Any) -> dict[str, Any]:
    return endpoint(
        name,
        kwargs.pop("origin", "https://api.openai.com"),
        labels=kwargs.pop("labels", {"provider": name}),
        model=kwargs.pop("model", "gpt-4o-mini"),
        credentialRef=kwargs.pop("credentialRef", {"name": name}),
        **kwargs,
    )


def gateway(
    name: str = "public",
    cluster: str = "edge",
    *,
    selector: dict[str, str] | None = None,
    client_ca: str | None = CLIENT_CA,
    failover: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterName": cluster}
    if selector is not None:
        spec["serviceSelector"] = {"matchLabels": selector}
    if failover is not None:
        spec["failover"] = failover
    status: dict[str, Any] = {"endpoints": {"openAI": f"https://{name}.example.com/v1"}}
    if client_ca is not None:
        status["clientCACertificate"] = client_ca
    return {
        "apiVersion": API,
        "kind": "InferenceGateway",
        "metadata": {"name": name},
        "spec": spec,
        "status": status,
    }


def cluster(
    name: str, *, provider_config: str | None = None, ca_pem: str | None = CLUSTER_CA
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if provider_config is not None:
        status["providerConfigRef"] = {"name": provider_config}
    if ca_pem is not None:
        status["gateway"] = {"caCertificate": ca_pem, "hostname": f"{name}.example"}
    return {
        "apiVersion": API,
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {"credentials": {"providerConfigName": f"pc-{name}"}},
        "status": status,
    }


def fleet(*endpoint_lists: list[dict[str, Any]], **extra: list[dict[str, Any]]) -> Required:
    """One serving gateway on cluster ``edge``, clusters eu-1 and us-1, the given endpoints."""
    required: Required = {
        "gateways": [gateway()],
        "clusters": [
            cluster("edge", provider_config="pc-edge"),
            cluster("eu-1"),
            cluster("us-1"),
        ],
        "credential-openai": [secret("openai", NS, {"apiKey": API_KEY_VALUE})],
    }
    for i, found in enumerate(endpoint_lists):
        required[f"endpoints-{i}"] = found
    required.update(extra)
    return required


CANARY = service(
    entry(90, track="stable"),
    entry(10, track="canary"),
    entry(1, 1, provider="openai"),
)


def canary_fleet(**extra: list[dict[str, Any]]) -> Required:
    return fleet(
        [hosted("qwen-eu-1", "eu-1", labels={"track": "stable"})],
        [hosted("qwen-us-1", "us-1", labels={"track": "canary"})],
        [third_party("openai")],
        **extra,
    )


# --- reading the response ------------------------------------------------------


def manifest(out: Outcome, key: str) -> dict[str, Any]:
    manifest: dict[str, Any] = out.desired[key]["spec"]["forProvider"]["manifest"]
    return manifest


def route(out: Outcome, gw: str = "public") -> dict[str, Any]:
    return manifest(out, route_key(gw))


def backend_refs(out: Outcome, gw: str = "public") -> list[tuple[str, int, int]]:
    """(endpoint, weight, priority) per backendRef, endpoints named as the test knows them."""
    names = {
        backend_name(SVC, gw, ep): ep
        for ep in (
            key.split("/")[1]
            for key in out.desired
            if key.startswith(f"{gw}/") and key.count("/") == 2
        )
    }
    return [
        (names[ref["name"]], int(ref["weight"]), int(ref["priority"]))
        for ref in route(out, gw)["spec"]["rules"][0]["backendRefs"]
    ]


def routed(out: Outcome, gw: str = "public") -> set[str]:
    return {ep for ep, _, _ in backend_refs(out, gw)} if route_key(gw) in out.desired else set()


def condition(out: Outcome) -> tuple[str, str, str]:
    return out.conditions["RoutingReady"]


def as_observed(out: Outcome, *, accepted: bool = True) -> dict[str, dict[str, Any]]:
    """The desired state fed back as Crossplane observes it after provider-kubernetes applied it.

    Every Object reports the remote object in ``status.atProvider.manifest``;
    with ``accepted`` the remote controllers have accepted everything and the
    Objects are Ready. A Secret comes back carrying its value the way
    provider-kubernetes leaves it: patched into the Object's own
    ``spec.forProvider.manifest`` and last-applied annotation
    (crossplane-contrib/provider-kubernetes#223) and, without
    --sanitize-secrets, its status. The function must never echo it.
    """
    observed = {}
    for key, desired in out.desired.items():
        obj = copy.deepcopy(desired)
        remote = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
        if remote["kind"] == "Secret":
            data = {"apiKey": base64.b64encode(API_KEY_VALUE.encode()).decode()}
            remote["data"] = data
            obj["spec"]["forProvider"]["manifest"]["data"] = dict(data)
            obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(remote)}
        else:
            status = "True" if accepted else "False"
            remote["status"] = {
                "conditions": [{"type": "Accepted", "status": status, "reason": "Accepted"}]
            }
        ready = "True" if accepted or remote["kind"] == "Secret" else "False"
        obj["metadata"].setdefault("annotations", {})["crossplane.io/composition-resource-name"] = (
            key
        )
        obj["status"] = {
            "atProvider": {"manifest": remote},
            "conditions": [
                {"type": "Ready", "status": ready, "reason": "Available"},
                {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
            ],
        }
        observed[key] = obj
    return observed


def objects_for(gw: str, *endpoints: str, credentials: tuple[str, ...] = ()) -> set[str]:
    keys = {route_key(gw)}
    for ep in endpoints:
        keys |= {endpoint_key(gw, ep, "backend"), endpoint_key(gw, ep, "ai-service-backend")}
    for ep in credentials:
        keys |= {endpoint_key(gw, ep, "security-policy"), endpoint_key(gw, ep, "api-key")}
    return keys


# --- the canary ------------------------------------------------------------------


def test_canary_with_third_party_fallback() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    assert out.fatal == []
    assert out.warnings == []
    assert set(out.desired) == objects_for(
        "public", "qwen-eu-1", "qwen-us-1", "openai", credentials=("openai",)
    )
    assert backend_refs(out) == [("qwen-eu-1", 9, 0), ("qwen-us-1", 1, 0), ("openai", 1, 1)]

    spec = route(out)["spec"]
    assert route(out)["metadata"] == {
        "name": route_name(SVC, "public"),
        "namespace": "fleetgate-system",
    }
    assert spec["parentRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": fleet_gateway("public")}
    ]
    rule = spec["rules"][0]
    assert rule["matches"] == [
        {"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "team-a/chat"}]}
    ]
    assert [r.get("modelNameOverride") for r in rule["backendRefs"]] == [
        "team-a/qwen",
        "team-a/qwen",
        "gpt-4o-mini",
    ]
    assert rule["timeouts"] == {"request": "300s"}
    assert rule["streamIdleTimeout"] == "60s"
    assert spec["llmRequestCosts"] == [
        {"metadataKey": "llm_input_token", "type": "InputToken"},
        {"metadataKey": "llm_output_token", "type": "OutputToken"},
        {"metadataKey": "llm_total_token", "type": "TotalToken"},
    ]
    assert condition(out)[:2] == ("False", "WaitingForRoutes")
    assert out.composite["status"] == {
        "model": "team-a/chat",
        "endpoints": {"total": 3, "ready": 3},
        "gateways": [{"name": "public", "openAI": "https://public.example.com/v1"}],
    }
    assert out.composite_ready == "READY_FALSE"


def test_fleet_hosted_backend_uses_mutual_tls() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    host = "eu-1-0123456789.fleetgate-system.svc.cluster.local"
    assert manifest(out, endpoint_key("public", "qwen-eu-1", "backend"))["spec"] == {
        "endpoints": [{"fqdn": {"hostname": host, "port": 443}}],
        "tls": {
            "caCertificateRefs": [
                {"group": "", "kind": "ConfigMap", "name": gateway_cluster_ca("public", "eu-1")}
            ],
            "sni": host,
            "clientCertificateRef": {
                "group": "",
                "kind": "Secret",
                "name": gateway_client_certificate("public"),
            },
        },
    }
    ai = manifest(out, endpoint_key("public", "qwen-eu-1", "ai-service-backend"))["spec"]
    assert ai == {
        "schema": {"name": "OpenAI", "prefix": "/team-a/qwen/v1"},
        "backendRef": {
            "group": "gateway.envoyproxy.io",
            "kind": "Backend",
            "name": backend_name(SVC, "public", "qwen-eu-1"),
        },
    }, "a fleet-hosted endpoint keeps the caller header"


def test_third_party_backend_uses_system_trust_and_loses_the_caller_header() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    assert manifest(out, endpoint_key("public", "openai", "backend"))["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "api.openai.com", "port": 443}}],
        "tls": {"wellKnownCACertificates": "System", "sni": "api.openai.com"},
    }
    ai = manifest(out, endpoint_key("public", "openai", "ai-service-backend"))["spec"]
    assert ai["headerMutation"] == {"remove": ["x-fleetgate-caller"]}
    assert ai["schema"] == {"name": "OpenAI", "prefix": "/v1"}


def test_credential_is_a_policy_and_a_projected_secret() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    policy = manifest(out, endpoint_key("public", "openai", "security-policy"))
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
    obj = out.desired[endpoint_key("public", "openai", "api-key")]
    assert obj["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name, "namespace": "fleetgate-system"},
        "type": "Opaque",
    }
    [reference] = obj["spec"]["references"]
    assert reference["patchesFrom"]["name"] == "openai"
    assert reference["patchesFrom"]["namespace"] == NS
    assert reference["toFieldPath"] == "data[apiKey]"
    assert obj["spec"]["readiness"] == {"policy": "SuccessfulCreate"}


def test_every_object_lands_on_the_gateway_cluster() -> None:
    out = run(compose, request(CANARY, required=canary_fleet()))
    for obj in out.desired.values():
        assert obj["apiVersion"] == "kubernetes.m.crossplane.io/v1alpha1"
        assert obj["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": "pc-edge",
        }
        assert obj["spec"]["forProvider"]["manifest"]["metadata"]["namespace"] == "fleetgate-system"


# --- variations on endpoints ---------------------------------------------------------

SHAPES: list[tuple[str, dict[str, Any], Required, list[tuple[str, int, int]]]] = [
    # name, service, required, backendRefs (endpoint, weight, priority level)
    (
        "90 over three and 10 over one",
        service(entry(90, track="stable"), entry(10, track="canary")),
        fleet(
            [
                hosted("a", "eu-1", labels={"track": "stable"}),
                hosted("b", "eu-1", labels={"track": "stable"}),
                hosted("c", "us-1", labels={"track": "stable"}),
            ],
            [hosted("d", "us-1", labels={"track": "canary"})],
        ),
        [("a", 3, 0), ("b", 3, 0), ("c", 3, 0), ("d", 1, 0)],
    ),
    (
        "weight 1 over five",
        service(entry(1, app="qwen")),
        fleet([hosted(f"e{i}", "eu-1", labels={"app": "qwen"}) for i in range(5)]),
        [(f"e{i}", 1, 0) for i in range(5)],
    ),
    (
        "endpoint matched twice belongs to the first entry",
        service(entry(90, track="stable"), entry(10, app="qwen")),
        fleet(
            [hosted("a", "eu-1", labels={"track": "stable", "app": "qwen"})],
            [
                hosted("a", "eu-1", labels={"track": "stable", "app": "qwen"}),
                hosted("b", "us-1", labels={"app": "qwen"}),
            ],
        ),
        [("a", 9, 0), ("b", 1, 0)],
    ),
    (
        "priorities renumbered without gaps",
        service(entry(1, 5, tier="a"), entry(1, 9, tier="b"), entry(1, 63, tier="c")),
        fleet(
            [hosted("a", "eu-1", labels={"tier": "a"})],
            [hosted("b", "eu-1", labels={"tier": "b"})],
            [hosted("c", "eu-1", labels={"tier": "c"})],
        ),
        [("a", 1, 0), ("b", 1, 1), ("c", 1, 2)],
    ),
    (
        "a tier with no ready endpoint leaves no gap",
        service(entry(1, 0, tier="a"), entry(1, 1, tier="b"), entry(1, 2, tier="c")),
        fleet(
            [hosted("a", "eu-1", labels={"tier": "a"}, ready="False")],
            [hosted("b", "eu-1", labels={"tier": "b"})],
            [third_party("openai", labels={"tier": "c"})],
        ),
        [("b", 1, 0), ("openai", 1, 1)],
    ),
    (
        "weights are relative within a tier only",
        service(entry(1000, 0, tier="a"), entry(1, 1, tier="b")),
        fleet(
            [hosted("a", "eu-1", labels={"tier": "a"})],
            [hosted("b", "eu-1", labels={"tier": "b"})],
        ),
        [("a", 1, 0), ("b", 1, 1)],
    ),
    (
        "entry that matches nothing",
        service(entry(90, track="none"), entry(10, track="canary")),
        fleet([], [hosted("d", "us-1", labels={"track": "canary"})]),
        [("d", 1, 0)],
    ),
]


@pytest.mark.parametrize(
    ("xr", "required", "expected"), [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES]
)
def test_route_shape(xr: dict[str, Any], required: Required, expected: list[Any]) -> None:
    out = run(compose, request(xr, required=required))
    assert out.fatal == []
    assert backend_refs(out) == expected


def test_endpoint_without_model_passes_the_caller_name_through() -> None:
    out = run(
        compose,
        request(
            service(entry(app="x")),
            required=fleet([endpoint("plain", "http://vllm.models.svc:8000", labels={"app": "x"})]),
        ),
    )
    [ref] = route(out)["spec"]["rules"][0]["backendRefs"]
    assert "modelNameOverride" not in ref
    backend = manifest(out, endpoint_key("public", "plain", "backend"))["spec"]
    assert backend == {"endpoints": [{"fqdn": {"hostname": "vllm.models.svc", "port": 8000}}]}


def test_anthropic_endpoint_gets_the_anthropic_key_header() -> None:
    anthropic = third_party(
        "anthropic",
        origin="https://api.anthropic.com",
        model="claude-sonnet-4",
        api={"schema": "Anthropic"},
    )
    out = run(
        compose,
        request(
            service(entry(provider="anthropic")),
            required=fleet(
                [anthropic],
                **{"credential-anthropic": [secret("anthropic", NS, {"apiKey": API_KEY_VALUE})]},
            ),
        ),
    )
    policy = manifest(out, endpoint_key("public", "anthropic", "security-policy"))["spec"]
    assert policy["type"] == "AnthropicAPIKey"
    assert policy["anthropicAPIKey"] == {
        "secretRef": {"name": api_key_name(SVC, "public", "anthropic")}
    }
    ai = manifest(out, endpoint_key("public", "anthropic", "ai-service-backend"))["spec"]
    assert ai["schema"] == {"name": "Anthropic", "prefix": "/v1"}


def test_failover_timeouts_come_from_the_gateway() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway(failover={"requestTimeout": "15m", "streamIdleTimeout": "20s"})]
    rule = route(run(compose, request(CANARY, required=required)))["spec"]["rules"][0]
    assert rule["timeouts"] == {"request": "15m"}
    assert rule["streamIdleTimeout"] == "20s"


def test_a_route_holds_at_most_128_backends() -> None:
    many = [hosted(f"e{i:03d}", "eu-1", labels={"app": "x"}) for i in range(130)]
    out = run(compose, request(service(entry(app="x")), required=fleet(many)))
    assert len(backend_refs(out)) == 128
    assert {"e128", "e129"}.isdisjoint(routed(out))
    assert sum("route holds at most 128" in w for w in out.warnings) == 2
    assert out.composite["status"]["endpoints"] == {"total": 130, "ready": 128}


# --- endpoints left out ------------------------------------------------------------

LEFT_OUT: list[tuple[str, dict[str, Any], Required, str]] = [
    # name, the left-out endpoint, extra required resources, warning fragment
    ("not ready", hosted("x", "eu-1", ready="False"), {}, "EndpointReady is False"),
    ("no EndpointReady yet", hosted("x", "eu-1", ready=None), {}, "no EndpointReady condition"),
    ("IPv4 origin", endpoint("x", "https://10.0.0.7"), {}, "IP address"),
    ("IPv6 origin", endpoint("x", "https://[fd00::7]:8443"), {}, "IPv6"),
    ("origin with a path", endpoint("x", "https://api.example.com/v1"), {}, "origin refused"),
    (
        "fleet-hosted over http",
        endpoint("x", "http://eu-1.example", labels={"fleetgate.dev/cluster": "eu-1"}),
        {},
        "must use https",
    ),
    (
        "cluster has not published its CA",
        hosted("x", "eu-1"),
        {
            "clusters": [
                cluster("edge", provider_config="pc-edge"),
                cluster("eu-1", ca_pem=None),
                cluster("us-1"),
            ]
        },
        "InferenceCluster eu-1 has not published its CA",
    ),
    (
        "cluster unknown",
        hosted("x", "gone"),
        {},
        "InferenceCluster gone not found",
    ),
    (
        "credential Secret absent",
        third_party("x"),
        {"credential-x": []},
        "Secret team-a/x does not exist",
    ),
    (
        "credential key absent",
        third_party("x", credentialRef={"name": "x", "key": "token"}),
        {"credential-x": [secret("x", NS, {"apiKey": API_KEY_VALUE})]},
        "Secret team-a/x has no key 'token'",
    ),
]


@pytest.mark.parametrize(
    ("left", "extra", "fragment"), [c[1:] for c in LEFT_OUT], ids=[c[0] for c in LEFT_OUT]
)
def test_unusable_endpoint_is_left_out_and_named(
    left: dict[str, Any], extra: Required, fragment: str
) -> None:
    left["metadata"]["labels"]["app"] = "x"
    keep = hosted("ok", "us-1", labels={"app": "x"})
    out = run(compose, request(service(entry(app="x")), required=fleet([left, keep], **extra)))
    assert out.fatal == []
    assert routed(out) == {"ok"}
    assert not any(key.startswith("public/x/") for key in out.desired)
    [warning] = out.warnings
    assert "ModelEndpoint team-a/x left out" in warning
    assert fragment in warning
    assert out.composite["status"]["endpoints"] == {"total": 2, "ready": 1}

    # Alone, it leaves nothing to route: nothing is composed, and RoutingReady says so.
    alone = run(compose, request(service(entry(app="x")), required=fleet([left], **extra)))
    assert alone.desired == {}
    status, reason, message = condition(alone)
    assert (status, reason) == ("False", "NoReadyEndpoints")
    assert "none of the 1 selected ModelEndpoints can be routed (1 " in message
    assert any(fragment in w for w in alone.warnings)
    assert alone.composite["status"]["gateways"] == []


def test_no_ready_endpoints_message_counts_each_cause() -> None:
    out = run(
        compose,
        request(
            service(entry(app="x")),
            required=fleet(
                [
                    hosted("a", "eu-1", labels={"app": "x"}, ready="False"),
                    hosted("b", "eu-1", labels={"app": "x"}, ready="False"),
                    endpoint("c", "https://10.1.2.3", labels={"app": "x"}),
                ]
            ),
        ),
    )
    assert condition(out)[2] == (
        "none of the 3 selected ModelEndpoints can be routed (2 not ready, 1 origin refused)"
    )
    assert out.composite["status"]["endpoints"] == {"total": 3, "ready": 0}


def test_nothing_selected() -> None:
    out = run(compose, request(service(entry(app="nothing")), required=fleet([])))
    assert out.desired == {}
    assert condition(out)[:2] == ("False", "NoReadyEndpoints")
    assert "no ModelEndpoint matches" in condition(out)[2]


# --- gateways ------------------------------------------------------------------------

GATEWAYS: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], set[str], str, str]] = [
    # name, gateways, clusters, gateways routing, reason, message fragment
    (
        "no selector serves every service",
        [gateway("public")],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForRoutes",
        "public (route not accepted yet)",
    ),
    (
        "selector matches the service's labels",
        [gateway("public", selector={"exposure": "public"})],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForRoutes",
        "public",
    ),
    (
        "two gateways with different selectors both serve",
        [
            gateway("public", selector={"exposure": "public"}),
            gateway("internal", "core", selector={"team": "research"}),
        ],
        [cluster("edge", provider_config="pc-edge"), cluster("core", provider_config="pc-core")],
        {"public", "internal"},
        "WaitingForRoutes",
        "internal (route not accepted yet); public (route not accepted yet)",
    ),
    (
        "selector not matching: not served, not pending",
        [gateway("public"), gateway("partner", selector={"exposure": "partner"})],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForRoutes",
        "pending on public (",
    ),
    (
        "no gateway selects the service",
        [gateway("partner", selector={"exposure": "partner"})],
        [cluster("edge", provider_config="pc-edge")],
        set(),
        "NoGatewaySelectsService",
        "none of the 1 InferenceGateways selects this service",
    ),
    (
        "no gateway at all",
        [],
        [],
        set(),
        "NoGatewaySelectsService",
        "none of the 0",
    ),
    (
        "gateway without a client CA is pending, not skipped",
        [gateway("public"), gateway("internal", client_ca=None)],
        [cluster("edge", provider_config="pc-edge")],
        {"public"},
        "WaitingForGateways",
        "internal (its client CA is not published yet)",
    ),
    (
        "gateway whose cluster has no ProviderConfig",
        [gateway("public", "fresh")],
        [cluster("fresh")],
        set(),
        "WaitingForGateways",
        "public (its InferenceCluster fresh has no ProviderConfig)",
    ),
    (
        "gateway whose cluster does not exist",
        [gateway("public", "missing")],
        [],
        set(),
        "WaitingForGateways",
        "public (its InferenceCluster missing not found)",
    ),
]


@pytest.mark.parametrize(
    ("gateways", "clusters", "serving", "reason", "fragment"),
    [c[1:] for c in GATEWAYS],
    ids=[c[0] for c in GATEWAYS],
)
def test_gateways(
    gateways: list[dict[str, Any]],
    clusters: list[dict[str, Any]],
    serving: set[str],
    reason: str,
    fragment: str,
) -> None:
    xr = service(entry(app="x"), labels={"exposure": "public", "team": "research"})
    required = fleet([hosted("a", "eu-1", labels={"app": "x"})])
    required["gateways"] = gateways
    required["clusters"] = [*clusters, cluster("eu-1")]
    out = run(compose, request(xr, required=required))
    assert out.fatal == []
    assert {key.split("/")[0] for key in out.desired} == serving
    assert {g["name"] for g in out.composite["status"]["gateways"]} == serving
    status, got_reason, message = condition(out)
    assert (status, got_reason) == ("False", reason)
    assert fragment in message
    if reason == "WaitingForGateways":
        assert any("selects this service but cannot serve it yet" in w for w in out.warnings)


def test_gateways_on_one_cluster_never_share_a_remote_object() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway("public", "edge"), gateway("internal", "edge")]
    out = run(compose, request(CANARY, required=required))
    names = [
        (
            obj["spec"]["forProvider"]["manifest"]["kind"],
            obj["spec"]["forProvider"]["manifest"]["metadata"]["name"],
        )
        for obj in out.desired.values()
    ]
    assert len(names) == len(set(names)) == 2 * 9


def test_two_services_never_share_a_remote_object() -> None:
    first = run(compose, request(CANARY, required=canary_fleet()))
    other = copy.deepcopy(CANARY)
    other["metadata"]["name"] = "chat-canary"
    second = run(compose, request(other, required=canary_fleet()))

    def remote(out: Outcome) -> set[tuple[str, str]]:
        return {
            (m["kind"], m["metadata"]["name"])
            for m in (o["spec"]["forProvider"]["manifest"] for o in out.desired.values())
        }

    assert remote(first).isdisjoint(remote(second))


# --- passes, as Crossplane makes them ----------------------------------------------


def test_requirements_are_declared_step_by_step() -> None:
    first = run(compose, request(CANARY))
    assert set(first.requirements) == {
        "gateways",
        "clusters",
        "endpoints-0",
        "endpoints-1",
        "endpoints-2",
    }
    for key, kind in (("gateways", "InferenceGateway"), ("clusters", "InferenceCluster")):
        every = first.requirements[key]
        assert (every.api_version, every.kind, every.WhichOneof("match")) == (
            API,
            kind,
            "match_labels",
        ), "an empty label selector must still be present, or it matches nothing"
        assert dict(every.match_labels.labels) == {}
    sel = first.requirements["endpoints-2"]
    assert (sel.kind, sel.namespace, dict(sel.match_labels.labels)) == (
        "ModelEndpoint",
        NS,
        {"provider": "openai"},
    )
    assert first.desired == {}
    assert condition(first)[:2] == ("False", "WaitingForResources")

    required = canary_fleet()
    del required["credential-openai"]
    second = run(compose, request(CANARY, required=required))
    cred = second.requirements["credential-openai"]
    assert (cred.api_version, cred.kind, cred.match_name, cred.namespace) == (
        "v1",
        "Secret",
        "openai",
        NS,
    )
    assert second.desired == {}, "no partial route while a credential is unresolved"
    assert "Secret team-a/openai" in condition(second)[2]


def test_credentials_are_required_only_for_endpoints_that_could_be_routed() -> None:
    required = fleet([third_party("openai", ready="False")])
    out = run(compose, request(service(entry(provider="openai")), required=required))
    assert "credential-openai" not in out.requirements


UNRESOLVED = ["gateways", "clusters", "endpoints-1", "credential-openai"]


@pytest.mark.parametrize("missing", UNRESOLVED)
def test_unresolved_input_changes_nothing(missing: str) -> None:
    composed = run(compose, request(CANARY, required=canary_fleet()))
    accepted = run(
        compose, request(CANARY, required=canary_fleet(), observed=as_observed(composed))
    )
    required = canary_fleet()
    del required[missing]
    xr = copy.deepcopy(CANARY)
    xr["status"] = accepted.composite["status"]
    out = run(compose, request(xr, required=required, observed=as_observed(composed)))
    assert set(out.desired) == set(composed.desired)
    for key, obj in out.desired.items():
        assert obj["spec"] == composed.desired[key]["spec"], key
    assert condition(out)[:2] == ("False", "WaitingForResources")
    assert out.composite["status"]["gateways"] == accepted.composite["status"]["gateways"]
    assert out.composite["status"]["endpoints"] == {"total": 3, "ready": 3}


def test_walk_from_composed_to_accepted_and_back() -> None:
    # Pass 1: composed, nothing accepted yet.
    composed = run(compose, request(CANARY, required=canary_fleet()))
    assert condition(composed)[:2] == ("False", "WaitingForRoutes")
    assert all(r.ready == fnv1.READY_FALSE for r in composed.rsp.desired.resources.values())

    # Pass 2: the controllers refused the route: the reason carries their message.
    refused = as_observed(composed, accepted=False)
    route_status = refused[route_key("public")]["status"]["atProvider"]["manifest"]["status"]
    route_status["conditions"][0]["message"] = "backend not found"
    out = run(compose, request(CANARY, required=canary_fleet(), observed=refused))
    assert condition(out)[:2] == ("False", "WaitingForRoutes")
    assert "route not accepted: backend not found" in condition(out)[2]

    # Pass 3: everything accepted.
    accepted = run(
        compose, request(CANARY, required=canary_fleet(), observed=as_observed(composed))
    )
    status, reason, message = condition(accepted)
    assert (status, reason) == ("True", "RoutesAccepted")
    assert message == "accepted on public; 3 of 3 endpoints usable"
    assert accepted.composite_ready == "READY_TRUE"
    assert all(r.ready == fnv1.READY_TRUE for r in accepted.rsp.desired.resources.values())
    assert accepted.desired == composed.desired, "nothing flaps once accepted"

    # Pass 4: the credential vanishes: that endpoint leaves, the route stays.
    required = canary_fleet(**{"credential-openai": []})
    gone = run(compose, request(CANARY, required=required, observed=as_observed(accepted)))
    assert routed(gone) == {"qwen-eu-1", "qwen-us-1"}
    assert set(gone.desired) == objects_for("public", "qwen-eu-1", "qwen-us-1")
    assert any("Secret team-a/openai does not exist" in w for w in gone.warnings)
    assert gone.composite["status"]["endpoints"] == {"total": 3, "ready": 2}

    # Pass 5: a cluster withdraws its CA: its endpoint leaves too.
    required["clusters"] = [
        cluster("edge", provider_config="pc-edge"),
        cluster("eu-1", ca_pem=None),
        cluster("us-1"),
    ]
    withdrawn = run(compose, request(CANARY, required=required, observed=as_observed(gone)))
    assert backend_refs(withdrawn) == [("qwen-us-1", 1, 0)]


def test_a_gateway_that_loses_its_prerequisites_keeps_what_it_had() -> None:
    required = canary_fleet()
    required["gateways"] = [gateway("public"), gateway("internal", "core")]
    required["clusters"].append(cluster("core", provider_config="pc-core"))
    composed = run(compose, request(CANARY, required=required))
    assert {k.split("/")[0] for k in composed.desired} == {"public", "internal"}

    required["gateways"] = [gateway("public"), gateway("internal", "core", client_ca=None)]
    out = run(compose, request(CANARY, required=required, observed=as_observed(composed)))
    assert set(out.desired) == set(composed.desired)
    assert condition(out)[:2] == ("False", "WaitingForGateways")
    assert [g["name"] for g in out.composite["status"]["gateways"]] == ["public"]

    # A gateway that stops selecting the service does lose its route.
    required["gateways"] = [gateway("public"), gateway("internal", "core", selector={"x": "y"})]
    dropped = run(compose, request(CANARY, required=required, observed=as_observed(composed)))
    assert {k.split("/")[0] for k in dropped.desired} == {"public"}
    assert condition(dropped)[:2] == ("True", "RoutesAccepted")


# --- invariants ------------------------------------------------------------------------


def _pending_fleet() -> Required:
    required = canary_fleet()
    required["gateways"] = [gateway(client_ca=None)]
    return required


SECRET_PASSES: list[tuple[str, Required, bool]] = [
    # name, required resources, whether the credential's Object is (still) composed
    ("composed afresh", canary_fleet(), True),
    ("kept while an input is unresolved", fleet([third_party("openai")]), True),
    ("kept by a pending gateway", _pending_fleet(), True),
    (
        "key missing",
        canary_fleet(**{"credential-openai": [secret("openai", NS, {"x": "y"})]}),
        False,
    ),
]


@pytest.mark.parametrize(
    ("required", "api_key_object"),
    [c[1:] for c in SECRET_PASSES],
    ids=[c[0] for c in SECRET_PASSES],
)
def test_no_secret_value_anywhere_in_the_response(required: Required, api_key_object: bool) -> None:
    composed = run(compose, request(CANARY, required=canary_fleet()))
    observed = as_observed(composed)
    needles = (API_KEY_VALUE, base64.b64encode(API_KEY_VALUE.encode()).decode())
    assert any(n in str(observed) for n in needles), "the observed state does carry the value"
    out = run(compose, request(CANARY, required=required, observed=observed))
    assert out.fatal == []
    assert any(key.endswith("/api-key") for key in out.desired) == api_key_object
    wire = out.rsp.SerializeToString()
    for needle in needles:
        assert needle.encode() not in wire
        assert needle not in str(out.rsp)


def test_same_inputs_same_output_whatever_the_order() -> None:
    def shuffled(seed: int) -> Required:
        required = canary_fleet()
        required["gateways"] = [
            gateway("b-gw", "edge"),
            gateway("a-gw", "edge"),
            gateway("c-gw", "edge"),
        ]
        rng = random.Random(seed)
        for items in required.values():
            rng.shuffle(items)
        return required

    outs = [run(compose, request(CANARY, required=shuffled(seed))) for seed in range(4)]
    for out in outs[1:]:
        assert out.desired == outs[0].desired
        assert out.composite == outs[0].composite
        assert out.conditions == outs[0].conditions
        assert out.results == outs[0].results


# --- bad input -------------------------------------------------------------------------

MALFORMED: list[tuple[str, dict[str, Any], Required | None, str]] = [
    ("spec missing", {**service(), "spec": None}, None, "spec"),
    ("no entries", service(), None, "spec.endpoints"),
    ("weight 0", service(entry(0, app="x")), None, "spec.endpoints[0].weight"),
    ("priority 64", service(entry(1, 64, app="x")), None, "spec.endpoints[0].priority"),
    ("33 entries", service(*[entry(app=str(i)) for i in range(33)]), None, "spec.endpoints"),
    ("selector wrong type", service({"selector": "app=x"}), None, "spec.endpoints[0].selector"),
    (
        "namespace missing",
        {**service(entry(app="x")), "metadata": {"name": "chat"}},
        None,
        "metadata.namespace",
    ),
    (
        "gateway without clusterName",
        service(entry(app="x")),
        fleet([], gateways=[{"metadata": {"name": "broken"}, "spec": {}}]),
        "InferenceGateway broken",
    ),
    (
        "endpoint without origin",
        service(entry(app="x")),
        fleet([{"metadata": {"name": "broken", "namespace": NS}, "spec": {}}]),
        "ModelEndpoint broken",
    ),
    (
        "endpoint with unicode, huge model name",
        service(entry(app="x")),
        fleet([endpoint("ü", "https://api.example.com", model="m" * 100_000)]),
        "spec.model",
    ),
]


@pytest.mark.parametrize(
    ("xr", "required", "field"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_bad_input_is_a_fatal_result_naming_the_field(
    xr: dict[str, Any], required: Required | None, field: str
) -> None:
    out = run(compose, request(xr, required=required))
    assert len(out.fatal) == 1
    assert field in out.fatal[0]
    assert out.desired == {}
