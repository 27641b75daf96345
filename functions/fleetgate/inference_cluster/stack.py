"""The serving stack a cluster runs, installed when ``spec.stack.install`` is true.

Every pinned version lives in ``CHARTS`` (and ``gaie_crds.VERSION``): bumping
a component is one line here. Each component names what it waits for; the
composer creates it only once those are Ready (Helm installs run with
``wait``, so a Ready release means its workloads are up), and never removes it
again because a prerequisite flickers.

The order is upstream's (envoyproxy/ai-gateway v1.1.0,
site/docs/capabilities/inference/aigatewayroute-inferencepool.md:14-37): Envoy
Gateway with AI Gateway's base values, then AI Gateway, and only then
InferencePool support added to Envoy Gateway (an ``Addon``, a Helm upgrade of
the same release). Envoy Gateway v1.8.3 watches every extension backend
resource it is configured with (internal/provider/kubernetes/controller.go:
154-156, 2847-2857) and reports ready only once its caches sync
(internal/provider/kubernetes/kubernetes.go:389-392), but its chart grants no
RBAC on ``inference.networking.k8s.io`` (charts/gateway-helm/templates/
_rbac.tpl): the ClusterRole and binding that let it list InferencePools ship
with the AI Gateway chart (manifests/charts/ai-gateway-helm/templates/
envoy_gateway_cluster_role_for_inference_pool.yaml:10-37). Configured with the
InferencePool backend before that RBAC exists, Envoy Gateway never turns
ready, its Helm wait times out, and the release that would grant the RBAC is
never created.

Removing the stack (``stack.install: false``, or deleting the XR) uninstalls
nothing: every Release, the GAIE CRD Objects and the GatewayClass are composed
without the Delete management policy, so Fleetgate stops managing them and
they stay. A CRD uninstalled with its release deletes every object of its kind
on the cluster, and those objects are other XRs' (the ai-gateway-crds chart
ships its CRDs as plain templates, without ``helm.sh/resource-policy: keep``:
manifests/charts/ai-gateway-crds-helm/templates/*.yaml, v1.1.0). The releases
without CRDs stay too: Envoy Gateway, still configured with the InferencePool
backend, never turns ready again once the ai-gateway release and the
InferencePool RBAC it carries are gone, and the cluster gateway still running
on the GatewayClass would stop being programmed without it.
"""

from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from fleetgate.core.constants import (
    CALLER_HEADER,
    CALLER_METADATA_KEY,
    ENDPOINT_ATTRIBUTE,
    ENDPOINT_HEADER,
    GATEWAY_ATTRIBUTE,
    GATEWAY_HEADER,
    SYSTEM_NAMESPACE,
    TIER_ATTRIBUTE,
    TIER_HEADER,
    TIER_METADATA_KEY,
)
from fleetgate.core.names import resource_key
from fleetgate.core.objects import Manifest
from fleetgate.core.observed import Observed
from fleetgate.core.readiness import Stamp, condition_query
from fleetgate.inference_cluster import gaie_crds
from fleetgate.inference_cluster.builders import KEEP_ON_DELETE

HELM_API_VERSION: Final = "helm.m.crossplane.io/v1beta1"
JETSTACK: Final = "https://charts.jetstack.io"
ENVOY_OCI: Final = "oci://docker.io/envoyproxy"
KEDA_CHARTS: Final = "https://kedacore.github.io/charts"
EG_NAMESPACE: Final = "envoy-gateway-system"
AIGW_NAMESPACE: Final = "envoy-ai-gateway-system"
EG_CONTROLLER: Final = "gateway.envoyproxy.io/gatewayclass-controller"
# The AI Gateway controller serves Envoy Gateway's extension hooks here.
AIGW_EXTENSION_HOST: Final = f"ai-gateway-controller.{AIGW_NAMESPACE}.svc.cluster.local"
AIGW_EXTENSION_PORT: Final = 1063
# The one gRPC message Envoy Gateway sends AI Gateway's extension server per
# gateway translation grows with every route on the gateway, and both ends
# default to 4 MiB: measured (bench/extension_message), that is ~480
# ModelServices of 3 backends, ~120 of 16. Past it the gateway's xDS stops
# updating (failOpen false). 32 MiB carries eight times as many.
EXTENSION_MESSAGE_MAX_BYTES: Final = 32 * 1024 * 1024
EXTENSION_MESSAGE_MAX: Final = f"{EXTENSION_MESSAGE_MAX_BYTES // 2**20}Mi"
# Envoy Gateway's rate-limit service keeps each caller's counters here: one
# Redis per cluster, so budgets are per gateway (see RATE_LIMIT_REDIS_URL).
RATE_LIMIT_REDIS: Final = "fleetgate-ratelimit-redis"
RATE_LIMIT_REDIS_PORT: Final = 6379
RATE_LIMIT_REDIS_URL: Final = (
    f"{RATE_LIMIT_REDIS}.{EG_NAMESPACE}.svc.cluster.local:{RATE_LIMIT_REDIS_PORT}"
)
# Debian bookworm's redis-server, the version the real control plane runs.
RATE_LIMIT_REDIS_IMAGE: Final = "docker.io/library/redis:7.0.15"
# The pods of the rate-limit service Envoy Gateway provisions in its namespace
# (rateLimitLabels, internal/infrastructure/kubernetes/ratelimit/resource.go:
# 130-137 at v1.8.3; InfraName "envoy-ratelimit"): the only pods that may reach
# its Redis, where every caller's counters are.
RATE_LIMIT_SERVICE_LABELS: Final = {
    "app.kubernetes.io/name": "envoy-ratelimit",
    "app.kubernetes.io/component": "ratelimit",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}


