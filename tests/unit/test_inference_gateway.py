"""compose-inference-gateway: what lands on the gateway's cluster, and when."""

import json
from typing import Any

import pytest

from fleetgate.core import answers, names, pacing, readiness
from fleetgate.inference_gateway import builders
from fleetgate.inference_gateway.composer import compose
from tests.support import request, run
from tests.support.inference_gateway import (
    ALICE_KEY,
    BOB_KEY,
    CALLER_LABELS,
    FULL_SPEC,
    GATEWAY,
    HOME,
    NS,
    PROGRAMMED,
    TLS_KEY,
    Fleet,
    Obj,
    accepted,
    callers,
    cluster_xr,
    echo,
    fleet,
    gateway_xr,
    kinds,
    manifest,
    tls_secret,
)

GW = names.fleet_gateway(GATEWAY)
PKI = {
    "client-selfsigned-issuer": "Issuer",
    "client-ca-certificate": "Certificate",
    "client-ca-issuer": "Issuer",
    "client-ca-bundle": "Bundle",
    "client-certificate": "Certificate",
}
# Observed once the Bundle is Ready: trust-manager has written it by then.
PUBLISHED = {"client-ca-configmap": "ConfigMap"}
FRONT_DOOR = {
    "envoy-proxy": "EnvoyProxy",
    "gateway": "Gateway",
    "failover-policy": "BackendTrafficPolicy",
    "listener-policy": "ClientTrafficPolicy",
    "healthz-filter": "HTTPRouteFilter",
    "healthz-route": "HTTPRoute",
    "address-hidden": "EnvoyPatchPolicy",
}
AUTH = {"caller-auth": "SecurityPolicy", "healthz-auth": "SecurityPolicy"}


def keys_of(kind_map: dict[str, str]) -> dict[str, str]:
    return dict(sorted(kind_map.items()))


# --- what is composed -------------------------------------------------------


def test_minimal_gateway_composes_pki_and_front_door_only() -> None:
    out = fleet().run()
    assert out.fatal == []
    assert kinds(out) == keys_of(PKI | FRONT_DOOR)
    assert kinds(fleet().settled()) == keys_of(PKI | PUBLISHED | FRONT_DOOR)


def test_the_client_ca_configmap_is_observed_only_once_trust_manager_wrote_it() -> None:
    """Observing what does not exist yet backs provider-kubernetes off for up to a minute."""
    minimal = fleet()
    first = minimal.run()
    syncing = minimal.run(echo(first, not_ready=("client-ca-bundle",)))
    assert "client-ca-configmap" not in syncing.desired
    synced = minimal.run(echo(first))
    assert "client-ca-configmap" in synced.desired
    # Once observed it stays, whatever the Bundle does next.
    resyncing = minimal.run(echo(synced, not_ready=("client-ca-bundle",)))
    assert "client-ca-configmap" in resyncing.desired


def test_full_gateway_adds_auth_tls_and_secret_copies() -> None:
    out = fleet(full=True).settled()
    got = kinds(out)
    assert got == keys_of(
        PKI
        | PUBLISHED
        | FRONT_DOOR
        | AUTH
        | {"caller-keys": "Secret", "tls-ai-example-tls": "Secret"}
        | {"caller-keys-holder": "Secret", "tls-ai-example-tls-holder": "Secret"}
    )


def test_every_object_lands_on_the_gateway_cluster_in_the_system_namespace() -> None:
    out = fleet(full=True).run()
    for key, obj in out.desired.items():
        assert obj["apiVersion"] == "kubernetes.m.crossplane.io/v1alpha1", key
        assert obj["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": "hub-kubernetes",
        }, key
        assert obj["metadata"]["namespace"] == NS, key
        remote = manifest(obj)
        if remote["kind"] == "Bundle":
            assert "namespace" not in remote["metadata"], "Bundles are cluster-scoped"
        else:
            assert remote["metadata"]["namespace"] == NS, key


def test_two_gateways_on_one_cluster_share_no_remote_name() -> None:
    public = fleet(full=True).run()
    internal = fleet(full=True).with_(gateway=gateway_xr("internal", **{"clusterName": HOME}))
    other = internal.with_(callers=None, tls={}).run()

    def remote_names(desired: dict[str, Obj]) -> set[tuple[str, str]]:
        return {(manifest(o)["kind"], manifest(o)["metadata"]["name"]) for o in desired.values()}

    # Name resolution is composed by one of them only (see the ownership table).
    shared = remote_names(public.desired) & remote_names(other.desired)
    assert shared == set()


# --- the front door, exactly ----------------------------------------------------


def test_failover_policy_defaults() -> None:
    policy = manifest(fleet().run().desired["failover-policy"])
    assert policy["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GW}],
        "retry": {
            "numAttemptsPerPriority": 1,
            "numRetries": 3,
            "retryOn": {
                "triggers": [
                    "connect-failure",
                    "refused-stream",
                    "reset",
                    "retriable-status-codes",
                ],
                "httpStatusCodes": [503],
            },
        },
        "healthCheck": {
            "passive": {
                "consecutive5XxErrors": 5,
                "baseEjectionTime": "30s",
                "maxEjectionPercent": 100,
            },
            "panicThreshold": 0,
        },
        "connection": {"bufferLimit": "50Mi"},
        "responseOverride": answers.responses(GATEWAY),
    }


