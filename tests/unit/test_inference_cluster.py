"""compose-inference-cluster: reach the cluster, its PKI, trust of fleet gateways, the gateway."""

import json
from typing import Any

import pytest

from fleetgate.core import readiness
from fleetgate.core.names import CLUSTER_GATEWAY, cluster_hostname
from fleetgate.inference_cluster import builders
from fleetgate.inference_cluster.composer import compose
from sim.controllers import evaluate
from tests.support import Outcome, request, run
from tests.support.inference_cluster import (
    ADDRESS,
    CLUSTER,
    KUBECONFIG,
    ca_pem,
    cluster_side,
    cluster_xr,
    gateway_xr,
    gateways,
    manifest_of,
    observe,
    settle,
)

HOSTNAME = cluster_hostname(CLUSTER)
PKI_KEYS = {
    "selfsigned-issuer",
    "ca-certificate",
    "ca-issuer",
    "serving-certificate",
    "ca-bundle",
    "ca-published",
}
TRUST_KEYS = {"client-cas", "client-validation"}


def final(xr: dict[str, Any], required: Any, **kw: Any) -> Outcome:
    return settle(xr, required, **kw)[-1]


def remote(out: Outcome, name: str) -> dict[str, Any]:
    return manifest_of(out.desired[name])


# --- credentials -------------------------------------------------------------------

API_VERSIONS = {
    "provider-config": "kubernetes.m.crossplane.io/v1alpha1",
    "helm-provider-config": "helm.m.crossplane.io/v1beta1",
}


@pytest.mark.parametrize(
    ("credentials", "install", "config", "configs"),
    [
        # spec.credentials, spec.stack.install, the provider config used, the configs composed
        pytest.param(
            {"secretRef": {"name": KUBECONFIG}},
            False,
            f"fleetgate-cluster-{CLUSTER}",
            {"provider-config"},
            id="kubeconfig secret",
        ),
        pytest.param(
            {"secretRef": {"name": KUBECONFIG, "key": "config"}},
            True,
            f"fleetgate-cluster-{CLUSTER}",
            {"provider-config", "helm-provider-config"},
            id="kubeconfig secret with stack",
        ),
        pytest.param(
            {"providerConfigName": "prod-eu"},
            False,
            "prod-eu",
            set(),
            id="existing provider config",
        ),
        pytest.param(
            {"providerConfigName": "prod-eu"},
            True,
            "prod-eu",
            set(),
            id="existing provider config with stack",
        ),
    ],
)
def test_credentials_pick_the_provider_config(
    credentials: dict[str, Any], install: bool, config: str, configs: set[str]
) -> None:
    xr = cluster_xr(credentials=credentials, stack={"install": install})
    out = final(xr, gateways("public"), remote=cluster_side())
    assert out.composite["status"]["providerConfigRef"] == {"name": config}
    assert {k for k in out.desired if k.endswith("provider-config")} == configs
    for name, obj in out.desired.items():
        if obj["kind"] == "Object":
            assert obj["spec"]["providerConfigRef"] == {
                "kind": "ClusterProviderConfig",
                "name": config,
            }, name
            assert obj["metadata"]["namespace"] == "fleetgate-system", name
        if obj["kind"] == "Release":
            assert obj["spec"]["providerConfigRef"]["name"] == config, name
    for key in configs:
        cpc = out.desired[key]
        assert cpc["kind"] == "ClusterProviderConfig"
        assert cpc["metadata"] == {"name": config}
        assert cpc["spec"]["credentials"] == {
            "source": "Secret",
            "secretRef": {
                "namespace": "fleetgate-system",
                "name": KUBECONFIG,
                "key": credentials["secretRef"].get("key", "kubeconfig"),
            },
        }
    api_versions = {out.desired[k]["apiVersion"] for k in configs}
    assert api_versions == {API_VERSIONS[k] for k in configs}


def test_provider_config_names_are_bounded_and_distinct_for_dot_and_dash() -> None:
    names = set()
    for name in ("eu.west", "eu-west", "e" * 253):
        out = run(compose, request(cluster_xr(name), required=gateways()))
        ref = out.composite["status"]["providerConfigRef"]["name"]
        assert len(ref) <= 253
        names.add(ref)
    assert len(names) == 3