def _header_mapping(pairs: dict[str, str]) -> str:
    """``header:attribute,...``, as internalapi.ParseRequestHeaderAttributeMapping reads it."""
    return ",".join(f"{header}:{attribute}" for header, attribute in pairs.items())


# What AI Gateway's external processor copies from each attempt's request
# headers, after the backend's header mutation (internal/extproc/
# processor_impl.go:376-412 then 450, 460 at v1.1.0): into the dynamic metadata
# the fleet gateways' usage records read, and into the labels of its GenAI
# metrics, which it records once per request, through the router filter, with
# the headers of the attempt that answered, failed or not (processor_impl.go:
# 169-187, 538-551; internal/metrics/metrics_impl.go:110-127). Headers a third
# party must not see are removed upstream but stay readable here
# (internal/headermutator/header_mutator.go:41-46).
USAGE_RECORD_HEADERS: Final = {CALLER_HEADER: CALLER_METADATA_KEY, TIER_HEADER: TIER_METADATA_KEY}
# Only what the PrometheusRules read (model_service/alerts.py): the tier (the
# failover ratios), the endpoint (its prices, the spend) and the gateway (which
# fleet gateway, as several may share a cluster and a Prometheus). Never the
# caller: every label multiplies each of AI Gateway's four histograms (~125
# series per endpoint and API a service answers, docs/failover.md), and
# its OpenTelemetry SDK keeps at most 2000 label sets per histogram, counting
# the rest under one label-less overflow set the alerts cannot see
# (go.opentelemetry.io/otel/sdk/metric v1.44.0 config.go:28, doc.go:51-57).
# What each caller used is in the usage record, which names the caller.
METRIC_HEADERS: Final = {
    TIER_HEADER: TIER_ATTRIBUTE,
    GATEWAY_HEADER: GATEWAY_ATTRIBUTE,
    ENDPOINT_HEADER: ENDPOINT_ATTRIBUTE,
}


class Addon(NamedTuple):
    """Values a release gains once other components are Ready: a Helm upgrade, never undone."""

    name: str
    after: tuple[str, ...]
    """Components of the stack that must be Ready first."""
    values: Mapping[str, Any]
    marker: tuple[str, ...]
    """A path into the values that only this addon sets: how an applied addon is recognised."""


class Chart(NamedTuple):
    """One Helm release of the serving stack."""

    key: str
    chart: str
    repository: str
    version: str
    namespace: str
    after: tuple[str, ...] = ()
    """Components of the stack that must be Ready first."""
    after_resources: tuple[str, ...] = ()
    """Other composed resources (by composition name) that must be Ready first."""
    values: Mapping[str, Any] = MappingProxyType({})
    addons: tuple[Addon, ...] = ()

    @property
    def release(self) -> str:
        """The Helm release name on the cluster (Helm allows 53 characters)."""
        return f"fleetgate-{self.key}"


GAIE_CRDS: Final = "gaie-crds"
"""Pseudo-component standing for the Gateway API Inference Extension CRD Objects."""