@pytest.mark.parametrize(
    ("limits", "buffer"),
    [
        pytest.param({}, "50Mi", id="default"),
        pytest.param({"bufferLimit": "200Mi"}, "200Mi", id="spec.limits.bufferLimit"),
        pytest.param({"bufferLimit": "511Mi"}, "511Mi", id="spec.limits.bufferLimit-ceiling"),
    ],
)
def test_every_listener_buffers_long_prompts_and_drops_a_forged_caller(
    limits: Obj, buffer: str
) -> None:
    """Envoy Gateway's 32 KiB default answered bodies over 32 KiB with 413; nothing removed an
    incoming x-fleetgate-caller, so a gateway without auth passed a forged identity on."""
    out = fleet(limits=limits).run()
    policy = manifest(out.desired["listener-policy"])
    assert policy["kind"] == "ClientTrafficPolicy"
    assert policy["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GW}],
        "connection": {"bufferLimit": buffer},
        "headers": {
            "earlyRequestHeaders": {
                "remove": ["x-fleetgate-caller"],
                # The failover metrics' fleetgate_gateway label, never the caller's word.
                "set": [{"name": "x-fleetgate-gateway", "value": GATEWAY}],
            }
        },
    }
    failover = manifest(out.desired["failover-policy"])
    assert failover["spec"]["connection"] == {"bufferLimit": buffer}


def test_reachable_clusters_are_those_whose_ca_copy_and_client_certificate_exist() -> None:
    """A Backend to a cluster resolves only once both are on the gateway's cluster; until then
    a ModelService must not route there (Envoy Gateway would answer a share with 500)."""
    clusters = [
        cluster_xr(),
        cluster_xr("eu-1", address="203.0.113.5"),
        cluster_xr("us-1", address="203.0.113.6"),
    ]
    gw = fleet(clusters=clusters)
    first = gw.run()
    assert first.composite["status"]["reachableClusters"] == [], "nothing exists yet"
    eu_copy = next(k for k in first.desired if k.startswith("cluster-ca-eu-1"))
    us_copy = next(k for k in first.desired if k.startswith("cluster-ca-us-1"))
    both = gw.run(observed=echo(first, not_ready=(us_copy,)))
    assert both.composite["status"]["reachableClusters"] == ["eu-1"]
    no_client = gw.run(observed=echo(first, not_ready=("client-certificate",)))
    assert no_client.composite["status"]["reachableClusters"] == []
    assert gw.run(observed=echo(first)).composite["status"]["reachableClusters"] == [
        "eu-1",
        "us-1",
    ]
    assert eu_copy != us_copy


# 512Mi and over: Envoy AI Gateway's external processor takes no message larger (issue 31)
@pytest.mark.parametrize("buffer", ["0Mi", "512Mi", "1024Mi", "32Ki", "1Gi", "50", "01Mi"])
def test_a_buffer_limit_out_of_bounds_is_refused(buffer: str) -> None:
    out = fleet(limits={"bufferLimit": buffer}).run()
    assert any("limits.bufferLimit" in m for m in out.fatal), out.fatal


FAILOVER_CASES: list[tuple[str, Obj, int, list[int] | None, Obj]] = [
    # name, spec.failover, numRetries, httpStatusCodes (None: no status trigger), passive
    (
        "custom codes sorted and deduplicated",
        {"retries": 2, "retryOn": {"httpStatusCodes": [503, 429, 502, 429]}},
        2,
        [429, 502, 503],
        {"consecutive5XxErrors": 5, "baseEjectionTime": "30s", "maxEjectionPercent": 100},
    ),
    (
        "no status codes: no status trigger",
        {"retries": 0, "retryOn": {"httpStatusCodes": []}},
        0,
        None,
        {"consecutive5XxErrors": 5, "baseEjectionTime": "30s", "maxEjectionPercent": 100},
    ),
    (
        "outlier detection",
        {"outlierDetection": {"consecutive5xxErrors": 2, "baseEjectionTime": "2m"}},
        3,
        [503],
        {"consecutive5XxErrors": 2, "baseEjectionTime": "2m", "maxEjectionPercent": 100},
    ),
]


@pytest.mark.parametrize(
    ("failover", "retries", "codes", "passive"),
    [c[1:] for c in FAILOVER_CASES],
    ids=[c[0] for c in FAILOVER_CASES],
)
def test_failover_policy_follows_spec(
    failover: Obj, retries: int, codes: list[int] | None, passive: Obj
) -> None:
    spec = manifest(fleet(failover=failover).run().desired["failover-policy"])["spec"]
    retry = spec["retry"]
    assert retry["numAttemptsPerPriority"] == 1
    assert retry["numRetries"] == retries
    assert retry["retryOn"].get("httpStatusCodes") == codes
    # Status codes are inert without the trigger, and the trigger is pointless without codes.
    assert ("retriable-status-codes" in retry["retryOn"]["triggers"]) == bool(codes)
    assert {"connect-failure", "refused-stream", "reset"} <= set(retry["retryOn"]["triggers"])
    assert spec["healthCheck"] == {"passive": passive, "panicThreshold": 0}


