"""What the gRPC tests share: a CA as Crossplane's function runner has one, and real requests."""

from dataclasses import dataclass
from pathlib import Path

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from sim import pki
from tests.hardening.harness import SCRIPTS, settle


@dataclass(frozen=True)
class Certs:
    ca: pki.KeyPair
    client: pki.KeyPair
    stranger: pki.KeyPair  # a client certificate from another CA
    server_dir: Path  # what --tls-certs-dir points at: tls.crt, tls.key, ca.crt


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    """A CA as Crossplane's function runner has one, a server and a client certificate."""
    ca = pki.ca("fleetgate test CA")
    server = pki.leaf(ca, "function", server=True, dns=("localhost",), ips=("127.0.0.1",))
    client = pki.leaf(ca, "crossplane", server=False)
    stranger_ca = pki.ca("some other CA")
    stranger = pki.leaf(stranger_ca, "crossplane", server=False)
    server_dir = tmp_path_factory.mktemp("tls")
    (server_dir / "tls.crt").write_bytes(server.cert_pem)
    (server_dir / "tls.key").write_bytes(server.key_pem)
    (server_dir / "ca.crt").write_bytes(ca.cert_pem)
    return Certs(ca, client, stranger, server_dir)


@pytest.fixture(scope="session")
def fleet_requests() -> dict[str, list[fnv1.RunFunctionRequest]]:
    """Console script → every request the settled example fleet sent it, largest first.

    Real requests (observed resources, resolved requirements, Secrets among
    them), from walking examples/fleet in process.
    """
    fleet = settle()
    found: dict[str, list[fnv1.RunFunctionRequest]] = {name: [] for name in SCRIPTS.values()}
    for answered in fleet.calls:
        kind = answered.req.observed.composite.resource.fields["kind"].string_value
        found[SCRIPTS[kind]].append(answered.req)
    return {name: sorted(reqs, key=lambda r: -r.ByteSize())[:40] for name, reqs in found.items()}


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("function-logs")
