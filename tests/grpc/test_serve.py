"""Each console script as a real process, called over gRPC as Crossplane calls it.

Every function answers v1 and v1beta1, insecure and over mutual TLS, with the
very bytes the same request gets in process; with mutual TLS it refuses a
client without a certificate or with one from another CA.
"""

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.runner import answer
from tests.grpc.conftest import Certs
from tests.grpc.process import (
    FUNCTIONS,
    V1_METHOD,
    V1BETA1_METHOD,
    insecure,
    raw_call,
    serving,
)
from tests.hardening import harness

Requests = dict[str, list[fnv1.RunFunctionRequest]]


@pytest.fixture(params=FUNCTIONS, scope="module")
def insecure_server(request: pytest.FixtureRequest, logs: Path) -> Iterator[tuple[str, str]]:
    with serving(request.param, "--insecure", log_dir=logs) as server:
        yield server.name, server.address
        assert server.stop() == 0, "SIGTERM must stop the function cleanly"


# The certificates by flag, or as Crossplane hands them to a function's pod: in
# TLS_SERVER_CERTS_DIR, with no argument (v2.2.0 internal/controller/pkg/runtime/runtime.go:59-63).
HANDOVERS = ["flag", "environment"]


@pytest.fixture(
    params=[(f, how) for f in FUNCTIONS for how in HANDOVERS],
    ids=[f"{f}-{how}" for f in FUNCTIONS for how in HANDOVERS],
    scope="module",
)
def mtls_server(
    request: pytest.FixtureRequest, certs: Certs, logs: Path
) -> Iterator[tuple[str, str]]:
    name, how = request.param
    certs_dir = str(certs.server_dir)
    by_flag = how == "flag"
    with serving(
        name,
        *(["--tls-certs-dir", certs_dir] if by_flag else []),
        log_dir=logs,
        env={} if by_flag else {"TLS_SERVER_CERTS_DIR": certs_dir},
    ) as server:
        yield server.name, server.address
        assert server.stop() == 0, "SIGTERM must stop the function cleanly"


def mtls_channel(address: str, ca: bytes, client: tuple[bytes, bytes] | None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=ca,
        private_key=client[0] if client else None,
        certificate_chain=client[1] if client else None,
    )
    return grpc.secure_channel(address, creds)


def in_process(name: str, req: fnv1.RunFunctionRequest) -> bytes:
    kind = req.observed.composite.resource.fields["kind"].string_value
    assert harness.SCRIPTS[kind] == name
    return answer(harness.composer(kind), req)


@pytest.mark.parametrize("method", [V1_METHOD, V1BETA1_METHOD], ids=["v1", "v1beta1"])
def test_insecure_answers_as_in_process(
    insecure_server: tuple[str, str], fleet_requests: Requests, method: str
) -> None:
    name, address = insecure_server
    with insecure(address) as channel:
        for req in fleet_requests[name][:5]:
            got = raw_call(channel, req.SerializeToString(), method)
            assert got == in_process(name, req)
            rsp = fnv1.RunFunctionResponse.FromString(got)
            assert rsp.meta.tag == req.meta.tag
            assert not [r for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]


@pytest.mark.parametrize("method", [V1_METHOD, V1BETA1_METHOD], ids=["v1", "v1beta1"])
def test_mutual_tls(
    mtls_server: tuple[str, str], certs: Certs, fleet_requests: Requests, method: str
) -> None:
    name, address = mtls_server
    client = (certs.client.key_pem, certs.client.cert_pem)
    req = fleet_requests[name][0]
    with mtls_channel(address, certs.ca.cert_pem, client) as channel:
        assert raw_call(channel, req.SerializeToString(), method) == in_process(name, req)


Client = Callable[[Certs], tuple[bytes, bytes] | None]
STRANGERS: dict[str, Client] = {
    "no certificate": lambda c: None,
    "certificate from another CA": lambda c: (c.stranger.key_pem, c.stranger.cert_pem),
}


@pytest.mark.parametrize("client", STRANGERS.values(), ids=STRANGERS.keys())
def test_mutual_tls_refuses_unknown_clients(
    mtls_server: tuple[str, str], certs: Certs, fleet_requests: Requests, client: Client
) -> None:
    name, address = mtls_server
    req = fleet_requests[name][0]
    with (
        mtls_channel(address, certs.ca.cert_pem, client(certs)) as channel,
        pytest.raises(grpc.RpcError) as err,
    ):
        raw_call(channel, req.SerializeToString())
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    # ... and the function keeps serving the clients it trusts.
    trusted = (certs.client.key_pem, certs.client.cert_pem)
    with mtls_channel(address, certs.ca.cert_pem, trusted) as channel:
        assert raw_call(channel, req.SerializeToString()) == in_process(name, req)