LISTENER_CASES: list[tuple[str, Obj, list[Obj]]] = [
    (
        "no hostname, no TLS: http only, no hostname",
        {},
        [
            {
                "name": "http",
                "protocol": "HTTP",
                "port": 80,
                "allowedRoutes": {"namespaces": {"from": "Same"}},
            }
        ],
    ),
    (
        "hostname without TLS: still http only, still no hostname",
        {"hostname": "ai.example.com"},
        [
            {
                "name": "http",
                "protocol": "HTTP",
                "port": 80,
                "allowedRoutes": {"namespaces": {"from": "Same"}},
            }
        ],
    ),
]


@pytest.mark.parametrize(
    ("spec", "listeners"), [c[1:] for c in LISTENER_CASES], ids=[c[0] for c in LISTENER_CASES]
)
def test_gateway_listeners(spec: Obj, listeners: list[Obj]) -> None:
    gateway = manifest(fleet(**spec).run().desired["gateway"])
    assert gateway["spec"]["listeners"] == listeners


def test_tls_gateway_serves_https_for_its_hostname_from_the_projected_copy() -> None:
    out = fleet(full=True).settled()
    gateway = manifest(out.desired["gateway"])["spec"]
    copy = manifest(out.desired["tls-ai-example-tls"])
    http, https = gateway["listeners"]
    assert "hostname" not in http, "a hostname on http would 404 health checks by address"
    assert https == {
        "name": "https",
        "protocol": "HTTPS",
        "port": 443,
        "hostname": "ai.example.com",
        "tls": {
            "mode": "Terminate",
            "certificateRefs": [{"group": "", "kind": "Secret", "name": copy["metadata"]["name"]}],
        },
        "allowedRoutes": {"namespaces": {"from": "Same"}},
    }
    assert copy["type"] == "kubernetes.io/tls"
    assert gateway["gatewayClassName"] == "envoy"
    assert gateway["infrastructure"] == {
        "parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": GW}
    }


@pytest.mark.parametrize(("full", "listeners"), [(False, ["http"]), (True, ["http", "https"])])
def test_no_backend_learns_the_callers_address(full: bool, listeners: list[str]) -> None:
    """Envoy stamps x-envoy-external-address on every external request; each listener's
    route configuration removes it before any backend (a third party above all) sees it."""
    out = fleet(full=full).settled()
    patch = manifest(out.desired["address-hidden"])
    assert patch["spec"]["targetRef"] == {
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
        "name": GW,
    }
    assert patch["spec"]["type"] == "JSONPatch"
    assert patch["spec"]["jsonPatches"] == [
        {
            "type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
            "name": f"fleetgate-system/{GW}/{listener}",
            "operation": {
                "op": "add",
                "path": "/request_headers_to_remove",
                "value": ["x-envoy-external-address"],
            },
        }
        for listener in listeners
    ]
    assert out.conditions["CallerAddressHidden"][:2] == ("True", "Programmed")


def test_a_refused_address_patch_is_said_and_warned_but_the_gateway_serves() -> None:
    """An Envoy Gateway without patch policies leaks the caller's address: say so."""
    settled = fleet(full=True).settled()
    observed = echo(settled)
    remote = observed["address-hidden"]["status"]["atProvider"]["manifest"]
    remote["status"]["ancestors"][0]["conditions"] = [
        {
            "type": "Accepted",
            "status": "False",
            "reason": "Disabled",
            "message": "EnvoyPatchPolicy is disabled in the EnvoyGateway configuration",
        }
    ]
    out = fleet(full=True).run(observed)
    status, reason, message = out.conditions["CallerAddressHidden"]
    assert (status, reason) == ("False", "Disabled")
    assert "x-envoy-external-address" in message
    assert "disabled in the EnvoyGateway configuration" in message
    assert any("caller's address" in w for w in out.warnings)
    assert out.conditions["GatewayReady"][0] == "True"


SPEND_LIMITS = {"limits": [{"requests": 60, "per": "Minute"}, {"tokens": 1000, "per": "Day"}]}


def spending(**auth: Any) -> Fleet:
    """The full gateway whose callers have a request and a token limit."""
    return fleet(full=True, auth={**FULL_SPEC["auth"], **SPEND_LIMITS, **auth})


def routed(observed: dict[str, Any], attached: int) -> dict[str, Any]:
    """``observed`` with Envoy Gateway counting ``attached`` routes on the https listener."""
    gateway = observed["gateway"]["status"]["atProvider"]["manifest"]
    gateway["status"]["listeners"] = [
        {"name": "http", "attachedRoutes": 1},
        {"name": "https", "attachedRoutes": attached},
    ]
    return observed