# --- the walk from registration to schedulable -----------------------------------


def test_first_pass_only_proves_the_cluster_is_reachable() -> None:
    out = run(compose, request(cluster_xr(), required=gateways("public")))
    assert set(out.desired) == {"provider-config", "namespace"}
    assert out.conditions["Connected"][:2] == ("False", "WaitingForCluster")
    assert KUBECONFIG in out.conditions["Connected"][2]
    assert out.composite_ready == "READY_FALSE"
    namespace = out.desired["namespace"]
    assert manifest_of(namespace) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "fleetgate-system",
            "labels": {
                "app.kubernetes.io/managed-by": "fleetgate",
                "fleetgate.dev/cluster": CLUSTER,
            },
        },
    }
    assert "Delete" not in namespace["spec"]["managementPolicies"]


def test_a_cluster_provider_kubernetes_cannot_reach_says_why() -> None:
    """provider-kubernetes' refusal of the first object replaces "waiting": a cluster
    that cannot connect is not joining, and placement stops waiting for it."""
    refused = "cannot get ClusterProviderConfig no-such-cluster: not found"
    namespace = {"status": {"conditions": [
        {"type": "Synced", "status": "False", "reason": "ReconcileError", "message": refused},
    ]}}  # fmt: skip
    out = run(
        compose,
        request(cluster_xr(), required=gateways("public"), observed={"namespace": namespace}),
    )
    status, reason, message = out.conditions["Connected"]
    assert (status, reason) == ("False", "CannotConnect")
    assert refused in message
    assert KUBECONFIG in message  # what to check
    assert set(out.desired) == {"provider-config", "namespace"}  # nothing dropped


WALK = [
    # passes settle; each later step changes the world: (name, gateways, remote, checks)
    ("no gateway yet", gateways(), cluster_side(), ("False", "NoTrustedFleetGateway")),
    (
        "gateway without a CA yet",
        gateways(unpublished=("public",)),
        cluster_side(),
        ("False", "NoTrustedFleetGateway"),
    ),
    ("trusted, no address yet", gateways("public"), cluster_side(address=None), None),
    ("trusted with address", gateways("public"), cluster_side(), ("True", "MutuallyAuthenticated")),
]


@pytest.mark.parametrize(
    ("required", "world", "schedulable"), [w[1:] for w in WALK], ids=[w[0] for w in WALK]
)
def test_walk_to_schedulable(
    required: dict[str, Any], world: dict[str, Any], schedulable: tuple[str, str] | None
) -> None:
    outs = settle(cluster_xr(), required, remote=world)
    first, last = outs[0], outs[-1]
    assert set(first.desired) == {"provider-config", "namespace"}
    trusted = any(g.get("status", {}).get("clientCACertificate") for g in required["gateways"])
    expected = {"provider-config", "namespace"} | PKI_KEYS
    if trusted:
        expected |= TRUST_KEYS | {"gateway"}
    assert set(last.desired) == expected
    status = last.composite["status"]
    if not trusted:
        assert last.conditions["Schedulable"][:2] == schedulable
        assert any("withheld" in w and "client CA" in w for w in last.warnings)
        assert "hostname" not in status["gateway"]
    elif world["gateway"]["status"]["addresses"] is None:
        assert last.conditions["Schedulable"][:2] == ("False", "WaitingForGatewayAddress")
        assert "hostname" not in status["gateway"]
        assert "address" not in status["gateway"]
    else:
        assert last.conditions["Schedulable"][:2] == schedulable
        assert status["gateway"] == {
            "address": ADDRESS,
            "caCertificate": ca_pem("cluster"),
            "hostname": HOSTNAME,
        }
        assert last.conditions["GatewayReady"][:2] == ("True", "GatewayProgrammed")
        assert last.xr_ready


