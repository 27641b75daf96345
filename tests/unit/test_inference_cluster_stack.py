"""compose-inference-cluster with stack.install: pinned releases, installed in dependency order."""

import copy
from typing import Any

import pytest
import yaml

from fleetgate.core import pacing
from fleetgate.inference_cluster import gaie_crds, stack
from fleetgate.inference_cluster.composer import compose
from schemas import crds
from sim import catalog
from tests import support
from tests.support import Outcome, request, run
from tests.support.inference_cluster import (
    cluster_side,
    cluster_xr,
    gateways,
    manifest_of,
    observe,
    settle,
)

INSTALL = cluster_xr(stack={"install": True})

RELEASES = [
    # key, chart, repository, version, namespace on the cluster
    ("cert-manager", "cert-manager", "https://charts.jetstack.io", "v1.21.2", "cert-manager"),
    ("trust-manager", "trust-manager", "https://charts.jetstack.io", "v0.25.0", "cert-manager"),
    (
        "envoy-gateway",
        "gateway-helm",
        "oci://docker.io/envoyproxy",
        "v1.8.3",
        "envoy-gateway-system",
    ),
    (
        "ai-gateway-crds",
        "ai-gateway-crds-helm",
        "oci://docker.io/envoyproxy",
        "v1.1.0",
        "envoy-ai-gateway-system",
    ),
    (
        "ai-gateway",
        "ai-gateway-helm",
        "oci://docker.io/envoyproxy",
        "v1.1.0",
        "envoy-ai-gateway-system",
    ),
    ("keda", "keda", "https://kedacore.github.io/charts", "2.20.0", "keda"),
]


@pytest.fixture(scope="module")
def installed() -> list[Any]:
    return settle(INSTALL, gateways("public"), remote=cluster_side())


@pytest.mark.parametrize("pin", RELEASES, ids=[r[0] for r in RELEASES])
def test_releases_are_pinned(installed: list[Any], pin: tuple[str, str, str, str, str]) -> None:
    key, chart, repository, version, namespace = pin
    release = installed[-1].desired[stack.release_key(key)]
    assert release["apiVersion"] == "helm.m.crossplane.io/v1beta1"
    assert release["metadata"]["namespace"] == "fleetgate-system"
    assert release["metadata"]["annotations"] == {"crossplane.io/external-name": f"fleetgate-{key}"}
    spec = release["spec"]["forProvider"]
    assert spec["chart"] == {"repository": repository, "name": chart, "version": version}
    assert spec["namespace"] == namespace
    assert spec["wait"] is True


def test_every_release_is_listed() -> None:
    assert [c.key for c in stack.CHARTS] == [r[0] for r in RELEASES]


VALUES = [
    # release, path into values, expected
    ("trust-manager", ("app", "trust", "namespace"), "fleetgate-system"),
    ("trust-manager", ("crds", "enabled"), True),
    ("cert-manager", ("crds", "enabled"), True),
    ("cert-manager", ("crds", "keep"), True),
    # Key Secrets go with their Certificates: a re-registration never reuses a key.
    ("cert-manager", ("enableCertificateOwnerRef",), True),
    # The usage record's caller and tier, and the failover metrics' labels: never the
    # caller, which would multiply every histogram by the number of callers.
    (
        "ai-gateway",
        ("controller", "logRequestHeaderAttributes"),
        "x-fleetgate-caller:caller,x-fleetgate-tier:tier",
    ),
    (
        "ai-gateway",
        ("controller", "metricsRequestHeaderAttributes"),
        "x-fleetgate-tier:fleetgate.tier,x-fleetgate-gateway:fleetgate.gateway,"
        "x-fleetgate-endpoint:fleetgate.endpoint",
    ),
    # The extension message past 4 MiB, on both ends (bench/extension_message).
    ("ai-gateway", ("controller", "maxRecvMsgSize"), "33554432"),
    ("envoy-gateway", ("config", "envoyGateway", "extensionManager", "maxMessageSize"), "32Mi"),
    ("envoy-gateway", ("config", "envoyGateway", "extensionApis", "enableBackend"), True),
    (
        "envoy-gateway",
        ("config", "envoyGateway", "extensionManager", "service", "fqdn"),
        {
            "hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local",
            "port": 1063,
        },
    ),
    (
        "envoy-gateway",
        ("config", "envoyGateway", "extensionManager", "backendResources"),
        [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}],
    ),
    (
        "envoy-gateway",
        ("config", "envoyGateway", "extensionManager", "hooks", "xdsTranslator", "post"),
        ["Translation", "Cluster", "Route"],
    ),
    # Limits hold while the rate-limit service cannot answer: nothing unanswered passes.
    ("envoy-gateway", ("config", "envoyGateway", "rateLimit", "failClosed"), True),
    ("envoy-gateway", ("config", "envoyGateway", "rateLimit", "timeout"), "100ms"),
    # The callers' limits: refused without a backend (backendtrafficpolicy.go:1439-1444).
    (
        "envoy-gateway",
        ("config", "envoyGateway", "rateLimit", "backend"),
        {
            "type": "Redis",
            "redis": {
                "url": "fleetgate-ratelimit-redis.envoy-gateway-system.svc.cluster.local:6379"
            },
        },
    ),
]