def test_every_answer_counts_against_the_callers_token_limit_a_third_partys_too() -> None:
    """The entry counting an answer reads the caller AI Gateway recorded, not the header a
    third party's header mutation removes (governance.answer_reads)."""
    out = spending().settled()
    patch = manifest(out.desired["answers-counted"])
    assert (patch["kind"], patch["spec"]["targetRef"]["name"]) == ("EnvoyPatchPolicy", GW)
    (only,) = patch["spec"]["jsonPatches"]
    assert only["name"] == f"fleetgate-system/{GW}/https", "where models are served"
    filter_name = f"envoy.filters.http.ratelimit/fleetgate-system/{GW}-failover"
    assert f".typed_per_filter_config['{filter_name}']" in only["operation"]["jsonPath"]
    # Rule 0 limits requests, counted as they come; rule 1's answers are counted.
    assert "'rule-1-match-0'" in only["operation"]["jsonPath"]
    assert only["operation"]["value"]["metadata"]["descriptor_key"] == "rule-1-match-0"
    assert out.conditions["AnswersCounted"][:2] == ("True", "Programmed")


@pytest.mark.parametrize("key", ["address-hidden", "answers-counted"])
def test_each_patch_whose_status_a_condition_reads_is_watched(key: str) -> None:
    """Ready once made, so polled otherwise: its status would reach the condition up to
    provider-kubernetes' poll interval late."""
    assert spending().settled().desired[key]["spec"]["watch"] is True


def test_before_any_model_is_routed_a_patch_with_nothing_to_change_is_not_a_problem() -> None:
    """Envoy Gateway reports a JSONPath that finds nothing as Invalid: so it does until the
    first model route carries the limits."""
    observed = echo(spending().settled())
    remote = observed["answers-counted"]["status"]["atProvider"]["manifest"]
    remote["status"]["ancestors"][0]["conditions"][1] = {
        "type": "Programmed",
        "status": "False",
        "reason": "Invalid",
        "message": "no jsonPointers were found while evaluating the jsonPath",
    }
    waiting = spending().run(routed(observed, attached=1))
    assert waiting.conditions["AnswersCounted"][:2] == ("True", "NoModelRouted")
    refused = spending().run(routed(observed, attached=2))
    status, reason, message = refused.conditions["AnswersCounted"]
    assert (status, reason) == ("False", "Invalid")
    assert "no jsonPointers were found" in message
    assert message in refused.warnings


def test_a_disabled_answer_patch_is_said_before_any_model_is_routed() -> None:
    observed = echo(spending().settled())
    remote = observed["answers-counted"]["status"]["atProvider"]["manifest"]
    remote["status"]["ancestors"][0]["conditions"] = [
        {"type": "Accepted", "status": "False", "reason": "Disabled", "message": "disabled"}
    ]
    out = spending().run(routed(observed, attached=1))
    assert out.conditions["AnswersCounted"][:2] == ("False", "Disabled")


def test_a_gateway_limiting_requests_only_has_no_answers_to_count() -> None:
    out = spending(limits=SPEND_LIMITS["limits"][:1]).settled()
    assert "answers-counted" not in out.desired
    assert out.conditions["AnswersCounted"][:2] == ("True", "NoSpendLimits")


def test_gateway_class_is_the_clusters() -> None:
    home = cluster_xr()
    home["spec"]["gateway"] = {"className": "envoy-internet"}
    out = fleet().with_(cluster=[home]).run()
    assert manifest(out.desired["gateway"])["spec"]["gatewayClassName"] == "envoy-internet"


def test_envoy_proxy_sets_ndots_and_writes_the_usage_record() -> None:
    proxy = manifest(fleet().run().desired["envoy-proxy"])["spec"]
    patch = proxy["provider"]["kubernetes"]["envoyDeployment"]["patch"]
    assert patch == {
        "type": "StrategicMerge",
        "value": {
            "spec": {
                "template": {"spec": {"dnsConfig": {"options": [{"name": "ndots", "value": "1"}]}}}
            }
        },
    }
    (setting,) = proxy["telemetry"]["accessLog"]["settings"]
    assert setting["sinks"] == [{"type": "File", "file": {"path": "/dev/stdout"}}]
    assert setting["format"]["type"] == "JSON"
    record = setting["format"]["json"]
    md = "%DYNAMIC_METADATA(io.envoy.ai_gateway:{})%".format
    assert record["caller"] == md("caller"), "the caller header is stripped before providers"
    assert record["input_tokens"] == md("llm_input_token")
    assert record["output_tokens"] == md("llm_output_token")
    assert record["total_tokens"] == md("llm_total_token")
    # backend_name is emitted as the request headers go upstream, on every request; the
    # ai_service_backend_name of before only with the token costs, so failed requests
    # (the ones failover rates are made of) had no endpoint.
    assert record["endpoint"] == md("backend_name")
    assert record["served_model"] == md("model_name_override")
    assert record["model"] == "%REQ(X-AI-EG-MODEL)%"
    assert {"status", "duration_ms", "start_time"} <= set(record)
    assert not any("x-fleetgate-caller" in v.lower() for v in record.values())