def test_each_object_is_first_composed_only_after_what_it_needs() -> None:
    outs = settle(cluster_xr(), gateways("public"), remote=cluster_side())
    order = []
    for out in outs:
        order += [k for k in out.desired if k not in order]
    position = {k: i for i, k in enumerate(order)}
    before = [
        ("namespace", "selfsigned-issuer"),
        ("selfsigned-issuer", "ca-certificate"),
        ("ca-certificate", "ca-issuer"),
        ("ca-issuer", "serving-certificate"),
        ("ca-certificate", "ca-bundle"),
        ("ca-bundle", "ca-published"),
        ("client-cas", "client-validation"),
        ("client-validation", "gateway"),
        ("serving-certificate", "gateway"),
    ]
    for first, then in before:
        assert position[first] < position[then], (first, then)
    first_seen = {k: next(i for i, o in enumerate(outs) if k in o.desired) for k in order}
    assert first_seen["client-validation"] < first_seen["gateway"], "policy before listener"


# --- the cluster gateway ---------------------------------------------------------------


@pytest.mark.parametrize("class_name", [None, "envoy-internal"], ids=["default class", "custom"])
def test_gateway_has_exactly_one_https_listener_for_the_derived_hostname(
    class_name: str | None,
) -> None:
    spec: dict[str, Any] = {"gateway": {"className": class_name}} if class_name else {}
    out = final(cluster_xr(**spec), gateways("public"), remote=cluster_side())
    gw = remote(out, "gateway")
    assert gw["metadata"]["name"] == CLUSTER_GATEWAY
    assert gw["metadata"]["namespace"] == "fleetgate-system"
    assert gw["spec"]["gatewayClassName"] == (class_name or "envoy")
    assert gw["spec"]["listeners"] == [
        {
            "name": "https",
            "protocol": "HTTPS",
            "port": 443,
            "hostname": HOSTNAME,
            "tls": {
                "mode": "Terminate",
                "certificateRefs": [
                    {"group": "", "kind": "Secret", "name": builders.SERVING_SECRET}
                ],
            },
            "allowedRoutes": {"namespaces": {"from": "Same"}},
        }
    ]
    serving = remote(out, "serving-certificate")
    assert serving["spec"]["secretName"] == builders.SERVING_SECRET
    assert serving["spec"]["dnsNames"] == [HOSTNAME]
    assert "server auth" in serving["spec"]["usages"]


def test_no_plain_http_listener_in_any_pass() -> None:
    for out in settle(cluster_xr(), gateways("a", "b"), remote=cluster_side()):
        if "gateway" in out.desired:
            protocols = {li["protocol"] for li in remote(out, "gateway")["spec"]["listeners"]}
            assert protocols == {"HTTPS"}


WITHHELD = [
    ("no InferenceGateway at all", gateways()),
    ("gateways that have not published a CA", gateways(unpublished=("a", "b"))),
    ("a gateway publishing garbage", {"gateways": [gateway_xr("a", pem="not a certificate")]}),
]


@pytest.mark.parametrize("required", [w[1] for w in WITHHELD], ids=[w[0] for w in WITHHELD])
def test_gateway_is_withheld_with_a_warning_until_a_client_ca_exists(
    required: dict[str, Any],
) -> None:
    out = final(cluster_xr(), required, remote=cluster_side())
    assert "gateway" not in out.desired
    assert not TRUST_KEYS & set(out.desired)
    assert any(CLUSTER_GATEWAY in w and "withheld" in w for w in out.warnings)
    assert out.conditions["GatewayReady"][:2] == ("False", "NoTrustedFleetGateway")
    assert out.conditions["Schedulable"][:2] == ("False", "NoTrustedFleetGateway")
    assert "hostname" not in out.composite["status"]["gateway"]
    assert out.composite_ready == "READY_FALSE"


# --- trust of fleet gateways -------------------------------------------------------------

TRUST = [
    # name, gateways (name, published), expected trusted order
    ("one gateway", [("public", True)], ["public"]),
    (
        "sorted by gateway name",
        [("zeta", True), ("alpha", True), ("mid", True)],
        ["alpha", "mid", "zeta"],
    ),
    ("unpublished skipped", [("b", True), ("a", False), ("c", True)], ["b", "c"]),
]