# Envoy Gateway's deployment has no checksum of its config (charts/gateway-helm/
# templates/envoy-gateway-deployment.yaml:21-26, v1.8.3): a changed pod
# annotation rolls it, as upstream's `kubectl rollout restart` does
# (aigatewayroute-inferencepool.md:29-36), so the Helm wait judges the new
# configuration, informers and RBAC included.
ADDONS_ANNOTATION: Final = "fleetgate.dev/addons"
INFERENCE_POOL_BACKEND: Final = {
    "group": "inference.networking.k8s.io",
    "kind": "InferencePool",
    "version": "v1",
}
INFERENCE_POOL_ADDON: Final = Addon(
    name="inference-pool",
    # ai-gateway itself waits for the GAIE CRDs, so they are there too.
    after=("ai-gateway",),
    # As upstream's examples/inference-pool/envoy-gateway-values-addon.yaml:21-28.
    values={
        "config": {
            "envoyGateway": {"extensionManager": {"backendResources": [INFERENCE_POOL_BACKEND]}}
        },
        "deployment": {"pod": {"annotations": {ADDONS_ANNOTATION: "inference-pool"}}},
    },
    marker=("config", "envoyGateway", "extensionManager", "backendResources"),
)


# A caller's limits and budgets are the platform's spend control: a request the
# rate-limit service did not answer for is refused (500), not let through as
# Envoy Gateway would by default (failClosed false: api/v1alpha1/
# envoygateway_types.go:574-580, set as the filter's failure_mode_deny at
# internal/xds/translator/ratelimit.go:152-154, v1.8.3). Failing closed, a slow
# answer is a refusal too, so the wait is longer than Envoy Gateway's 20 ms.
RATE_LIMIT_TIMEOUT: Final = "100ms"


def _rate_limit_backend(redis: str) -> dict[str, Any]:
    """Envoy Gateway's rate limiting, counted in Redis at ``redis``, failing closed."""
    backend = {"type": "Redis", "redis": {"url": redis}}
    rate_limit = {"backend": backend, "failClosed": True, "timeout": RATE_LIMIT_TIMEOUT}
    return {"config": {"envoyGateway": {"rateLimit": rate_limit}}}


