"""The serving stack a cluster runs, installed when ``spec.stack.install`` is true.

Every pinned version lives in ``CHARTS`` (and ``gaie_crds.VERSION``): bumping
a component is one line here. Each component names what it waits for; the
composer creates it only once those are Ready (Helm installs run with
``wait``, so a Ready release means its workloads are up), and never removes it
again because a prerequisite flickers.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final

from fleetgate.core.constants import CALLER_HEADER, SYSTEM_NAMESPACE
from fleetgate.core.objects import Manifest
from fleetgate.core.readiness import condition_query
from fleetgate.inference_cluster import gaie_crds

HELM_API_VERSION: Final = "helm.m.crossplane.io/v1beta1"
JETSTACK: Final = "https://charts.jetstack.io"
ENVOY_OCI: Final = "oci://docker.io/envoyproxy"
EG_NAMESPACE: Final = "envoy-gateway-system"
AIGW_NAMESPACE: Final = "envoy-ai-gateway-system"
EG_CONTROLLER: Final = "gateway.envoyproxy.io/gatewayclass-controller"
# The AI Gateway controller serves Envoy Gateway's extension hooks here.
AIGW_EXTENSION_HOST: Final = f"ai-gateway-controller.{AIGW_NAMESPACE}.svc.cluster.local"
AIGW_EXTENSION_PORT: Final = 1063
# Envoy AI Gateway copies this header into the dynamic-metadata key the fleet
# gateways' usage records read the caller from.
CALLER_METADATA_KEY: Final = "caller"


@dataclass(frozen=True)
class Chart:
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
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def release(self) -> str:
        """The Helm release name on the cluster (Helm allows 53 characters)."""
        return f"fleetgate-{self.key}"


GAIE_CRDS: Final = "gaie-crds"
"""Pseudo-component standing for the Gateway API Inference Extension CRD Objects."""

CHARTS: Final[tuple[Chart, ...]] = (
    Chart(
        key="cert-manager",
        chart="cert-manager",
        repository=JETSTACK,
        version="v1.21.1",
        namespace="cert-manager",
        # keep: Certificates and Issuers are Objects owned by other XRs; a CRD
        # that vanished under them would leave Objects that never finalise.
        values={"crds": {"enabled": True, "keep": True}},
    ),
    Chart(
        key="trust-manager",
        chart="trust-manager",
        repository=JETSTACK,
        version="v0.24.0",
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
        # Envoy Gateway watches the InferencePool backend kind below and fails
        # to start its watch when the CRD is missing.
        after=(GAIE_CRDS,),
        values={
            "config": {
                "envoyGateway": {
                    "extensionApis": {"enableBackend": True, "enableEnvoyPatchPolicy": True},
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
                        "backendResources": [
                            {
                                "group": "inference.networking.k8s.io",
                                "kind": "InferencePool",
                                "version": "v1",
                            }
                        ],
                    },
                }
            }
        },
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
        # The chart writes RBAC into Envoy Gateway's namespace.
        after=("ai-gateway-crds", "envoy-gateway"),
        values={
            "controller": {
                # Also replaces the default mapping (agent-session-id), which
                # would record a header Fleetgate never sets.
                "logRequestHeaderAttributes": f"{CALLER_HEADER}:{CALLER_METADATA_KEY}"
            }
        },
    ),
)


def release_key(component: str) -> str:
    """Composition name of a component's Release."""
    return f"release-{component}"


def crd_key(crd_name: str) -> str:
    """Composition name of one vendored CRD's Object."""
    return f"crd-{crd_name}"


def release(chart: Chart, *, provider_config: str) -> Manifest:
    """A provider-helm Release of ``chart`` on the cluster behind ``provider_config``."""
    return {
        "apiVersion": HELM_API_VERSION,
        "kind": "Release",
        "metadata": {
            # A cluster-scoped XR's namespaced resources name their namespace.
            "namespace": SYSTEM_NAMESPACE,
            # The Helm release name; the Release object's own name is Crossplane's.
            "annotations": {"crossplane.io/external-name": chart.release},
        },
        "spec": {
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
                "values": dict(chart.values),
            },
        },
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


CRD_READY: Final = condition_query("Established")


def gateway_class(name: str) -> Manifest:
    """The GatewayClass of the cluster gateway, served by Envoy Gateway."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": name},
        "spec": {"controllerName": EG_CONTROLLER},
    }