@pytest.mark.parametrize(("fleet", "order"), [t[1:] for t in TRUST], ids=[t[0] for t in TRUST])
def test_client_ca_bundle_holds_every_published_ca_in_name_order(
    fleet: list[tuple[str, bool]], order: list[str]
) -> None:
    required = {"gateways": [gateway_xr(n, published=p) for n, p in fleet]}
    out = final(cluster_xr(), required, remote=cluster_side())
    bundle = remote(out, "client-cas")["data"]["ca.crt"]
    assert bundle == "".join(ca_pem(n) for n in order)
    assert all(ca_pem(n).endswith("\n") for n in order)
    unpublished = [n for n, p in fleet if not p]
    if unpublished:
        assert any(
            all(n in w for n in unpublished) and "not trusted yet" in w for w in out.warnings
        )
    assert out.conditions["Schedulable"][:2] == ("True", "MutuallyAuthenticated")


def test_pem_without_trailing_newline_is_terminated() -> None:
    pem = ca_pem("a").rstrip("\n")
    required = {"gateways": [gateway_xr("a", pem=pem), gateway_xr("b")]}
    out = final(cluster_xr(), required, remote=cluster_side())
    assert remote(out, "client-cas")["data"]["ca.crt"] == pem + "\n" + ca_pem("b")


def test_malformed_gateway_ca_is_skipped_and_named_without_blocking_others() -> None:
    required = {"gateways": [gateway_xr("bad", pem="-----BEGIN nonsense"), gateway_xr("good")]}
    out = final(cluster_xr(), required, remote=cluster_side())
    assert remote(out, "client-cas")["data"]["ca.crt"] == ca_pem("good")
    assert any("bad" in w and "not a PEM certificate" in w for w in out.warnings)


def test_adding_and_removing_gateways_updates_the_bundle() -> None:
    world = cluster_side()
    outs = settle(cluster_xr(), gateways("a"), remote=world)
    seen = observe(outs[-1].desired, remote=world)
    added = run(compose, request(cluster_xr(), required=gateways("a", "b"), observed=seen))
    assert remote(added, "client-cas")["data"]["ca.crt"] == ca_pem("a") + ca_pem("b")
    removed = run(compose, request(cluster_xr(), required=gateways("b"), observed=seen))
    assert remote(removed, "client-cas")["data"]["ca.crt"] == ca_pem("b")
    assert "gateway" in removed.desired


def test_client_validation_policy_targets_the_https_listener() -> None:
    out = final(cluster_xr(), gateways("public"), remote=cluster_side())
    ctp = remote(out, "client-validation")
    assert ctp["kind"] == "ClientTrafficPolicy"
    assert ctp["spec"]["targetRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": CLUSTER_GATEWAY,
            "sectionName": "https",
        }
    ]
    assert ctp["spec"]["tls"]["clientValidation"] == {
        "mode": "RequireAndVerify",
        "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": builders.CLIENT_CAS}],
    }
    assert remote(out, "client-cas")["metadata"]["name"] == builders.CLIENT_CAS


def _ancestor(status: str, reason: str, generation: int = 2) -> dict[str, Any]:
    condition = {
        "type": "Accepted",
        "status": status,
        "reason": reason,
        "message": "m",
        "observedGeneration": generation,
    }
    return {"ancestors": [{"ancestorRef": {"name": CLUSTER_GATEWAY}, "conditions": [condition]}]}


@pytest.mark.parametrize(
    ("status", "ready"),
    [
        pytest.param(_ancestor("True", "Accepted"), True, id="accepted"),
        # e.g. a CA ConfigMap Envoy Gateway cannot use (an expired certificate)
        pytest.param(_ancestor("False", "Invalid"), False, id="refused"),
        # accepted before the policy last changed, not yet since
        pytest.param(_ancestor("True", "Accepted", generation=1), False, id="accepted-before"),
        pytest.param({"ancestors": []}, False, id="no-ancestor-yet"),
        pytest.param(None, False, id="no-status"),
    ],
)
def test_client_validation_is_ready_once_envoy_gateway_accepts_it(
    status: dict[str, Any] | None, ready: bool
) -> None:
    out = final(cluster_xr(), gateways("public"), remote=cluster_side())
    obj = out.desired["client-validation"]
    assert obj["spec"]["readiness"] == readiness.for_manifest(remote(out, "client-validation"))
    manifest = remote(out, "client-validation")
    manifest = {**manifest, "metadata": {**manifest["metadata"], "generation": 2}}
    observed = {**manifest, "status": status} if status is not None else manifest
    assert evaluate(obj["spec"]["readiness"]["celQuery"], observed) is ready


