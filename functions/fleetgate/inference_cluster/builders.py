"""Pure builders for what an InferenceCluster composes: typed inputs in, plain manifests out.

Remote names are fixed per cluster (one InferenceCluster per workload
cluster) and share the ``fleetgate-cluster`` prefix, so they never meet the
objects InferenceGateways compose in the same namespace (``fleetgate-gw-…``).
"""

from collections.abc import Iterable
from typing import Annotated, Final, NamedTuple

from pydantic import Field

from fleetgate.core.constants import LABEL_CLUSTER, SYSTEM_NAMESPACE
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.models import Model, ObjectMeta
from fleetgate.core.names import CLUSTER_GATEWAY, cluster_hostname, dns_label, object_name
from fleetgate.core.objects import Manifest, remote_object
from fleetgate.core.observed import Observed
from fleetgate.core.pki import BUNDLE_KEY, CertificateAuthority

PREFIX: Final = "fleetgate-cluster"
HTTPS_LISTENER: Final = "https"
HTTPS_PORT: Final = 443
SERVING_SECRET: Final = object_name(PREFIX, "gateway-tls")
CLIENT_CAS: Final = object_name(PREFIX, "client-cas")
CLIENT_VALIDATION: Final = object_name(PREFIX, "client-validation")
CA_BUNDLE_KEY: Final = BUNDLE_KEY  # Envoy Gateway reads a CA ConfigMap's ca.crt
PEM_BEGIN: Final = "-----BEGIN CERTIFICATE-----"
PEM_END: Final = "-----END CERTIFICATE-----"
PEM_MAX: Final = 32768  # the XRDs' bound on a published CA certificate

NAMESPACE_READY: Final = (
    "has(object.status) && has(object.status.phase) && object.status.phase == 'Active'"
)
# Never delete: the namespace holds objects other XRs own, and a namespace the
# platform team made before registering the cluster is not ours to remove.
# The same holds for CRDs: deleting one deletes every object of its kind.
KEEP_ON_DELETE: Final = ["Observe", "Create", "Update", "LateInitialize"]


class Site(NamedTuple):
    """What every builder derives from one InferenceCluster."""

    name: str
    hostname: str
    provider_config: str
    helm_provider_config: str
    gateway_class: str
    credentials_secret: tuple[str, str] | None  # (name, key) when Fleetgate composes the configs

    @classmethod
    def of(cls, cluster: InferenceCluster) -> "Site":
        creds = cluster.spec.credentials
        if creds.secret_ref is not None:
            # Prefixed so a composed config never takes the name of one a
            # platform team made (which another cluster may be using as is).
            composed = object_name(PREFIX, cluster.metadata.name)
            secret: tuple[str, str] | None = (creds.secret_ref.name, creds.secret_ref.key)
            provider_config = helm = composed
        else:
            # A given config is used as is; with stack.install the platform team
            # provides the provider-helm ClusterProviderConfig of the same name.
            provider_config = helm = str(creds.provider_config_name)
            secret = None
        return cls(
            name=cluster.metadata.name,
            hostname=cluster_hostname(cluster.metadata.name),
            provider_config=provider_config,
            helm_provider_config=helm,
            gateway_class=cluster.spec.gateway.class_name,
            credentials_secret=secret,
        )

    @property
    def label(self) -> str:
        """Label value naming this cluster on the objects composed onto it."""
        return dns_label(self.name)

    @property
    def ca(self) -> CertificateAuthority:
        return CertificateAuthority(prefix=PREFIX, subject=f"Fleetgate cluster CA {self.name}")

    def remote(
        self,
        manifest: Manifest,
        *,
        readiness_query: str | None = None,
        observe_only: bool = False,
        keep_on_delete: bool = False,
    ) -> Manifest:
        """Wrap ``manifest`` for this cluster, labelled as Fleetgate's."""
        if not observe_only:
            labels = manifest.setdefault("metadata", {}).setdefault("labels", {})
            labels.update({"app.kubernetes.io/managed-by": "fleetgate", LABEL_CLUSTER: self.label})
        obj = remote_object(
            manifest=manifest,
            provider_config=self.provider_config,
            namespace=SYSTEM_NAMESPACE,
            readiness_query=readiness_query,
            observe_only=observe_only,
            # Everything this function waits for or reads back is the remote
            # object's: watched, a change reaches the XR without a poll.
            watch=None,
        )
        if keep_on_delete:
            obj["spec"]["managementPolicies"] = list(KEEP_ON_DELETE)
        return obj


# --- control plane: how Crossplane reaches the cluster ----------------------


def provider_configs(site: Site) -> dict[str, Manifest]:
    """ClusterProviderConfigs reading the kubeconfig Secret, keyed by provider.

    Empty when the cluster names an existing config. The helm one is only
    needed (and returned) by callers installing the stack.
    """
    if site.credentials_secret is None:
        return {}
    name, key = site.credentials_secret
    spec = {
        "credentials": {
            "source": "Secret",
            "secretRef": {"namespace": SYSTEM_NAMESPACE, "name": name, "key": key},
        }
    }
    return {
        "kubernetes": {
            "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
            "kind": "ClusterProviderConfig",
            "metadata": {"name": site.provider_config},
            "spec": spec,
        },
        "helm": {
            "apiVersion": "helm.m.crossplane.io/v1beta1",
            "kind": "ClusterProviderConfig",
            "metadata": {"name": site.helm_provider_config},
            "spec": spec,
        },
    }