def test_caller_auth_accepts_bearer_and_x_api_key_and_names_the_caller() -> None:
    out = fleet(full=True).settled()
    secret_key = "caller-keys"
    keys = manifest(out.desired[secret_key])
    policy = manifest(out.desired["caller-auth"])
    assert policy["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GW}],
        "apiKeyAuth": {
            "credentialRefs": [{"group": "", "kind": "Secret", "name": keys["metadata"]["name"]}],
            "extractFrom": [{"headers": ["Authorization", "x-api-key"]}],
            "forwardClientIDHeader": "x-fleetgate-caller",
            "sanitize": True,
        },
    }


def test_healthz_answers_without_authentication() -> None:
    out = fleet(full=True).settled()
    route = manifest(out.desired["healthz-route"])
    filter_ = manifest(out.desired["healthz-filter"])
    allow = manifest(out.desired["healthz-auth"])
    assert route["spec"]["rules"] == [
        {
            "matches": [{"path": {"type": "Exact", "value": "/healthz"}}],
            "filters": [
                {
                    "type": "ExtensionRef",
                    "extensionRef": {
                        "group": "gateway.envoyproxy.io",
                        "kind": "HTTPRouteFilter",
                        "name": filter_["metadata"]["name"],
                    },
                }
            ],
        }
    ]
    assert filter_["spec"]["directResponse"]["statusCode"] == 200
    assert allow["spec"] == {
        "targetRefs": [
            {
                "group": "gateway.networking.k8s.io",
                "kind": "HTTPRoute",
                "name": route["metadata"]["name"],
            }
        ],
        "authorization": {"defaultAction": "Allow"},
    }


READINESS: list[tuple[str, str, Obj]] = [
    # desired key, why, readiness policy of its Object
    (
        "gateway",
        "programmed, not merely addressed",
        readiness.query(readiness.condition_query("Programmed")),
    ),
    (
        "client-ca-certificate",
        "cert-manager reports Ready, for the Certificate's generation",
        readiness.query(readiness.condition_query("Ready")),
    ),
    ("envoy-proxy", "reports no status", {"policy": "SuccessfulCreate"}),
    ("healthz-filter", "reports no status", {"policy": "SuccessfulCreate"}),
    (
        "tls-ai-example-tls",
        "a projected Secret once it holds its keys, each with a value, and no other",
        {
            "policy": "DeriveFromCelQuery",
            "celQuery": "has(object.data) && size(object.data) == 2 && ['tls.crt', 'tls.key']"
            ".all(k, k in object.data && object.data[k] != '')",
        },
    ),
    ("client-ca-configmap", "observed only", {"policy": "SuccessfulCreate"}),
]


@pytest.mark.parametrize(
    ("key", "policy"),
    [(c[0], c[2]) for c in READINESS],
    ids=[f"{c[0]}: {c[1]}" for c in READINESS],
)
def test_objects_are_ready_the_way_their_kind_reports_it(key: str, policy: Obj) -> None:
    assert fleet(full=True).settled().desired[key]["spec"]["readiness"] == policy


def test_policies_are_ready_once_an_ancestor_accepts_them() -> None:
    out = fleet(full=True).settled()
    for key in ("caller-auth", "healthz-auth", "failover-policy"):
        query = out.desired[key]["spec"]["readiness"]["celQuery"]
        assert "object.status.ancestors" in query, key
        assert "'Accepted'" in query, key


# --- secrets ----------------------------------------------------------------


def test_secrets_reach_the_cluster_only_by_reference() -> None:
    teams = fleet(full=True).with_(
        callers=[callers("team-a"), callers("team-b", {"carol.ops": "sk-carol-000"})]
    )
    first = teams.run()
    out = teams.run(echo(first))
    secret_key = "caller-keys"
    obj = out.desired[secret_key]
    assert manifest(obj)["data"] == {"alice": "", "bob": "", "carol.ops": ""}, "keys, no values"
    assert "stringData" not in manifest(obj)
    assert "references" not in first.desired[secret_key]["spec"], "none until it exists"
    assert obj["spec"]["references"] == [
        {
            "patchesFrom": {
                "apiVersion": "v1",
                "kind": "Secret",
                "name": source,
                "namespace": NS,
                "fieldPath": f"data[{key}]",
            },
            "toFieldPath": f"data[{key}]",
        }
        for key, source in [("alice", "team-a"), ("bob", "team-a"), ("carol.ops", "team-b")]
    ]
    tls = out.desired["tls-ai-example-tls"]["spec"]["references"]
    assert [r["patchesFrom"]["fieldPath"] for r in tls] == ["data[tls.crt]", "data[tls.key]"]
    for response in (first.rsp.SerializeToString(), out.rsp.SerializeToString()):
        for value in (ALICE_KEY, BOB_KEY, "sk-carol-000", TLS_KEY):
            assert value.encode() not in response