def test_the_rate_limit_redis_is_the_stacks_own_on_the_cluster(installed: list[Any]) -> None:
    desired = installed[-1].desired
    deployment = manifest_of(desired[stack.redis_key("Deployment")])
    service = manifest_of(desired[stack.redis_key("Service")])
    assert (deployment["metadata"]["namespace"], service["metadata"]["name"]) == (
        "envoy-gateway-system",
        "fleetgate-ratelimit-redis",
    )
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    # Counters only: nothing written to disk.
    assert container["args"] == ["--save", "", "--appendonly", "no"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_only_the_rate_limit_service_may_reach_its_redis(installed: list[Any]) -> None:
    """Every caller's counters are in it, and it has no password (issue 52)."""
    desired = installed[-1].desired
    deployment = manifest_of(desired[stack.redis_key("Deployment")])
    policy = manifest_of(desired[stack.redis_key("NetworkPolicy")])
    assert policy["metadata"] == deployment["metadata"]
    spec = policy["spec"]
    assert spec["podSelector"] == deployment["spec"]["selector"]
    assert spec["policyTypes"] == ["Ingress"], "no other ingress rule admits anyone else"
    (rule,) = spec["ingress"]
    assert rule["from"] == [
        {
            "podSelector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "envoy-ratelimit",
                    "app.kubernetes.io/component": "ratelimit",
                    "app.kubernetes.io/managed-by": "envoy-gateway",
                }
            }
        }
    ]
    assert rule["ports"] == [{"protocol": "TCP", "port": 6379}]


def test_a_shared_redis_replaces_the_stacks_own() -> None:
    shared = "redis.limits.example.com:6379"
    xr = cluster_xr(stack={"install": True, "rateLimitRedis": shared})
    final = settle(xr, gateways("public"), remote=cluster_side())[-1]
    values = final.desired[stack.release_key("envoy-gateway")]["spec"]["forProvider"]["values"]
    assert values["config"]["envoyGateway"]["rateLimit"]["backend"]["redis"]["url"] == shared
    own = {stack.redis_key(kind) for kind in ("Deployment", "Service", "NetworkPolicy")}
    assert not own & set(final.desired)
    assert final.conditions["StackReady"][:2] == ("True", "StackInstalled")


@pytest.mark.parametrize(
    ("key", "path", "want"), VALUES, ids=[f"{v[0]}:{'.'.join(v[1])}" for v in VALUES]
)
def test_release_values(installed: list[Any], key: str, path: tuple[str, ...], want: Any) -> None:
    value = installed[-1].desired[stack.release_key(key)]["spec"]["forProvider"]["values"]
    for part in path:
        value = value[part]
    assert value == want


# Kinds Envoy Gateway v1.8.3 refuses unless its configuration enables them
# (extensionApis; the chart enables none, charts/gateway-helm/values.tmpl.yaml:139).
GATED_KINDS = [
    # kind, flag: where Envoy Gateway refuses it when the flag is off
    # internal/gatewayapi/envoypatchpolicy.go:93-107 (Accepted=False, reason Disabled)
    ("EnvoyPatchPolicy", "enableEnvoyPatchPolicy"),
    # internal/gatewayapi/backend.go:25-28 (Accepted=False)
    ("Backend", "enableBackend"),
]


@pytest.mark.parametrize(("kind", "flag"), GATED_KINDS, ids=[k for k, _ in GATED_KINDS])
def test_envoy_gateway_is_configured_for_every_gated_kind_fleetgate_composes(
    installed: list[Any], kind: str, flag: str
) -> None:
    composing = [e.name for e in catalog.discover() if kind in e.expect.get("composed", [])]
    assert composing, f"no example composes a {kind}: drop it from GATED_KINDS"
    values = installed[-1].desired[stack.release_key("envoy-gateway")]["spec"]["forProvider"]
    apis = values["values"]["config"]["envoyGateway"]["extensionApis"]
    assert apis.get(flag) is True, f"{composing[0]} composes a {kind}, refused without {flag}"