# --- the cluster ----------------------------------------------------------------


def namespace(site: Site) -> Manifest:
    """The Fleetgate namespace; creating it is also the proof the cluster is reachable."""
    return site.remote(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE}},
        readiness_query=NAMESPACE_READY,
        keep_on_delete=True,
    )


def serving_certificate(site: Site) -> Manifest:
    """The cluster gateway's serving certificate, for the derived hostname only."""
    return site.ca.leaf(
        SERVING_SECRET,
        subject=site.hostname,
        # ECDSA keys sign; they never encipher, so no "key encipherment".
        usages=["server auth", "digital signature"],
        dns_names=[site.hostname],
    )


# --- trust of the fleet gateways --------------------------------------------------


class _TrustStatus(Model):
    client_ca_certificate: Annotated[str, Field(max_length=PEM_MAX)] | None = Field(
        None, alias="clientCACertificate"
    )


class FleetGateway(Model):
    """The part of an InferenceGateway a cluster reads: its name and published client CA.

    Deliberately narrow: a cluster must not fail over a gateway field it never uses.
    """

    metadata: ObjectMeta
    status: _TrustStatus = Field(default_factory=_TrustStatus)


class Trust(NamedTuple):
    """Which fleet gateways' client CAs the cluster trusts, and which it cannot yet."""

    trusted: tuple[tuple[str, str], ...]  # (gateway name, PEM), sorted by name
    unpublished: tuple[str, ...]
    malformed: tuple[str, ...]

    @property
    def bundle(self) -> str:
        """Every trusted PEM, each newline-terminated, in gateway-name order."""
        return "".join(pem if pem.endswith("\n") else pem + "\n" for _, pem in self.trusted)


def looks_like_certificate(pem: str) -> bool:
    text = pem.strip()
    return text.startswith(PEM_BEGIN) and text.endswith(PEM_END) and len(pem) <= PEM_MAX


def trust(gateways: Iterable[FleetGateway]) -> Trust:
    trusted, unpublished, malformed = [], [], []
    for gw in sorted(gateways, key=lambda g: g.metadata.name):
        pem = gw.status.client_ca_certificate
        if not pem or not pem.strip():
            unpublished.append(gw.metadata.name)
        elif not looks_like_certificate(pem):
            # One bad bundle entry would make Envoy reject the whole policy.
            malformed.append(gw.metadata.name)
        else:
            trusted.append((gw.metadata.name, pem))
    return Trust(tuple(trusted), tuple(unpublished), tuple(malformed))


def client_cas(site: Site, bundle: str) -> Manifest:
    """The ConfigMap of fleet gateway client CAs the cluster gateway validates against."""
    obj = site.remote(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CLIENT_CAS, "namespace": SYSTEM_NAMESPACE},
            "data": {CA_BUNDLE_KEY: bundle},
        }
    )
    obj["spec"]["readiness"] = {"policy": "SuccessfulCreate"}
    return obj


def client_validation(site: Site) -> Manifest:
    """ClientTrafficPolicy: the https listener requires a client certificate from a fleet CA.

    Ready once an ancestor reports it Accepted (``core.readiness``, by kind).
    """
    return site.remote(
        {
            "apiVersion": "gateway.envoyproxy.io/v1alpha1",
            "kind": "ClientTrafficPolicy",
            "metadata": {"name": CLIENT_VALIDATION, "namespace": SYSTEM_NAMESPACE},
            "spec": {
                "targetRefs": [
                    {
                        "group": "gateway.networking.k8s.io",
                        "kind": "Gateway",
                        "name": CLUSTER_GATEWAY,
                        "sectionName": HTTPS_LISTENER,
                    }
                ],
                "tls": {
                    "clientValidation": {
                        # Spelled out although it is the default: this is the
                        # whole point of the policy.
                        "mode": "RequireAndVerify",
                        "caCertificateRefs": [
                            {"group": "", "kind": "ConfigMap", "name": CLIENT_CAS}
                        ],
                    }
                },
            },
        },
    )


def gateway(site: Site) -> Manifest:
    """The cluster gateway: one HTTPS listener for the derived hostname, nothing in plain HTTP.

    Routes attach from fleetgate-system only: everything Fleetgate composes on
    the cluster lives there, and nobody else's HTTPRoute may ride on the
    mutually authenticated hop. Ready once Programmed (``core.readiness``, by
    kind).
    """
    return site.remote(
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": CLUSTER_GATEWAY, "namespace": SYSTEM_NAMESPACE},
            "spec": {
                "gatewayClassName": site.gateway_class,
                "listeners": [
                    {
                        "name": HTTPS_LISTENER,
                        "protocol": "HTTPS",
                        "port": HTTPS_PORT,
                        "hostname": site.hostname,
                        "tls": {
                            "mode": "Terminate",
                            "certificateRefs": [
                                {"group": "", "kind": "Secret", "name": SERVING_SECRET}
                            ],
                        },
                        "allowedRoutes": {"namespaces": {"from": "Same"}},
                    }
                ],
            },
        },
    )


# --- reading back -----------------------------------------------------------------


def gateway_address(observed: Observed) -> str | None:
    """The first address the observed Gateway reports, if any."""
    addresses = observed.remote.get("status", "addresses")
    for address in addresses if isinstance(addresses, list) else []:
        value = address.get("value") if isinstance(address, dict) else None
        if isinstance(value, str) and value and len(value) <= 253:
            return value
    return None
