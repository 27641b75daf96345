"""The certificates the examples hold are real, outlive the tests, and reissue cleanly."""

import datetime
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from e2e import example_cas
from e2e.fleet import documents
from sim import catalog, pki

SOON = datetime.timedelta(days=365)


def test_every_published_ca_outlives_the_tests() -> None:
    """A CA kept in an example must not expire under the tests (Envoy Gateway refuses it)."""
    soon = datetime.datetime.now(datetime.UTC) + SOON
    expiring, seen = [], 0
    for path in sorted(catalog.EXAMPLES.rglob("*.yaml")):
        for pem in example_cas.pems(list(yaml.safe_load_all(path.read_text()))):
            cert = x509.load_pem_x509_certificate(pem.encode())
            seen += 1
            if cert.not_valid_after_utc < soon:
                expiring.append(
                    f"{path.relative_to(catalog.EXAMPLES)}: {cert.subject.rfc4514_string()}"
                )
    assert seen > 0
    assert expiring == [], "reissue them: python -m e2e.example_cas"


def test_the_fleet_gateway_tls_secret_is_a_real_key_pair_for_its_hostname() -> None:
    """What a user applies first must be a certificate the API server takes without warning."""
    docs = documents()
    gateway = next(d for d in docs if d["kind"] == "InferenceGateway" and d["spec"].get("tls"))
    [ref] = gateway["spec"]["tls"]["certificateRefs"]
    secret = next(d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == ref["name"])
    assert secret["type"] == "kubernetes.io/tls"
    pair = pki.load(
        secret["stringData"]["tls.crt"].encode(), secret["stringData"]["tls.key"].encode()
    )
    assert pair.cert.public_key() == pair.key.public_key()
    names = pair.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert gateway["spec"]["hostname"] in names.get_values_for_type(x509.DNSName)


def _one_day_ca(name: str, indent: int) -> str:
    pem = pki.ca(name).cert_pem.decode().removesuffix("\n")
    return "\n".join(" " * indent + line for line in pem.split("\n"))


def test_a_reissue_keeps_comments_and_layout(tmp_path: Path) -> None:
    block = tmp_path / "block.yaml"
    block.write_text(
        "# kept\napiVersion: v1\nkind: ConfigMap\n"
        "data:\n  # kept too\n  ca.crt: |\n" + _one_day_ca("cluster-a", 4) + "\n"
    )
    before = block.read_text()
    written = example_cas.renew([block], within=SOON, valid_for=10 * SOON)
    after = block.read_text()
    assert written == [block]
    assert after != before
    assert [line for line in after.splitlines() if "kept" in line] == ["# kept", "  # kept too"]
    [pem] = example_cas.pems(list(yaml.safe_load_all(after)))
    renewed = x509.load_pem_x509_certificate(pem.encode())
    assert renewed.not_valid_after_utc > datetime.datetime.now(datetime.UTC) + 5 * SOON


def test_a_quoted_ca_in_a_hand_written_file_is_refused_untouched(tmp_path: Path) -> None:
    pem = pki.ca("cluster-b").cert_pem.decode()
    quoted = tmp_path / "quoted.yaml"
    quoted.write_text(
        "data:\n  ca.crt: " + yaml.safe_dump(pem, default_style="'").strip() + "  # why\n"
    )
    before = quoted.read_text()
    with pytest.raises(SystemExit, match="renew it by hand"):
        example_cas.renew([quoted], within=SOON, valid_for=10 * SOON)
    assert quoted.read_text() == before
