"""compose-inference-gateway over several passes: readiness, status, key rotation, names."""

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core import names
from tests.support.inference_gateway import (
    ADDRESSED,
    ALICE_KEY,
    BOB_KEY,
    FULL_SPEC,
    GATEWAY,
    HOME,
    NS,
    PROGRAMMED,
    UNREPORTED,
    Obj,
    accepted,
    ca_pem,
    callers,
    cluster_xr,
    echo,
    fleet,
    gateway_xr,
    manifest,
    published_ca,
    tls_secret,
)

CLIENT_CA = ca_pem("fleet gateway public client")


def test_walk_from_nothing_to_serving_with_the_client_ca_published() -> None:
    full = fleet(full=True)
    out = full.with_(cluster=None, clusters=None, gateways=None, callers=None, tls={}).run()
    assert out.conditions["GatewayReady"][:2] == ("False", "WaitingForCluster")
    assert out.desired == {}

    out = full.with_(cluster=[cluster_xr(provider_config=None)]).run()
    assert out.conditions["GatewayReady"][:2] == ("False", "ClusterNotRegistered")
    assert out.desired == {}

    # The projected Secrets are created empty and filled on the next apply
    # (core/secrets): nothing serves from them before they hold their values.
    out = full.run()
    status, reason, message = out.conditions["GatewayReady"]
    assert (status, reason) == ("False", "WaitingForSecrets")
    assert f"{NS}/fleetgate-gw-{GATEWAY}-callers" in message, message
    assert "InferenceCluster hub" in message, message
    assert {"gateway", "caller-auth", "envoy-proxy"}.isdisjoint(out.desired)
    assert {"caller-keys", "tls-ai-example-tls"} <= set(out.desired)
    out = full.run(echo(out, not_ready=("caller-keys",)))
    assert out.conditions["GatewayReady"][:2] == ("False", "WaitingForSecrets")
    assert "gateway" not in out.desired

    # The PKI is issued meanwhile: trust-manager has written the CA's
    # ConfigMap, observed from now on. The Gateway has an address, not
    # programmed yet.
    remote = {
        "client-ca-configmap": published_ca(CLIENT_CA),
        "gateway": ADDRESSED,
    }
    out = full.run(echo(out, remote=remote))
    assert out.conditions["GatewayReady"][:2] == ("False", "WaitingForGateway")
    assert {"gateway", "caller-auth", "envoy-proxy", "client-ca-configmap"} <= set(out.desired)
    assert all(
        r.ready == fnv1.READY_UNSPECIFIED
        for k, r in out.rsp.desired.resources.items()
        if not k.startswith(("caller-keys", "tls-ai-example-tls", "client-"))
    )
    out = full.run(echo(out, remote=remote, not_ready=("gateway", "caller-auth")))
    status = out.composite["status"]
    assert status["clientCACertificate"] == CLIENT_CA
    assert status["address"] == "198.51.100.7"
    assert out.conditions["GatewayReady"][:2] == ("False", "WaitingForGateway")
    ready = {k for k, r in out.rsp.desired.resources.items() if r.ready == fnv1.READY_TRUE}
    assert "client-ca-certificate" in ready
    assert "gateway" not in ready

    remote |= {"gateway": PROGRAMMED, "caller-auth": accepted()}
    out = full.run(echo(out, remote=remote))
    assert out.conditions["GatewayReady"][:2] == ("True", "GatewayProgrammed")
    assert out.xr_ready
    assert out.composite["status"]["endpoints"] == {
        "openAI": "https://ai.example.com/v1",
        "anthropic": "https://ai.example.com/anthropic/v1",
    }
    assert out.warnings == []
    assert all(r.ready == fnv1.READY_TRUE for r in out.rsp.desired.resources.values())


def test_a_served_gateway_keeps_serving_while_a_secret_copy_is_refilled() -> None:
    """Issue 31: a copy emptied on the cluster (deleted by hand, created again by the
    provider) holds back a changed front door, never takes the serving one away."""
    full = fleet(full=True)
    serving = full.run(echo(full.settled(), remote={"gateway": PROGRAMMED}))
    assert {"gateway", "caller-auth"} <= set(serving.desired)
    changed = full.with_(gateway=gateway_xr(**{**FULL_SPEC, "hostname": "new.example.com"}))
    out = changed.run(echo(serving, remote={"gateway": PROGRAMMED}, not_ready=("caller-keys",)))
    for key in ("gateway", "caller-auth", "envoy-proxy", "failover-policy", "healthz-route"):
        assert manifest(out.desired[key]) == manifest(serving.desired[key]), key
    assert "new.example.com" not in str(manifest(out.desired["gateway"]))
    # Filled again: the change goes out.
    out = changed.run(echo(out, remote={"gateway": PROGRAMMED}))
    assert manifest(out.desired["gateway"])["spec"]["listeners"][1]["hostname"] == "new.example.com"