@pytest.mark.parametrize("install", [False, True], ids=["own-stack", "stack-install"])
def test_every_kind_core_readiness_has_a_rule_for_takes_it_from_there(
    monkeypatch: pytest.MonkeyPatch, install: bool
) -> None:
    """One place says when a kind is ready: a rule changed there reaches every Object of it."""
    rule = readiness.for_manifest

    def marked(manifest: dict[str, Any]) -> readiness.Readiness:
        known = rule(manifest)
        if known == readiness.SUCCESSFUL_CREATE:  # a kind core.readiness has no rule for
            return known
        return readiness.query(f"'changed in core.readiness: {manifest['kind']}' != ''")

    monkeypatch.setattr(readiness, "for_manifest", marked)
    xr = cluster_xr(stack={"install": True}) if install else cluster_xr()
    out = final(xr, gateways("public"), remote=cluster_side())
    assert {"gateway", "ca-bundle", "client-validation"} <= out.desired.keys()
    elsewhere = {
        key: obj["spec"]["readiness"]
        for key, obj in out.desired.items()
        if obj.get("kind") == "Object"
        and obj["spec"].get("managementPolicies") != ["Observe"]
        and rule(manifest := manifest_of(obj)) != readiness.SUCCESSFUL_CREATE
        and obj["spec"]["readiness"] != marked(manifest)
    }
    assert elsewhere == {}


def test_last_gateway_gone_withdraws_the_listener_before_its_client_validation() -> None:
    world = cluster_side()
    seen = observe(final(cluster_xr(), gateways("a"), remote=world).desired, remote=world)
    gone = run(compose, request(cluster_xr(), required=gateways(), observed=seen))
    assert "gateway" not in gone.desired
    assert set(gone.desired) >= TRUST_KEYS, "clients stay validated while the Gateway goes"
    assert gone.conditions["Schedulable"][:2] == ("False", "NoTrustedFleetGateway")
    after = observe(gone.desired, remote=world)
    later = run(compose, request(cluster_xr(), required=gateways(), observed=after))
    assert not TRUST_KEYS & set(later.desired)


def test_unresolved_gateways_keep_what_was_composed() -> None:
    world = cluster_side()
    done = final(cluster_xr(), gateways("a"), remote=world)
    seen = observe(done.desired, remote=world)
    transient = run(compose, request(cluster_xr(), required=None, observed=seen))
    assert set(transient.desired) == set(done.desired)
    for key in TRUST_KEYS | {"gateway"}:
        assert manifest_of(transient.desired[key]) == manifest_of(done.desired[key]), key
    sel = transient.requirements["gateways"]
    assert (sel.api_version, sel.kind) == ("fleetgate.dev/v1alpha1", "InferenceGateway")
    assert sel.WhichOneof("match") == "match_labels", "every gateway, not none"
    assert dict(sel.match_labels.labels) == {}
    assert transient.conditions["Schedulable"][:2] == ("False", "WaitingForFleetGateways")
    assert "hostname" not in transient.composite["status"]["gateway"]


def test_listener_waits_until_client_validation_exists_on_the_cluster() -> None:
    world = cluster_side()
    untrusted = final(cluster_xr(), gateways(), remote=world)
    seen = observe(untrusted.desired, remote=world)
    passes = settle(cluster_xr(), gateways("a"), remote=world, observed=seen)
    steps = [sorted(set(out.desired) & (TRUST_KEYS | {"gateway"})) for out in passes]
    served = ["client-cas", "client-validation", "gateway"]
    assert steps[:3] == [["client-cas"], ["client-cas", "client-validation"], served]
    assert all(step == served for step in steps[3:]), steps


