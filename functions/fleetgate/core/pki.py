"""Private certificate authorities on a workload cluster, as cert-manager and trust-manager objects.

Every CA Fleetgate composes follows one chain: a self-signed Issuer signs a
CA Certificate, whose Secret backs a CA Issuer that signs leaf certificates.
The private key never leaves the cluster: only the CA *certificate* travels,
published by a trust-manager Bundle into a ConfigMap that Crossplane
observes (an Observed Secret would be copied into the Object's status).

trust-manager reads Bundle sources from its trust namespace, so the serving
stack runs trust-manager with ``app.trust.namespace`` set to
``fleetgate-system``, where the CA Secrets live.
"""

from typing import Any, Final, NamedTuple

from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.names import common_name, object_name
from fleetgate.core.objects import Manifest

CERT_MANAGER: Final = "cert-manager.io/v1"
TRUST_MANAGER: Final = "trust.cert-manager.io/v1alpha1"
BUNDLE_KEY: Final = "ca.crt"
CA_DURATION: Final = "87600h"  # ten years; leaves renew far more often under it
LEAF_DURATION: Final = "2160h"
LEAF_RENEW_BEFORE: Final = "720h"


def _meta(name: str, namespace: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "fleetgate"}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _private_key() -> dict[str, Any]:
    return {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}


class CertificateAuthority(NamedTuple):
    """One private CA, its objects named from ``prefix`` (unique on the cluster)."""

    prefix: str
    subject: str
    namespace: str = SYSTEM_NAMESPACE

    @property
    def self_signed_issuer(self) -> str:
        return object_name(self.prefix, "selfsigned")

    @property
    def ca_secret(self) -> str:
        return object_name(self.prefix, "ca")

    @property
    def issuer(self) -> str:
        return object_name(self.prefix, "ca-issuer")

    @property
    def bundle(self) -> str:
        """The Bundle's name, which is also the name of the ConfigMap it writes."""
        return object_name(self.prefix, "ca-bundle")

    def manifests(self) -> dict[str, Manifest]:
        """The CA's objects keyed by role, in the order they depend on each other."""
        return {
            "selfsigned-issuer": {
                "apiVersion": CERT_MANAGER,
                "kind": "Issuer",
                "metadata": _meta(self.self_signed_issuer, self.namespace),
                "spec": {"selfSigned": {}},
            },
            "ca-certificate": {
                "apiVersion": CERT_MANAGER,
                "kind": "Certificate",
                "metadata": _meta(self.ca_secret, self.namespace),
                "spec": {
                    "isCA": True,
                    "commonName": common_name(self.subject),
                    "secretName": self.ca_secret,
                    "duration": CA_DURATION,
                    "privateKey": _private_key(),
                    "usages": ["cert sign", "crl sign", "digital signature"],
                    "issuerRef": {
                        "group": "cert-manager.io",
                        "kind": "Issuer",
                        "name": self.self_signed_issuer,
                    },
                },
            },
            "ca-issuer": {
                "apiVersion": CERT_MANAGER,
                "kind": "Issuer",
                "metadata": _meta(self.issuer, self.namespace),
                "spec": {"ca": {"secretName": self.ca_secret}},
            },
            "ca-bundle": {
                "apiVersion": TRUST_MANAGER,
                "kind": "Bundle",
                # Bundles are cluster-scoped: no namespace.
                "metadata": _meta(self.bundle, None),
                "spec": {
                    # A self-signed CA's tls.crt is the CA certificate itself.
                    "sources": [{"secret": {"name": self.ca_secret, "key": "tls.crt"}}],
                    "target": {
                        "configMap": {"key": BUNDLE_KEY},
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": self.namespace}
                        },
                    },
                },
            },
        }

    def published(self) -> Manifest:
        """The ConfigMap trust-manager writes; compose it observe-only to read the CA back."""
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.bundle, "namespace": self.namespace},
        }

    def leaf(
        self,
        name: str,
        *,
        subject: str,
        usages: list[str],
        dns_names: list[str] | None = None,
    ) -> Manifest:
        """A leaf Certificate signed by this CA, stored in Secret ``name``."""
        spec: dict[str, Any] = {
            "secretName": name,
            "commonName": common_name(subject),
            "duration": LEAF_DURATION,
            "renewBefore": LEAF_RENEW_BEFORE,
            "privateKey": _private_key(),
            "usages": usages,
            "issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": self.issuer},
        }
        if dns_names:
            spec["dnsNames"] = dns_names
        return {
            "apiVersion": CERT_MANAGER,
            "kind": "Certificate",
            "metadata": _meta(name, self.namespace),
            "spec": spec,
        }