def test_no_composed_object_observes_a_secret() -> None:
    out = fleet(full=True).settled()
    observe_only = [
        o for o in out.desired.values() if o["spec"].get("managementPolicies") == ["Observe"]
    ]
    assert [manifest(o)["kind"] for o in observe_only] == ["ConfigMap"]


def test_a_caller_identity_in_two_secrets_authenticates_with_neither_key() -> None:
    """Allow-lists and budgets are bound to the name: which key is alice's is not guessed."""
    teams = fleet(full=True).with_(
        callers=[callers("team-b", {"alice": "sk-other"}), callers("team-a")]
    )
    out = teams.settled()
    sources = {
        r["patchesFrom"]["fieldPath"]: r["patchesFrom"]["name"]
        for r in out.desired["caller-keys"]["spec"]["references"]
    }
    assert sources == {"data[bob]": "team-a"}
    assert set(manifest(out.desired["caller-keys"])["data"]) == {"bob"}
    status, reason, message = out.conditions["CallerKeysUnique"]
    assert (status, reason) == ("False", "DuplicateCaller")
    assert f"alice in Secret {NS}/team-a and Secret {NS}/team-b" in message, message
    assert any(message in w for w in out.warnings)
    assert "sk-other" not in message
    assert ALICE_KEY not in message


def test_unique_caller_identities_say_so() -> None:
    out = fleet(full=True).settled()
    assert out.conditions["CallerKeysUnique"][:2] == ("True", "Unique")
    assert "CallerKeysUnique" not in fleet().settled().conditions, "no auth, no callers"


def test_when_every_identity_is_claimed_twice_no_caller_is_left() -> None:
    twice = fleet(full=True).with_(callers=[callers("team-a"), callers("team-b")])
    out = twice.run()
    status, reason, message = out.conditions["GatewayReady"]
    assert (status, reason) == ("False", "NoCallerKeys")
    assert "alice, bob" in message, message
    assert out.conditions["CallerKeysUnique"][:2] == ("False", "DuplicateCaller")


# --- gates ------------------------------------------------------------------

GATE_CASES: list[tuple[str, dict[str, Any], str, set[str]]] = [
    # name, changes to a full fleet, GatewayReady reason, what is composed
    ("cluster not looked up yet", {"cluster": None}, "WaitingForCluster", set()),
    ("cluster missing", {"cluster": []}, "ClusterNotFound", set()),
    (
        "cluster without provider config",
        {"cluster": [cluster_xr(provider_config=None)]},
        "ClusterNotRegistered",
        set(),
    ),
    ("caller keys not looked up yet", {"callers": None}, "WaitingForCallerKeys", set(PKI)),
    ("selector matches no Secret", {"callers": []}, "NoCallerKeys", set(PKI)),
    ("selected Secrets hold no key", {"callers": [callers(keys={})]}, "NoCallerKeys", set(PKI)),
    (
        "TLS Secret not looked up yet",
        {"tls": {"ai-example-tls": None}},
        "WaitingForTLSSecret",
        set(PKI),
    ),
    ("TLS Secret missing", {"tls": {"ai-example-tls": []}}, "TLSSecretMissing", set(PKI)),
    (
        "TLS Secret without a key",
        {"tls": {"ai-example-tls": [tls_secret(keys=("tls.crt",))]}},
        "TLSSecretInvalid",
        set(PKI),
    ),
]


@pytest.mark.parametrize(
    ("changes", "reason", "composed"), [c[1:] for c in GATE_CASES], ids=[c[0] for c in GATE_CASES]
)
def test_gate_says_why_and_composes_nothing_half_open(
    changes: dict[str, Any], reason: str, composed: set[str]
) -> None:
    out = fleet(full=True).with_(**changes).run()
    status, got_reason, message = out.conditions["GatewayReady"]
    assert (status, got_reason) == ("False", reason)
    assert message
    assert set(out.desired) == composed
    assert out.composite_ready == "READY_FALSE"
    assert any(message in w for w in out.warnings), "a gate names what is left out"
    assert out.fatal == []


@pytest.mark.parametrize(
    ("changes", "reason"), [(c[1], c[2]) for c in GATE_CASES], ids=[c[0] for c in GATE_CASES]
)
def test_gate_keeps_everything_composed_before(changes: dict[str, Any], reason: str) -> None:
    served = fleet(full=True)
    before = echo(served.settled())
    out = served.with_(**changes).run(before)
    assert out.conditions["GatewayReady"][1] == reason
    assert set(out.desired) == set(before), "a closed gate deletes nothing"
    for key, obj in out.desired.items():
        assert "status" not in obj, key


def test_a_kept_secret_copy_loses_what_the_provider_wrote_back() -> None:
    served = fleet(full=True)
    before = echo(served.settled())
    for obj in before.values():
        remote = obj["spec"]["forProvider"]["manifest"]
        if remote["kind"] == "Secret":
            # provider-kubernetes persists patched values (provider-kubernetes#223).
            remote["data"] = {"alice": ALICE_KEY, "tls.key": TLS_KEY}
            obj["metadata"]["annotations"] = {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(remote)
            }
    out = served.with_(callers=None).run(before)
    assert set(out.desired) == set(before)
    response = out.rsp.SerializeToString()
    assert ALICE_KEY.encode() not in response
    assert TLS_KEY.encode() not in response