# --- PKI -------------------------------------------------------------------------------------


def test_pki_chain_publishes_the_ca_through_an_observed_configmap() -> None:
    out = final(cluster_xr("c" * 253), gateways("public"), remote=cluster_side())
    ca = remote(out, "ca-certificate")
    assert ca["spec"]["isCA"] is True
    assert len(ca["spec"]["commonName"].encode()) <= 64
    assert remote(out, "selfsigned-issuer")["spec"] == {"selfSigned": {}}
    issuer = remote(out, "ca-issuer")
    assert issuer["spec"] == {"ca": {"secretName": ca["spec"]["secretName"]}}
    assert (
        remote(out, "serving-certificate")["spec"]["issuerRef"]["name"]
        == issuer["metadata"]["name"]
    )
    bundle = remote(out, "ca-bundle")
    assert bundle["spec"]["sources"] == [
        {"secret": {"name": ca["spec"]["secretName"], "key": "tls.crt"}}
    ]
    published = out.desired["ca-published"]
    assert published["spec"]["managementPolicies"] == ["Observe"]
    assert manifest_of(published)["kind"] == "ConfigMap"
    assert manifest_of(published)["metadata"]["name"] == bundle["metadata"]["name"]


def test_no_composed_object_observes_or_carries_a_secret() -> None:
    xr = cluster_xr(stack={"install": True})
    for out in settle(xr, gateways("a", "b"), remote=cluster_side()):
        for name, obj in out.desired.items():
            assert manifest_of(obj).get("kind") != "Secret", name
        assert KUBECONFIG not in json.dumps(out.composite)


# --- status and conditions --------------------------------------------------------------------

STATUS = [
    # name, world on the cluster, trusted gateways, expected status.gateway, Schedulable reason
    (
        "everything",
        cluster_side(),
        ("a",),
        {"address": ADDRESS, "caCertificate": "cluster", "hostname": HOSTNAME},
        "MutuallyAuthenticated",
    ),
    (
        "no address",
        cluster_side(address=None),
        ("a",),
        {"caCertificate": "cluster"},
        "WaitingForGatewayAddress",
    ),
    ("no fleet CA", cluster_side(), (), {"caCertificate": "cluster"}, "NoTrustedFleetGateway"),
    (
        "no own CA",
        {**cluster_side(), "ca-published": {"data": None}},
        ("a",),
        {"address": ADDRESS},
        "WaitingForClusterCA",
    ),
    (
        "own CA is not a certificate",
        {**cluster_side(), "ca-published": {"data": {"ca.crt": "garbage"}}},
        ("a",),
        {"address": ADDRESS},
        "WaitingForClusterCA",
    ),
]


@pytest.mark.parametrize(
    ("world", "trusted", "want", "reason"), [s[1:] for s in STATUS], ids=[s[0] for s in STATUS]
)
def test_hostname_is_published_only_when_both_directions_authenticate(
    world: dict[str, Any], trusted: tuple[str, ...], want: dict[str, str], reason: str
) -> None:
    out = final(cluster_xr(), gateways(*trusted), remote=world)
    if "caCertificate" in want:
        want = {**want, "caCertificate": ca_pem("cluster")}
    assert out.composite["status"]["gateway"] == want
    status, got_reason, message = out.conditions["Schedulable"]
    assert (status, got_reason) == (
        "True" if reason == "MutuallyAuthenticated" else "False",
        reason,
    )
    assert message


@pytest.mark.parametrize("ready", [True, False], ids=["mutual TLS ready", "not ready"])
def test_drain_is_never_schedulable_but_keeps_serving(ready: bool) -> None:
    xr = cluster_xr(schedulable=False)
    out = final(xr, gateways("a") if ready else gateways(), remote=cluster_side())
    status, reason, message = out.conditions["Schedulable"]
    assert (status, reason) == ("False", "Draining")
    assert "spec.schedulable is false" in message
    assert ("gateway" in out.desired) is ready
    assert ("hostname" in out.composite["status"]["gateway"]) is ready
    if not ready:
        assert "client CA" in message


