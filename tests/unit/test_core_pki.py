"""The CA chain every Fleetgate PKI is built from."""

from fleetgate.core import names
from fleetgate.core.objects import remote_object
from fleetgate.core.pki import BUNDLE_KEY, CertificateAuthority
from fleetgate.core.secrets import secret_patch

CA = CertificateAuthority(
    prefix="fleetgate-gw-" + "g" * 63, subject="fleetgate gateway " + "g" * 63
)


def test_chain_links_issuer_to_certificate_to_issuer_to_bundle() -> None:
    m = CA.manifests()
    assert list(m) == ["selfsigned-issuer", "ca-certificate", "ca-issuer", "ca-bundle"]
    assert m["selfsigned-issuer"]["spec"] == {"selfSigned": {}}
    cert = m["ca-certificate"]["spec"]
    assert cert["isCA"] is True
    assert cert["issuerRef"]["name"] == m["selfsigned-issuer"]["metadata"]["name"]
    assert m["ca-issuer"]["spec"] == {"ca": {"secretName": cert["secretName"]}}
    bundle = m["ca-bundle"]["spec"]
    assert bundle["sources"] == [{"secret": {"name": cert["secretName"], "key": "tls.crt"}}]
    assert bundle["target"]["configMap"] == {"key": BUNDLE_KEY}


def test_common_names_fit_x509_for_the_longest_owner_names() -> None:
    cert = CA.manifests()["ca-certificate"]["spec"]
    assert len(cert["commonName"].encode()) <= names.COMMON_NAME_MAX
    leaf = CA.leaf("client", subject="fleetgate client " + "c" * 253, usages=["client auth"])
    assert len(leaf["spec"]["commonName"].encode()) <= names.COMMON_NAME_MAX


def test_bundle_is_cluster_scoped_and_everything_else_namespaced() -> None:
    for role, manifest in CA.manifests().items():
        has_namespace = "namespace" in manifest["metadata"]
        assert has_namespace == (role != "ca-bundle"), role


def test_published_configmap_is_the_bundle_target() -> None:
    cm = CA.published()
    assert cm["kind"] == "ConfigMap"
    assert cm["metadata"]["name"] == CA.manifests()["ca-bundle"]["metadata"]["name"]
    assert "data" not in cm, "observe-only: the function never writes the CA itself"


def test_leaf_is_signed_by_the_ca_issuer() -> None:
    leaf = CA.leaf("serving", subject="h", usages=["server auth"], dns_names=["h.example"])
    assert leaf["spec"]["issuerRef"]["name"] == CA.issuer
    assert leaf["spec"]["dnsNames"] == ["h.example"]
    assert leaf["spec"]["secretName"] == "serving"


def test_observe_only_object_never_writes_and_is_ready_on_sight() -> None:
    obj = remote_object(manifest=CA.published(), provider_config="pc", observe_only=True)
    assert obj["spec"]["managementPolicies"] == ["Observe"]
    assert obj["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "pc"}


def test_cluster_scoped_xr_objects_name_their_namespace() -> None:
    obj = remote_object(manifest={}, provider_config="pc", namespace="fleetgate-system")
    assert obj["metadata"] == {"namespace": "fleetgate-system"}


def test_secret_patch_reads_the_key_on_the_control_plane() -> None:
    ref = secret_patch(secret="tls", namespace="ns", key="tls.crt")
    assert ref == {
        "patchesFrom": {
            "apiVersion": "v1",
            "kind": "Secret",
            "name": "tls",
            "namespace": "ns",
            # Brackets: a dotted path would read tls.crt as two nested fields.
            "fieldPath": "data[tls.crt]",
        },
        "toFieldPath": "data[tls.crt]",
    }
    renamed = secret_patch(secret="openai", namespace="ns", key="token", to_key="apiKey")
    assert renamed["toFieldPath"] == "data[apiKey]"