READINESS_CASES: list[tuple[str, dict[str, Obj], str, str]] = [
    # name, what the cluster reports, GatewayReady status, reason
    (
        "address alone is not readiness",
        {"gateway": ADDRESSED},
        "False",
        "WaitingForGateway",
    ),
    (
        "programmed, policy not yet looked at",
        {"gateway": PROGRAMMED, "caller-auth": UNREPORTED},
        "False",
        "WaitingForCallerAuth",
    ),
    (
        "programmed, policy rejected",
        {"gateway": PROGRAMMED, "caller-auth": accepted("False", "Invalid")},
        "False",
        "CallerAuthRejected",
    ),
    (
        "programmed and accepted",
        {"gateway": PROGRAMMED, "caller-auth": accepted()},
        "True",
        "GatewayProgrammed",
    ),
]


@pytest.mark.parametrize(
    ("remote", "status", "reason"),
    [c[1:] for c in READINESS_CASES],
    ids=[c[0] for c in READINESS_CASES],
)
def test_gateway_ready_needs_a_programmed_gateway_and_an_accepted_policy(
    remote: dict[str, Obj], status: str, reason: str
) -> None:
    full = fleet(full=True)
    out = full.run(echo(full.settled(), remote=remote))
    assert out.conditions["GatewayReady"][:2] == (status, reason)
    if reason == "CallerAuthRejected":
        assert "Invalid" in out.conditions["GatewayReady"][2]
        assert any("rejected" in w for w in out.warnings)


# Envoy Gateway v1.8.3's condition when two caller keys share a value
# (internal/gatewayapi/securitypolicy.go:2068-2071, 1148, status/conditions.go:75-100).
DUPLICATED_KEY = accepted("False", "Invalid", "APIKeyAuth: duplicated API key.")


def test_a_duplicate_caller_key_says_which_secrets_and_keys_to_check() -> None:
    """Every model request then answers 500: GatewayReady names where to look, no value."""
    full = fleet(full=True).with_(callers=[callers(), callers("team-b", keys={"carol": ALICE_KEY})])
    remote = {"gateway": PROGRAMMED, "caller-auth": DUPLICATED_KEY}
    out = full.run(echo(full.settled(), remote=remote))
    status, reason, message = out.conditions["GatewayReady"]
    assert (status, reason) == ("False", "DuplicateCallerKey")
    assert f"{NS}/team-a (keys alice, bob)" in message, message
    assert f"{NS}/team-b (keys carol)" in message, message
    assert "500" in message
    assert not out.xr_ready
    assert any(w.startswith(message[:60]) for w in out.warnings), out.warnings
    said = [m for _, _, m in out.conditions.values()] + [m for _, m in out.results]
    assert not [m for m in said if ALICE_KEY in m or BOB_KEY in m]


def test_empty_keys_of_a_copy_being_refilled_are_not_blamed_on_the_user() -> None:
    """A copy lost and created again holds every key empty until filled: Envoy Gateway
    reads them as duplicates, but the user's keys are fine."""
    full = fleet(full=True)
    remote = {"gateway": PROGRAMMED, "caller-auth": DUPLICATED_KEY}
    out = full.run(echo(full.settled(), remote=remote, not_ready=("caller-keys",)))
    status, reason, message = out.conditions["GatewayReady"]
    assert (status, reason) == ("False", "WaitingForSecrets")
    assert "500" in message
    assert not out.xr_ready


def test_a_policy_refused_for_another_reason_keeps_the_general_hint() -> None:
    full = fleet(full=True)
    missing = accepted("False", "Invalid", "APIKeyAuth: secret fleetgate-system/x not found.")
    out = full.run(echo(full.settled(), remote={"gateway": PROGRAMMED, "caller-auth": missing}))
    assert out.conditions["GatewayReady"][:2] == ("False", "CallerAuthRejected")


def test_without_auth_a_programmed_gateway_is_ready() -> None:
    minimal = fleet()
    out = minimal.run(echo(minimal.run(), remote={"gateway": PROGRAMMED}))
    assert out.conditions["GatewayReady"][:2] == ("True", "GatewayProgrammed")
    assert out.composite["status"]["endpoints"]["openAI"] == "http://198.51.100.7/v1"