ORDER = [
    # what, must be Ready before it is first composed
    ("release-cert-manager", ["namespace"]),
    ("release-trust-manager", ["release-cert-manager", "selfsigned-issuer"]),
    ("release-envoy-gateway", ["namespace"]),
    (
        "release-ai-gateway",
        ["release-ai-gateway-crds", "release-envoy-gateway", *stack.gaie_crd_manifests()],
    ),
    ("gateway-class", ["release-envoy-gateway"]),
    ("selfsigned-issuer", ["release-cert-manager"]),
    ("ca-bundle", ["release-trust-manager"]),
    ("client-validation", ["release-envoy-gateway"]),
    ("gateway", ["gateway-class"]),
    *((key, ["namespace"]) for key in stack.gaie_crd_manifests()),
]


@pytest.mark.parametrize(("key", "after"), ORDER, ids=[o[0] for o in ORDER])
def test_each_component_is_created_only_once_its_prerequisites_are_ready(
    installed: list[Any], key: str, after: list[str]
) -> None:
    first = {
        k: next(i for i, o in enumerate(installed) if k in o.desired) for k in installed[-1].desired
    }
    for dep in after:
        assert first[dep] < first[key], f"{key} composed before {dep} was ready"


def test_created_components_stay_when_a_prerequisite_flickers(installed: list[Any]) -> None:
    world = cluster_side()
    seen = observe(installed[-1].desired, remote=world, ready=lambda n: n != "release-cert-manager")
    out = run(compose, request(INSTALL, required=gateways("public"), observed=seen))
    assert set(out.desired) == set(installed[-1].desired)
    assert out.conditions["StackReady"][:2] == ("False", "Installing")
    assert "release-cert-manager (installing)" in out.conditions["StackReady"][2]


def test_stack_ready_once_every_component_is(installed: list[Any]) -> None:
    assert installed[0].conditions["StackReady"][:2] == ("False", "Installing")
    status, reason, message = installed[-1].conditions["StackReady"]
    assert (status, reason) == ("True", "StackInstalled")
    assert "cert-manager v1.21.2" in message
    assert installed[-1].xr_ready


def test_gateway_class_is_served_by_envoy_gateway(installed: list[Any]) -> None:
    gc = manifest_of(installed[-1].desired["gateway-class"])
    assert gc["metadata"]["name"] == "envoy"
    assert gc["spec"] == {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}


def test_gaie_crds_are_the_pinned_upstream_files_without_status(installed: list[Any]) -> None:
    upstream = {}
    pinned = crds.fetch() / "gateway-api-inference-extension" / gaie_crds.VERSION
    for path in sorted(pinned.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        crd.pop("status", None)
        upstream[f"crd-{crd['metadata']['name']}"] = crd
    assert len(upstream) == len(list(pinned.glob("*.yaml"))) == 2
    for key, crd in upstream.items():
        obj = installed[-1].desired[key]
        assert manifest_of(obj) == {
            **crd,
            "metadata": {
                **crd["metadata"],
                "labels": {
                    "app.kubernetes.io/managed-by": "fleetgate",
                    "fleetgate.dev/cluster": "eu-west",
                },
            },
        }
        assert "Delete" not in obj["spec"]["managementPolicies"], "CRDs outlive the cluster's XR"


def test_without_install_nothing_of_the_stack_is_composed() -> None:
    out = settle(cluster_xr(), gateways("public"), remote=cluster_side())[-1]
    assert not [k for k in out.desired if k.startswith(("release-", "crd-", "gateway-class"))]
    assert "helm-provider-config" not in out.desired
    assert "StackReady" not in out.conditions


# --- install order over the composed Releases: the InferencePool backend last ------

EG, AIGW = stack.release_key("envoy-gateway"), stack.release_key("ai-gateway")
BACKENDS = ("config", "envoyGateway", "extensionManager", "backendResources")


def _backends(release: dict[str, Any]) -> Any:
    value: Any = release["spec"]["forProvider"]["values"]
    for part in BACKENDS:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def test_envoy_gateway_is_given_inference_pools_only_once_ai_gateway_is_ready(
    installed: list[Any],
) -> None:
    # Envoy Gateway v1.8.3 can list InferencePools only with the RBAC the
    # ai-gateway chart ships; configured with the backend before, it never
    # turns ready (and its Helm wait never ends).
    composed = [i for i, o in enumerate(installed) if EG in o.desired]
    with_pools = [i for i in composed if _backends(installed[i].desired[EG]) is not None]
    ai_gateway = next(i for i, o in enumerate(installed) if AIGW in o.desired)
    assert composed[0] < ai_gateway, "Envoy Gateway first, with AI Gateway's base values"
    assert _backends(installed[composed[0]].desired[EG]) is None
    assert with_pools, "InferencePool support is never added"
    # Composed in one pass, observed Ready the next: only then the upgrade.
    assert with_pools[0] > ai_gateway
    assert with_pools == composed[composed.index(with_pools[0]) :], "never taken back"
    values = installed[-1].desired[EG]["spec"]["forProvider"]["values"]
    assert values["deployment"]["pod"]["annotations"] == {"fleetgate.dev/addons": "inference-pool"}


def test_the_stack_installs_when_envoy_gateway_needs_ai_gateways_rbac() -> None:
    """Envoy Gateway is Ready only once it may list what it watches: the inference-pool
    ClusterRole(Binding) of the ai-gateway chart, applied a pass after that chart."""
    rbac = False

    def as_helm_judges(out: Outcome) -> dict[str, Any]:
        nonlocal rbac
        blocked = EG in out.desired and _backends(out.desired[EG]) is not None and not rbac
        rbac = rbac or AIGW in out.desired
        seen = observe(
            out.desired, remote=cluster_side(), ready=lambda n: not (blocked and n == EG)
        )
        return seen

    def answer(seen: dict[str, Any] | None) -> Outcome:
        return run(compose, request(INSTALL, required=gateways("public"), observed=seen or {}))

    passes = support.settle(answer, as_helm_judges, what="the stack")
    assert [out.fatal for out in passes if out.fatal] == []
    out = passes[-1]
    assert out.conditions["StackReady"][:2] == ("True", "StackInstalled"), out.conditions
    assert _backends(out.desired[EG]) == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
    ]