def test_client_validation_not_accepted_is_reported() -> None:
    world = cluster_side()
    done = final(cluster_xr(), gateways("a"), remote=world)
    seen = observe(done.desired, remote=world, ready=lambda n: n != "client-validation")
    out = run(compose, request(cluster_xr(), required=gateways("a"), observed=seen))
    assert out.conditions["GatewayReady"][:2] == ("False", "ClientValidationNotAccepted")
    assert out.composite_ready == "READY_FALSE"


def test_placement_labels_stay_on_the_xr_for_deployments() -> None:
    labels = {"region": "eu", "tier": "gold"}
    xr = cluster_xr(placement={"metadata": {"labels": labels}})
    out = run(compose, request(xr, required=gateways()))
    assert out.fatal == []
    assert "placement" not in out.composite.get("spec", {}), "read from the XR, never rewritten"


# --- bad input --------------------------------------------------------------------------------

MALFORMED = [
    ("no credentials", {"metadata": {"name": "x"}, "spec": {}}, "spec.credentials"),
    (
        "both credentials",
        cluster_xr(credentials={"secretRef": {"name": "k"}, "providerConfigName": "p"}),
        "spec.credentials",
    ),
    ("neither credential", cluster_xr(credentials={}), "spec.credentials"),
    ("secret name empty", cluster_xr(credentials={"secretRef": {"name": ""}}), "secretRef.name"),
    ("gpus negative", cluster_xr(capacity={"gpus": -1}), "spec.capacity.gpus"),
    ("schedulable not a bool", cluster_xr(schedulable="maybe"), "spec.schedulable"),
    ("unknown provider", cluster_xr(providers=["Magic"]), "spec.providers"),
    (
        "too many placement labels",
        cluster_xr(placement={"metadata": {"labels": {f"k{i}": "v" for i in range(17)}}}),
        "spec.placement.metadata.labels",
    ),
    (
        "reserved placement label",
        cluster_xr(placement={"metadata": {"labels": {"fleetgate.dev/cluster": "x"}}}),
        "spec.placement.metadata.labels",
    ),
    ("stack not an object", cluster_xr(stack="yes"), "spec.stack"),
    (
        "name missing",
        {"metadata": {}, "spec": {"credentials": {"providerConfigName": "p"}}},
        "metadata.name",
    ),
]


@pytest.mark.parametrize(("xr", "field"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_cluster_is_a_fatal_result_naming_the_field(
    xr: dict[str, Any], field: str
) -> None:
    out = run(compose, request(xr, required=gateways("a")))
    assert len(out.fatal) == 1, out.fatal
    assert field in out.fatal[0]
    assert out.desired == {}


BAD_GATEWAYS = [
    ("CA not a string", {"clientCACertificate": 42}, "status.clientCACertificate"),
    ("CA absurdly large", {"clientCACertificate": "A" * 40000}, "status.clientCACertificate"),
]


@pytest.mark.parametrize(
    ("status", "field"), [b[1:] for b in BAD_GATEWAYS], ids=[b[0] for b in BAD_GATEWAYS]
)
def test_malformed_fleet_gateway_is_a_fatal_result_naming_it(
    status: dict[str, Any], field: str
) -> None:
    bad = {**gateway_xr("broken"), "status": status}
    out = run(compose, request(cluster_xr(), required={"gateways": [gateway_xr("ok"), bad]}))
    assert len(out.fatal) == 1
    assert "InferenceGateway broken" in out.fatal[0]
    assert field in out.fatal[0]


# --- determinism ------------------------------------------------------------------------------


def test_same_inputs_give_identical_output_whatever_the_gateway_order() -> None:
    world = cluster_side()
    xr = cluster_xr(stack={"install": True})
    seen = observe(final(xr, gateways("a", "b", "c"), remote=world).desired, remote=world)
    forward = run(compose, request(xr, required=gateways("a", "b", "c"), observed=seen))
    backward = run(compose, request(xr, required=gateways("c", "b", "a"), observed=seen))
    assert forward.rsp.SerializeToString(deterministic=True) == backward.rsp.SerializeToString(
        deterministic=True
    )