# --- caller keys change -------------------------------------------------------------


def credential_refs(desired: dict[str, Obj]) -> list[str]:
    refs = manifest(desired["caller-auth"])["spec"]["apiKeyAuth"]["credentialRefs"]
    return [r["name"] for r in refs]


def test_a_revoked_caller_leaves_the_one_secret_in_one_apply() -> None:
    """provider-kubernetes applies server-side: a key no longer applied leaves the Secret."""
    before = fleet(full=True)
    first = before.settled()
    secret = manifest(first.desired["caller-keys"])
    assert set(secret["data"]) == {"alice", "bob"}
    assert credential_refs(first.desired) == [secret["metadata"]["name"]]

    revoked = before.with_(callers=[callers(keys={"alice": "sk-alice"})])
    out = revoked.run(echo(first))
    after = out.desired["caller-keys"]
    assert manifest(after)["metadata"]["name"] == secret["metadata"]["name"]
    assert set(manifest(after)["data"]) == {"alice"}
    assert [r["patchesFrom"]["fieldPath"] for r in after["spec"]["references"]] == ["data[alice]"]
    assert credential_refs(out.desired) == [secret["metadata"]["name"]]
    # Its holder holds the same Secret; no other Object copies the keys.
    holder = manifest(out.desired["caller-keys-holder"])
    assert holder["metadata"]["name"] == secret["metadata"]["name"]
    copies = sorted(k for k in out.desired if k.startswith("caller-keys"))
    assert copies == ["caller-keys", "caller-keys-holder"]


def test_a_key_revoked_while_another_gate_is_closed_leaves_at_once() -> None:
    """The serving objects wait for the TLS Secret; the revoked key does not."""
    before = fleet(full=True)
    first = before.settled()
    held = before.with_(tls={"ai-example-tls": []}, callers=[callers(keys={"alice": "sk-a"})])
    out = held.run(echo(first))
    assert out.conditions["GatewayReady"][:2] == ("False", "TLSSecretMissing")
    after = out.desired["caller-keys"]
    assert set(manifest(after)["data"]) == {"alice"}
    assert [r["patchesFrom"]["fieldPath"] for r in after["spec"]["references"]] == ["data[alice]"]
    assert set(manifest(out.desired["caller-keys-holder"])["data"]) == {"alice"}
    for kept in ("caller-auth", "gateway", "tls-ai-example-tls"):
        assert manifest(out.desired[kept]) == manifest(first.desired[kept]), kept


@pytest.mark.parametrize(
    "left",
    [[], [callers(keys={})]],
    ids=["the last caller-key Secret deleted", "its last key removed"],
)
def test_no_caller_key_left_withdraws_every_key_from_the_cluster(left: list[Obj]) -> None:
    """Kept as it was, the copy would name a Secret provider-kubernetes cannot read, and
    the provider would stop updating it: every old key would go on authenticating."""
    before = fleet(full=True)
    first = before.settled()
    out = before.with_(callers=left).run(echo(first))
    status, reason, message = out.conditions["GatewayReady"]
    assert (status, reason) == ("False", "NoCallerKeys")
    assert "withdrawn" in message, message
    emptied = out.desired["caller-keys"]
    assert manifest(emptied)["data"] == {}
    assert "references" not in emptied["spec"]
    assert emptied["spec"]["managementPolicies"] == ["Observe", "Update"]
    assert emptied["spec"]["readiness"]["celQuery"] == (
        "has(object.metadata.name) && (!has(object.data) || size(object.data) == 0)"
    )
    assert manifest(out.desired["caller-keys-holder"])["data"] == {}
    # The policy stays, over the emptied copy: it denies every caller.
    assert credential_refs(out.desired) == credential_refs(first.desired)
    assert "gateway" in out.desired
    # Once the copy is empty it stays so, and nothing else changes.
    again = before.with_(callers=left).run(echo(out))
    assert manifest(again.desired["caller-keys"])["data"] == {}
    assert set(again.desired) == set(out.desired)


def test_a_new_gateway_without_keys_copies_none() -> None:
    out = fleet(full=True).with_(callers=[]).run()
    assert out.conditions["GatewayReady"][:2] == ("False", "NoCallerKeys")
    assert not [k for k in out.desired if k.startswith("caller-")]


