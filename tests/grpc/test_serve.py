"""Each console script as a real process, called over gRPC as Crossplane calls it."""

import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from crossplane.function.proto.v1beta1 import run_function_pb2 as fnv1beta1
from crossplane.function.proto.v1beta1 import run_function_pb2_grpc as grpcv1beta1

from e2e import pki
from e2e.functions import console_script, wait_for_port

FUNCTIONS = ["compose-model-endpoint"]
TIMEOUT_S = 10.0

ENDPOINT_XR = {
    "apiVersion": "fleetgate.dev/v1alpha1",
    "kind": "ModelEndpoint",
    "metadata": {"name": "openai", "namespace": "team-a"},
    "spec": {"origin": "https://api.openai.com"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Certs:
    ca: pki.KeyPair
    client: pki.KeyPair
    stranger: pki.KeyPair  # a client certificate from another CA
    server_dir: Path  # what --tls-certs-dir points at: tls.crt, tls.key, ca.crt


@pytest.fixture(scope="module")
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


def serve(name: str, *args: str) -> Iterator[str]:
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [console_script(name), "--address", address, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(address, proc, 30)
        yield address
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0, "SIGTERM must stop the function cleanly"


@pytest.fixture(params=FUNCTIONS, scope="module")
def insecure_address(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from serve(request.param, "--insecure")


@pytest.fixture(params=FUNCTIONS, scope="module")
def mtls_address(request: pytest.FixtureRequest, certs: Certs) -> Iterator[str]:
    yield from serve(request.param, "--tls-certs-dir", str(certs.server_dir))


def v1_request() -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="grpc-test"))
    req.observed.composite.resource.update(ENDPOINT_XR)
    return req


def call_v1(channel: grpc.Channel) -> fnv1.RunFunctionResponse:
    stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
    rsp: fnv1.RunFunctionResponse = stub.RunFunction(v1_request(), timeout=TIMEOUT_S)
    return rsp


def call_v1beta1(channel: grpc.Channel) -> fnv1beta1.RunFunctionResponse:
    req = fnv1beta1.RunFunctionRequest()
    req.ParseFromString(v1_request().SerializeToString())
    stub = grpcv1beta1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
    rsp: fnv1beta1.RunFunctionResponse = stub.RunFunction(req, timeout=TIMEOUT_S)
    return rsp


def mtls_channel(address: str, ca: pki.KeyPair, client: pki.KeyPair | None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=ca.cert_pem,
        private_key=client.key_pem if client else None,
        certificate_chain=client.cert_pem if client else None,
    )
    return grpc.secure_channel(address, creds)


def test_v1_insecure(insecure_address: str) -> None:
    with grpc.insecure_channel(insecure_address) as channel:
        rsp = call_v1(channel)
    assert rsp.meta.tag == "grpc-test"
    assert [c.type for c in rsp.conditions] == ["EndpointReady"]


def test_v1beta1_insecure(insecure_address: str) -> None:
    with grpc.insecure_channel(insecure_address) as channel:
        rsp = call_v1beta1(channel)
    assert rsp.meta.tag == "grpc-test"
    assert [c.type for c in rsp.conditions] == ["EndpointReady"]


@pytest.mark.parametrize("call", [call_v1, call_v1beta1], ids=["v1", "v1beta1"])
def test_mutual_tls(
    mtls_address: str, certs: Certs, call: Callable[[grpc.Channel], fnv1.RunFunctionResponse]
) -> None:
    with mtls_channel(mtls_address, certs.ca, certs.client) as channel:
        rsp = call(channel)
    assert rsp.meta.tag == "grpc-test"


@pytest.mark.parametrize("client_name", [None, "stranger"], ids=["no-certificate", "other-ca"])
def test_mutual_tls_refuses_unknown_clients(
    mtls_address: str, certs: Certs, client_name: str | None
) -> None:
    client = certs.stranger if client_name else None
    with (
        mtls_channel(mtls_address, certs.ca, client) as channel,
        pytest.raises(grpc.RpcError) as err,
    ):
        call_v1(channel)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