def test_stack_is_not_ready_while_an_addon_waits(installed: list[Any]) -> None:
    world = cluster_side()
    desired = copy.deepcopy(installed[-1].desired)
    values = desired[EG]["spec"]["forProvider"]["values"]
    del values["config"]["envoyGateway"]["extensionManager"]["backendResources"]
    seen = observe(desired, remote=world, ready=lambda n: n != AIGW)
    out = run(compose, request(INSTALL, required=gateways("public"), observed=seen))
    assert _backends(out.desired[EG]) is None
    status, reason, message = out.conditions["StackReady"]
    assert (status, reason) == ("False", "Installing")
    assert f"{EG} inference-pool (after {AIGW})" in message
    assert out.composite_ready == "READY_FALSE"


def test_inference_pool_support_stays_when_ai_gateway_flickers(installed: list[Any]) -> None:
    seen = observe(installed[-1].desired, remote=cluster_side(), ready=lambda n: n != AIGW)
    out = run(compose, request(INSTALL, required=gateways("public"), observed=seen))
    assert out.desired[EG] == installed[-1].desired[EG]


# --- uninstall safety: removing the stack deletes nothing on the cluster ------------


def test_nothing_of_the_stack_is_deleted_with_it(installed: list[Any]) -> None:
    # ai-gateway-crds v1.1.0 ships its CRDs as plain templates: uninstalled, every
    # AIGatewayRoute, AIServiceBackend and BackendSecurityPolicy goes with them.
    final = installed[-1].desired
    for key in [*stack.crd_keys(), *(stack.release_key(c.key) for c in stack.CHARTS)]:
        assert final[key]["spec"]["managementPolicies"] == [
            "Observe",
            "Create",
            "Update",
            "LateInitialize",
        ], key
    assert "Delete" not in final["gateway-class"]["spec"]["managementPolicies"]


# --- propagation: watched Objects, and a deliberate TTL --------------------------


def _reads_remote(obj: dict[str, Any]) -> bool:
    spec = obj["spec"]
    return bool(
        spec.get("managementPolicies") == ["Observe"]
        or spec["readiness"] != {"policy": "SuccessfulCreate"}
    )


def test_every_object_read_back_is_watched(installed: list[Any]) -> None:
    objects = {k: o for k, o in installed[-1].desired.items() if o["kind"] == "Object"}
    watched = {k for k, o in objects.items() if o["spec"].get("watch") is True}
    assert watched == {k for k, o in objects.items() if _reads_remote(o)}
    # The gateway's address and the published cluster CA are read from the remote objects.
    assert {"gateway", "ca-published", "namespace", "ca-bundle"} <= watched
    assert "client-cas" not in watched, "a ConfigMap ready once created: nothing to watch"


def test_ttl_is_short_while_waiting_and_longer_once_settled(installed: list[Any]) -> None:
    # Crossplane v2.2 requeues a realtime XR only after its TTL; the gateways'
    # client CAs are required resources, seen only then.
    assert installed[0].rsp.meta.ttl.ToSeconds() == pacing.WAITING_MIN.total_seconds()
    assert installed[-1].xr_ready
    assert installed[-1].rsp.meta.ttl.ToSeconds() == pacing.SETTLED.total_seconds()