def test_a_secret_copy_no_longer_composed_goes_filler_first() -> None:
    """Its holder outlives its filler by a call: deleted first, it would let the filler
    create the Secret again, with its values, and leave them with no owner (issue 52)."""
    before = fleet(full=True)
    first = before.settled()
    renewed = {"tls": {"certificateRefs": [{"name": "renewed-tls"}]}}
    moved = before.with_(
        gateway=gateway_xr(**{**FULL_SPEC, **renewed}),
        tls={"renewed-tls": [tls_secret("renewed-tls")]},
    )
    out = moved.run(echo(first))
    assert "tls-ai-example-tls" not in out.desired
    held = out.desired["tls-ai-example-tls-holder"]
    assert manifest(held) == manifest(first.desired["tls-ai-example-tls-holder"])
    # The filler is gone from the control plane: now the holder, and the Secret, go.
    later = moved.run(echo(out))
    assert not [k for k in later.desired if k.startswith("tls-ai-example-tls")]


# --- name resolution -----------------------------------------------------------------

HEADLESS = {
    "type": "ClusterIP",
    "clusterIP": "None",
    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 443}],
}
RESOLUTION_CASES: list[tuple[str, Obj, dict[str, str], Obj]] = [
    # name, cluster, expected key → kind, expected Service spec
    (
        "IPv4: headless Service and an IPv4 slice",
        cluster_xr("eu-west", address="203.0.113.10"),
        {"resolve-": "Service", "resolve-ipv4-": "EndpointSlice", "cluster-ca-": "ConfigMap"},
        HEADLESS,
    ),
    (
        "IPv6: headless Service and an IPv6 slice",
        cluster_xr("eu-west", address="2001:db8::10"),
        {"resolve-": "Service", "resolve-ipv6-": "EndpointSlice", "cluster-ca-": "ConfigMap"},
        HEADLESS,
    ),
    (
        "DNS name: ExternalName",
        cluster_xr("eu-west", address="a1b2.elb.example.net"),
        {"resolve-": "Service", "cluster-ca-": "ConfigMap"},
        {"type": "ExternalName", "externalName": "a1b2.elb.example.net"},
    ),
    (
        "address without hostname: nothing",
        cluster_xr("eu-west", address="203.0.113.10", hostname=False),
        {},
        {},
    ),
    ("nothing published: nothing", cluster_xr("eu-west"), {}, {}),
    (
        "hostname but no CA: name only",
        cluster_xr("eu-west", address="lb.example.net", ca=False),
        {"resolve-": "Service"},
        {"type": "ExternalName", "externalName": "lb.example.net"},
    ),
]


def resolution_keys(desired: dict[str, Obj]) -> dict[str, str]:
    label = names.cluster_label("eu-west")
    return {
        key.removesuffix(label): manifest(obj)["kind"]
        for key, obj in desired.items()
        if key.endswith(label)
    }


@pytest.mark.parametrize(
    ("cluster", "composed", "service"),
    [c[1:] for c in RESOLUTION_CASES],
    ids=[c[0] for c in RESOLUTION_CASES],
)
def test_cluster_names_resolve_on_the_gateway_cluster(
    cluster: Obj, composed: dict[str, str], service: Obj
) -> None:
    out = fleet(clusters=[cluster_xr(), cluster]).run()
    assert resolution_keys(out.desired) == composed
    label = names.cluster_label("eu-west")
    if not composed:
        return
    svc = manifest(out.desired[f"resolve-{label}"])
    assert svc["metadata"]["name"] == label, "named by the hostname's first label"
    assert svc["spec"] == service
    if slice_key := next(
        (f"resolve-{f}-{label}" for f in ("ipv4", "ipv6") if f"resolve-{f}-" in composed), None
    ):
        eps = manifest(out.desired[slice_key])
        address = cluster["status"]["gateway"]["address"]
        assert eps["addressType"] == ("IPv6" if ":" in address else "IPv4")
        assert eps["metadata"]["labels"]["kubernetes.io/service-name"] == label
        assert eps["endpoints"] == [{"addresses": [address], "conditions": {"ready": True}}]
    if "cluster-ca-" in composed:
        cm = manifest(out.desired[f"cluster-ca-{label}"])
        assert cm["metadata"]["name"] == names.gateway_cluster_ca(GATEWAY, "eu-west")
        assert cm["data"] == {"ca.crt": ca_pem("eu-west")}
    else:
        assert any("no CA certificate" in w for w in out.warnings)