CHARTS: Final[tuple[Chart, ...]] = (
    Chart(
        key="cert-manager",
        chart="cert-manager",
        repository=JETSTACK,
        version="v1.21.2",
        namespace="cert-manager",
        values={
            # keep: Certificates and Issuers are Objects owned by other XRs; a CRD
            # that vanished under them would leave Objects that never finalise.
            "crds": {"enabled": True, "keep": True},
            # A CA's or client's key Secret is deleted with its Certificate
            # (--enable-certificate-owner-ref, templates/deployment.yaml:143-145,
            # v1.21.2). Without it the Secret outlives the cluster's or gateway's
            # registration and a new registration under the same name reuses
            # the old key: cert-manager keeps a Secret whose certificate still
            # matches the names asked for (internal/controller/certificates/
            # policies/checks.go:214-252).
            "enableCertificateOwnerRef": True,
        },
    ),
    Chart(
        key="trust-manager",
        chart="trust-manager",
        repository=JETSTACK,
        version="v0.25.0",
        namespace="cert-manager",
        # Not merely after cert-manager: trust-manager's own Issuer and
        # Certificate race cert-manager's admission webhook and the install
        # fails for good. A Ready Issuer of ours proves the webhook admits them.
        after=("cert-manager",),
        after_resources=("selfsigned-issuer",),
        values={
            "crds": {"enabled": True, "keep": True},
            # Bundles read their source Secrets from the trust namespace; the
            # CA Secrets live in fleetgate-system (see core/pki.py).
            "app": {"trust": {"namespace": SYSTEM_NAMESPACE}},
            # The public CA package is not used and costs an image pull.
            "defaultPackage": {"enabled": False},
        },
    ),
    Chart(
        key="envoy-gateway",
        chart="gateway-helm",
        repository=ENVOY_OCI,
        version="v1.8.3",
        namespace=EG_NAMESPACE,
        # AI Gateway's base values (manifests/envoy-gateway-values.yaml:20-57,
        # v1.1.0); the InferencePool backend comes later, as an addon.
        values={
            "config": {
                "envoyGateway": {
                    # The chart enables no extension API (charts/gateway-helm/
                    # values.tmpl.yaml:139, v1.8.3). Without enableBackend every
                    # Backend is refused (internal/gatewayapi/backend.go:25-28).
                    # Without enableEnvoyPatchPolicy Envoy Gateway does not watch
                    # EnvoyPatchPolicies (internal/provider/kubernetes/
                    # controller.go:2645) and refuses each with reason Disabled
                    # (internal/gatewayapi/envoypatchpolicy.go:93-107, the flag
                    # read at internal/gatewayapi/runner/runner.go:268), so the
                    # patch making a ModelRoute's priority tiers strict is lost.
                    "extensionApis": {"enableBackend": True, "enableEnvoyPatchPolicy": True},
                    # Without a backend Envoy Gateway refuses every global rate
                    # limit (internal/gatewayapi/backendtrafficpolicy.go:1439-
                    # 1444), the callers' limits among them; with one it runs
                    # the rate-limit service and serves it its configuration.
                    **_rate_limit_backend(RATE_LIMIT_REDIS_URL)["config"]["envoyGateway"],
                    "extensionManager": {
                        "hooks": {
                            "xdsTranslator": {
                                "translation": {
                                    kind: {"includeAll": True}
                                    for kind in ("listener", "route", "cluster", "secret")
                                },
                                "post": ["Translation", "Cluster", "Route"],
                            }
                        },
                        "service": {
                            "fqdn": {
                                "hostname": AIGW_EXTENSION_HOST,
                                "port": AIGW_EXTENSION_PORT,
                            }
                        },
                        # Caps both directions on Envoy Gateway's side (internal/
                        # extension/registry/extension_manager.go:391-401, v1.8.3).
                        "maxMessageSize": EXTENSION_MESSAGE_MAX,
                    },
                }
            }
        },
        addons=(INFERENCE_POOL_ADDON,),
        # Its subchart's CRDs sit in crds/ (charts/gateway-helm/charts/crds/crds/),
        # which Helm never deletes; its Gateways and policies are other XRs'.
    ),
    Chart(
        key="ai-gateway-crds",
        chart="ai-gateway-crds-helm",
        repository=ENVOY_OCI,
        version="v1.1.0",
        namespace=AIGW_NAMESPACE,
    ),
    Chart(
        key="ai-gateway",
        chart="ai-gateway-helm",
        repository=ENVOY_OCI,
        version="v1.1.0",
        namespace=AIGW_NAMESPACE,
        # Its controller serves Envoy Gateway's extension hooks and needs
        # Envoy Gateway's and its own CRDs; it looks for the InferencePool CRD
        # once, at start (internal/controller/controller.go:192-204, v1.1.0),
        # and runs no InferencePool controller if it is missing.
        after=("ai-gateway-crds", "envoy-gateway", GAIE_CRDS),
        values={
            "controller": {
                # Also replaces the default mapping (agent-session-id), which
                # would record a header Fleetgate never sets.
                "logRequestHeaderAttributes": _header_mapping(USAGE_RECORD_HEADERS),
                "metricsRequestHeaderAttributes": _header_mapping(METRIC_HEADERS),
                # What its extension server takes from Envoy Gateway (cmd/controller/
                # main.go:234-238, 464 at v1.1.0; the chart passes it on as
                # --maxRecvMsgSize, templates/deployment.yaml:104-106).
                "maxRecvMsgSize": str(EXTENSION_MESSAGE_MAX_BYTES),
            }
        },
    ),
    # The scaler of ModelDeployments with spec.scaling (their ScaledObjects). It needs
    # nothing of the rest of the stack; the chart's defaults (operator, metrics API
    # server, admission webhooks) are what KEDA documents. The chart's version is
    # KEDA's own (kedacore/charts keda/Chart.yaml keeps version == appVersion).
    Chart(
        key="keda",
        chart="keda",
        repository=KEDA_CHARTS,
        version="2.20.0",
        namespace="keda",
    ),
)