# --- requirements -------------------------------------------------------------


def test_requirements_name_what_is_needed_where() -> None:
    out = fleet(full=True).run()
    reqs = out.requirements
    assert set(reqs) == {
        "cluster",
        "clusters",
        "gateways",
        "caller-secrets",
        "tls-secret-ai-example-tls",
    }
    assert (reqs["cluster"].kind, reqs["cluster"].match_name) == ("InferenceCluster", HOME)
    # "Every object of the kind" must be an explicitly present, empty label
    # selector: with no match at all Crossplane resolves nothing.
    assert reqs["clusters"].WhichOneof("match") == "match_labels"
    assert reqs["gateways"].WhichOneof("match") == "match_labels"
    assert (reqs["clusters"].kind, dict(reqs["clusters"].match_labels.labels)) == (
        "InferenceCluster",
        {},
    )
    assert (reqs["gateways"].kind, dict(reqs["gateways"].match_labels.labels)) == (
        "InferenceGateway",
        {},
    )
    callers_req = reqs["caller-secrets"]
    assert (callers_req.kind, callers_req.namespace) == ("Secret", NS)
    assert dict(callers_req.match_labels.labels) == CALLER_LABELS
    assert out.required_secret("tls-secret-ai-example-tls") == ("ai-example-tls", NS)


def test_requirements_are_declared_even_when_a_gate_is_closed() -> None:
    out = fleet(full=True).with_(cluster=None, callers=None).run()
    assert {"cluster", "clusters", "gateways", "caller-secrets"} <= set(out.requirements)


# --- names ------------------------------------------------------------------------


def test_common_names_fit_x509_for_a_63_character_gateway() -> None:
    long_name = "g" * 63
    f = fleet().with_(gateway=gateway_xr(long_name))
    out = f.run()
    for key in ("client-ca-certificate", "client-certificate"):
        cn = manifest(out.desired[key])["spec"]["commonName"]
        assert len(cn.encode()) <= names.COMMON_NAME_MAX, key
    # Still a DNS label: Envoy Gateway copies the Gateway's name into label values.
    assert len(manifest(out.desired["gateway"])["metadata"]["name"]) <= names.DNS_LABEL_MAX


def test_client_certificate_is_for_client_auth_in_the_agreed_secret() -> None:
    cert = manifest(fleet().run().desired["client-certificate"])["spec"]
    assert "client auth" in cert["usages"]
    assert cert["secretName"] == names.gateway_client_certificate(GATEWAY)


# --- status -----------------------------------------------------------------------

ENDPOINT_CASES: list[tuple[str, dict[str, Any], str | None, Obj]] = [
    (
        "TLS: https on the hostname",
        {"hostname": "ai.example.com", "tls": True},
        "198.51.100.7",
        {"openAI": "https://ai.example.com/v1", "anthropic": "https://ai.example.com/anthropic/v1"},
    ),
    (
        "hostname without TLS: http on the hostname",
        {"hostname": "ai.example.com", "tls": False},
        "198.51.100.7",
        {"openAI": "http://ai.example.com/v1", "anthropic": "http://ai.example.com/anthropic/v1"},
    ),
    (
        "no hostname: http on the address",
        {"hostname": None, "tls": False},
        "198.51.100.7",
        {"openAI": "http://198.51.100.7/v1", "anthropic": "http://198.51.100.7/anthropic/v1"},
    ),
    (
        "IPv6 address is bracketed",
        {"hostname": None, "tls": False},
        "2001:db8::7",
        {"openAI": "http://[2001:db8::7]/v1", "anthropic": "http://[2001:db8::7]/anthropic/v1"},
    ),
    ("nothing to call yet", {"hostname": None, "tls": False}, None, {}),
]


@pytest.mark.parametrize(
    ("spec", "address", "want"), [c[1:] for c in ENDPOINT_CASES], ids=[c[0] for c in ENDPOINT_CASES]
)
def test_endpoints(spec: dict[str, Any], address: str | None, want: Obj) -> None:
    assert builders.endpoints(hostname=spec["hostname"], tls=spec["tls"], address=address) == want


# --- malformed input ---------------------------------------------------------------

MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    (
        "clusterName missing",
        {
            "gateway": {
                "apiVersion": "fleetgate.dev/v1alpha1",
                "kind": "InferenceGateway",
                "metadata": {"name": "x"},
                "spec": {},
            }
        },
        "spec.clusterName",
    ),
    (
        "tls without hostname",
        {"gateway": gateway_xr(tls={"certificateRefs": [{"name": "a"}]})},
        "hostname",
    ),
    (
        "retries not a number",
        {"gateway": gateway_xr(failover={"retries": "many"})},
        "spec.failover.retries",
    ),
    (
        "absurd retries",
        {"gateway": gateway_xr(failover={"retries": 10_000})},
        "spec.failover.retries",
    ),
    (
        "status code out of range",
        {"gateway": gateway_xr(failover={"retryOn": {"httpStatusCodes": [700]}})},
        "spec.failover.retryOn.httpStatusCodes",
    ),
    (
        "duration not a duration",
        {"gateway": gateway_xr(failover={"outlierDetection": {"baseEjectionTime": "soon"}})},
        "spec.failover.outlierDetection.baseEjectionTime",
    ),
    (
        "empty caller selector",
        {"gateway": gateway_xr(auth={"secretSelector": {"matchLabels": {}}})},
        "spec.auth.secretSelector.matchLabels",
    ),
    (
        "duplicate TLS Secret",
        {
            "gateway": gateway_xr(
                hostname="a.example", tls={"certificateRefs": [{"name": "a"}, {"name": "a"}]}
            )
        },
        "spec.tls.certificateRefs",
    ),
    (
        "malformed cluster in the fleet",
        {
            "clusters": [
                {
                    "apiVersion": "fleetgate.dev/v1alpha1",
                    "kind": "InferenceCluster",
                    "metadata": {"name": "bad"},
                    "spec": {"credentials": "x"},
                }
            ]
        },
        "InferenceCluster bad",
    ),
    (
        "duplicate cluster names",
        {"clusters": [cluster_xr(), cluster_xr()]},
        "hub appears more than once",
    ),
    (
        "malformed gateway in the fleet",
        {
            "gateways": [
                {
                    "apiVersion": "fleetgate.dev/v1alpha1",
                    "kind": "InferenceGateway",
                    "metadata": {"name": "other"},
                    "spec": {"clusterName": 7},
                }
            ]
        },
        "InferenceGateway other",
    ),
    ("unicode cluster name", {"gateway": gateway_xr(clusterName="集群" * 200)}, "spec.clusterName"),
]


@pytest.mark.parametrize(
    ("changes", "field"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_input_is_a_fatal_result_naming_the_field(
    changes: dict[str, Any], field: str
) -> None:
    out = fleet().with_(**changes).run()
    assert len(out.fatal) == 1, out.results
    assert field in out.fatal[0]
    assert out.desired == {}


# --- determinism -------------------------------------------------------------------


def test_same_inputs_give_byte_identical_output_whatever_the_order() -> None:
    clusters = [
        cluster_xr(HOME, address="203.0.113.1"),
        cluster_xr("eu-west", address="2001:db8::1"),
        cluster_xr("us-east", address="lb-1.example.net"),
    ]
    base = fleet(full=True, clusters=clusters).with_(
        callers=[callers("team-a"), callers("team-b", {"carol": "sk-carol"})]
    )
    shuffled = base.with_(
        clusters=clusters[::-1], callers=base.callers[::-1] if base.callers else None
    )
    first = base.run().rsp.SerializeToString(deterministic=True)
    assert base.run().rsp.SerializeToString(deterministic=True) == first
    assert shuffled.run().rsp.SerializeToString(deterministic=True) == first


def test_runs_through_the_request_builder_without_optional_inputs() -> None:
    # The XR alone: nothing resolved yet, every requirement declared, nothing composed.
    out = run(compose, request(gateway_xr()))
    assert out.desired == {}
    assert out.conditions["GatewayReady"][:2] == ("False", "WaitingForCluster")
    assert set(out.requirements) == {"cluster", "clusters", "gateways"}


def test_every_object_whose_status_is_read_back_is_watched() -> None:
    """A Gateway's address, the CA ConfigMap, a policy's verdict reach the XR on change."""
    out = fleet(full=True).run()
    for key, obj in out.desired.items():
        spec = obj["spec"]
        observe_only = spec.get("managementPolicies") == ["Observe"]
        read_back = spec["readiness"] != readiness.SUCCESSFUL_CREATE or observe_only
        assert spec.get("watch", False) == read_back, key
    assert any(o["spec"].get("watch") for o in out.desired.values())


def test_a_cluster_still_publishing_itself_brings_the_next_call_closer() -> None:
    """Its hostname and CA are a required resource: seen only when the TTL runs out."""
    published = cluster_xr("eu-west", address="203.0.113.10")
    publishing = cluster_xr("us-east", hostname=False)
    serving = fleet(clusters=[published])
    ready = serving.run(
        echo(serving.settled(), remote={"gateway": PROGRAMMED, "caller-auth": accepted()})
    )
    assert ready.conditions["GatewayReady"][0] == "True"
    assert ready.rsp.meta.ttl.ToSeconds() == pacing.SETTLED.total_seconds()
    waiting = fleet(clusters=[published, publishing])
    out = waiting.run(
        echo(waiting.settled(), remote={"gateway": PROGRAMMED, "caller-auth": accepted()})
    )
    assert out.conditions["GatewayReady"][0] == "True"
    assert out.rsp.meta.ttl.ToSeconds() == pacing.WAITING_MIN.total_seconds()