UNREACHABLE_CASES: list[tuple[str, Obj, str]] = [
    # name, cluster eu-west as published, what the warning says
    (
        "hostname outside the system namespace",
        cluster_xr("eu-west", address="203.0.113.10", hostname="gw.eu-west.example.com"),
        "hostname is not <label>",
    ),
    (
        "address neither IP nor DNS name",
        cluster_xr("eu-west", address="not an address!"),
        "neither an IP nor a DNS name",
    ),
    (
        "hostname another cluster already has",
        cluster_xr("eu-west", address="203.0.113.10", hostname=names.cluster_hostname("a-first")),
        "InferenceCluster a-first's",
    ),
]


@pytest.mark.parametrize(
    ("odd", "why"), [c[1:] for c in UNREACHABLE_CASES], ids=[c[0] for c in UNREACHABLE_CASES]
)
def test_a_cluster_no_service_can_resolve_is_skipped_with_a_warning(odd: Obj, why: str) -> None:
    first = cluster_xr("a-first", address="203.0.113.99")
    out = fleet(clusters=[cluster_xr(), first, odd]).run()
    assert resolution_keys(out.desired) == {}
    assert any("eu-west" in w and "not reachable by name" in w and why in w for w in out.warnings)
    label = names.cluster_label("a-first")
    assert f"resolve-{label}" in out.desired, "the other clusters still resolve"


def test_an_upper_case_dns_address_becomes_a_valid_external_name() -> None:
    loud = cluster_xr("eu-west", address="LB-1.Example.NET")
    out = fleet(clusters=[cluster_xr(), loud]).run()
    svc = manifest(out.desired[f"resolve-{names.cluster_label('eu-west')}"])
    assert svc["spec"]["externalName"] == "lb-1.example.net"


def test_the_gateways_own_cluster_is_resolved_too() -> None:
    home = cluster_xr(address="203.0.113.1")
    out = fleet(clusters=[home]).with_(cluster=[home]).run()
    label = names.cluster_label(HOME)
    assert manifest(out.desired[f"resolve-{label}"])["metadata"]["name"] == label


def test_unresolved_clusters_keep_what_was_composed() -> None:
    published = fleet(clusters=[cluster_xr(), cluster_xr("eu-west", address="203.0.113.10")])
    before = echo(published.settled())
    out = published.with_(clusters=None).run(before)
    assert set(out.desired) == set(before)


# --- who owns name resolution when gateways share a cluster ------------------------

EARLY, LATE = "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z"
OWNER_CASES: list[tuple[str, Obj, list[Obj], bool]] = [
    # name, this gateway, the fleet's gateways, whether this one composes the Services
    ("alone on its cluster", gateway_xr(created=LATE), [], True),
    ("older than the other", gateway_xr(created=EARLY), [gateway_xr("zeta", created=LATE)], True),
    ("newer than the other", gateway_xr(created=LATE), [gateway_xr("alpha", created=EARLY)], False),
    (
        "same age: name decides",
        gateway_xr(created=EARLY),
        [gateway_xr("alpha", created=EARLY)],
        False,
    ),
    (
        "the older one is being deleted",
        gateway_xr(created=LATE),
        [
            {
                **gateway_xr("alpha", created=EARLY),
                "metadata": {
                    "name": "alpha",
                    "creationTimestamp": EARLY,
                    "deletionTimestamp": LATE,
                },
            }
        ],
        True,
    ),
    (
        "older gateway on another cluster",
        gateway_xr(created=LATE),
        [gateway_xr("alpha", created=EARLY, clusterName="elsewhere")],
        True,
    ),
]


@pytest.mark.parametrize(
    ("me", "others", "owns"), [c[1:] for c in OWNER_CASES], ids=[c[0] for c in OWNER_CASES]
)
def test_one_gateway_per_cluster_composes_name_resolution(
    me: Obj, others: list[Obj], owns: bool
) -> None:
    clusters = [cluster_xr(), cluster_xr("eu-west", address="203.0.113.10")]
    out = fleet(clusters=clusters).with_(gateway=me, gateways=[me, *others]).run()
    has_services = any(k.startswith("resolve-") for k in out.desired)
    assert has_services == owns
    # Every gateway keeps its own copy of each cluster's CA.
    assert f"cluster-ca-{names.cluster_label('eu-west')}" in out.desired


def test_unresolved_gateways_keep_name_resolution_as_it_was() -> None:
    published = fleet(clusters=[cluster_xr(), cluster_xr("eu-west", address="203.0.113.10")])
    before = echo(published.run())
    out = published.with_(gateways=None).run(before)
    assert {k for k in out.desired if k.startswith("resolve-")} == {
        k for k in before if k.startswith("resolve-")
    }