def rate_limit_redis() -> list[Manifest]:
    """The Redis the rate-limit service counts in: a Deployment, its Service, and the
    NetworkPolicy admitting only the rate-limit service.

    Counters only: no persistence, so a restart forgets the current windows
    (callers get a fresh allowance), as Envoy Gateway's own example does.
    Redis here has no password (Envoy Gateway v1.8.3 passes the rate-limit
    service no REDIS_AUTH, and a password would have to be made on the
    cluster): any pod reaching it could reset or inflate any caller's
    counters, so ingress is admitted from Envoy Gateway's rate-limit pods
    only, on the Redis port. It holds where the cluster's network plugin
    enforces NetworkPolicy (Calico, Cilium and the managed offerings' policy
    modes do; a plugin that does not leaves Redis open to the cluster).
    """
    labels = {"app.kubernetes.io/name": RATE_LIMIT_REDIS}
    meta = {"name": RATE_LIMIT_REDIS, "namespace": EG_NAMESPACE}
    container = {
        "name": "redis",
        "image": RATE_LIMIT_REDIS_IMAGE,
        "args": ["--save", "", "--appendonly", "no"],
        "ports": [{"name": "redis", "containerPort": RATE_LIMIT_REDIS_PORT}],
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": dict(meta),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": dict(meta),
            "spec": {
                "selector": labels,
                "ports": [{"name": "redis", "port": RATE_LIMIT_REDIS_PORT, "targetPort": "redis"}],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": dict(meta),
            "spec": {
                "podSelector": {"matchLabels": labels},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        # A podSelector alone: pods of this namespace, Envoy Gateway's.
                        "from": [{"podSelector": {"matchLabels": dict(RATE_LIMIT_SERVICE_LABELS)}}],
                        "ports": [{"protocol": "TCP", "port": RATE_LIMIT_REDIS_PORT}],
                    }
                ],
            },
        },
    ]


def redis_key(kind: str) -> str:
    """Composition name of the rate-limit Redis's Deployment or Service."""
    return resource_key("ratelimit-redis-", kind.lower())


def release_key(component: str) -> str:
    """Composition name of a component's Release."""
    return resource_key("release-", component)


def crd_key(crd_name: str) -> str:
    """Composition name of one vendored CRD's Object."""
    return resource_key("crd-", crd_name)


def merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in, maps recursively (as Helm merges values files)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def carries(observed: Observed, addon: Addon) -> bool:
    """Whether an observed Release was already composed with ``addon``."""
    return observed.get("spec", "forProvider", "values", *addon.marker) is not None


def release(
    chart: Chart,
    *,
    provider_config: str,
    addons: tuple[Addon, ...] = (),
    redis: str | None = None,
) -> Manifest:
    """A provider-helm Release of ``chart`` on the cluster behind ``provider_config``.

    ``redis``: where Envoy Gateway's rate-limit service counts, when not in the
    stack's own Redis on the cluster.
    """
    values: dict[str, Any] = dict(chart.values)
    for addon in addons:
        values = merged(values, addon.values)
    if redis is not None and chart.key == "envoy-gateway":
        values = merged(values, _rate_limit_backend(redis))
    spec: dict[str, Any] = {
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": provider_config},
        "forProvider": {
            "chart": {
                "repository": chart.repository,
                "name": chart.chart,
                "version": chart.version,
            },
            "namespace": chart.namespace,
            # Ready only once the workloads are: dependants start after.
            "wait": True,
            "waitTimeout": "10m",
            "values": values,
        },
        # Never uninstalled (see the module's doc): without Delete, provider-helm
        # leaves the release installed when the Release object goes.
        "managementPolicies": list(KEEP_ON_DELETE),
    }
    return {
        "apiVersion": HELM_API_VERSION,
        "kind": "Release",
        "metadata": {
            # A cluster-scoped XR's namespaced resources name their namespace.
            "namespace": SYSTEM_NAMESPACE,
            # The Helm release name; the Release object's own name is Crossplane's.
            "annotations": {"crossplane.io/external-name": chart.release},
        },
        "spec": spec,
    }


def gaie_crd_manifests() -> dict[str, Manifest]:
    """The Inference Extension CRDs keyed by composition name, ready to wrap in Objects."""
    manifests = {}
    for crd in gaie_crds.crds():
        # Upstream ships an empty status; applying it makes the Object re-apply forever.
        crd.pop("status", None)
        crd["metadata"].pop("creationTimestamp", None)
        manifests[crd_key(crd["metadata"]["name"])] = crd
    return dict(sorted(manifests.items()))


@cache
def crd_keys() -> tuple[str, ...]:
    """Composition names of the CRD Objects, without building their manifests."""
    return tuple(gaie_crd_manifests())


# A CRD's conditions are stamped with observedGeneration only behind the
# CRDObservedGenerationTracking feature gate (k8s.io/apiextensions-apiserver
# v0.35.4 pkg/apis/apiextensions/v1/types.go:353-358): judged where stamped.
CRD_READY: Final = condition_query("Established", Stamp.OPTIONAL)


def gateway_class(name: str) -> Manifest:
    """The GatewayClass of the cluster gateway, served by Envoy Gateway."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": name},
        "spec": {"controllerName": EG_CONTROLLER},
    }
