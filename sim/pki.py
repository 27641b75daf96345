"""Throwaway X.509 material for tests and the fleet walk: CAs and leaves signed by them.

What cert-manager would issue on a workload cluster, made here so that
CA ConfigMaps in observed state hold real certificates a test can parse.
In ``sim`` because its controllers issue them (``sim.controllers``); the
tests, the benchmarks and the real control plane's drivers take theirs from
here too.
"""

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes
    cert: x509.Certificate
    key: CertificateIssuerPrivateKeyTypes


def load(cert_pem: bytes, key_pem: bytes) -> KeyPair:
    """A key pair someone else issued (e.g. Crossplane's root CA), to sign with."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey), type(key)
    return KeyPair(cert_pem, key_pem, x509.load_pem_x509_certificate(cert_pem), key)


def _pem(key: CertificateIssuerPrivateKeyTypes) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(cn: str, organization: str = "") -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if organization:  # Kubernetes reads a client certificate's O as its groups
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def ca(common_name: str, valid_for: datetime.timedelta = _DAY) -> KeyPair:
    """A self-signed CA, valid from a day ago for ``valid_for`` from now.

    A day suits a test run; material kept in a file (an example's published
    CA) needs years, or it expires under the tests (``e2e.example_cas``).
    """
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + valid_for)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem(key), cert, key)


def leaf(
    issuer: KeyPair,
    common_name: str,
    *,
    server: bool,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    organization: str = "",
    valid_for: datetime.timedelta = _DAY,
) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organization))
        .issuer_name(issuer.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + valid_for)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(issuer.key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem(key), cert, key)
