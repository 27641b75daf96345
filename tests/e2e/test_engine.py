"""The engine stand-in as a third party's: TLS, the API key it answers to, what it records.

The plane's failover drill trusts it to refuse a request without the provider's key and to
record every header it was sent; these check that it does, over real TLS.
"""

import json
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPSConnection
from pathlib import Path

import pytest

from sim import pki

HOST = "api.provider.example"
KEY = "sk-provider-only-0123"


@dataclass(frozen=True)
class Running:
    port: int
    control: int
    ca: bytes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder: Path = tmp_path_factory.mktemp("provider")
    ca = pki.ca("public CA")
    pair = pki.leaf(ca, HOST, server=True, dns=(HOST,))
    (folder / "tls.crt").write_bytes(pair.cert_pem)
    (folder / "tls.key").write_bytes(pair.key_pem)
    port, control = _free_port(), _free_port()
    argv = [sys.executable, "-m", "plane.engine", "--any-model"]
    argv += ["--port", str(port), "--control-port", str(control), "--api-key-env", "KEY"]
    argv += ["--certfile", str(folder / "tls.crt"), "--keyfile", str(folder / "tls.key")]
    process = subprocess.Popen(argv, env={"KEY": KEY, "PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", control), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "the provider stand-in never listened"
            time.sleep(0.1)
    yield Running(port, control, ca.cert_pem)
    process.terminate()
    process.wait(10)


def _complete(provider: Running, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    context = ssl.create_default_context(cadata=provider.ca.decode())
    connection = HTTPSConnection("127.0.0.1", provider.port, context=context, timeout=10)
    # Verified against the name it was dialled by, as Envoy does with the Backend's SNI.
    connection.sock = context.wrap_socket(
        socket.create_connection(("127.0.0.1", provider.port), timeout=10), server_hostname=HOST
    )
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    connection.request("POST", "/v1/chat/completions", body=body, headers=headers)
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def _recorded(provider: Running) -> list[dict[str, object]]:
    connection = HTTPConnection("127.0.0.1", provider.control, timeout=10)
    connection.request("GET", "/requests")
    found: list[dict[str, object]] = json.loads(connection.getresponse().read())
    return found


def test_a_provider_answers_its_key_as_the_model_asked_for(provider: Running) -> None:
    status, body = _complete(provider, {"Authorization": f"Bearer {KEY}"})
    assert status == 200
    assert body["model"] == "gpt-4o-mini"
    assert body["usage"]


def test_a_provider_refuses_another_key_or_none_as_openai_does(provider: Running) -> None:
    for headers in ({}, {"Authorization": "Bearer sk-caller-key"}):
        status, body = _complete(provider, headers)
        assert status == 401
        assert body["error"]["code"] == "invalid_api_key"  # type: ignore[index]


def test_a_provider_records_every_header_it_was_sent(provider: Running) -> None:
    _complete(provider, {"Authorization": f"Bearer {KEY}", "X-Fleetgate-Caller": "team-a"})
    last = _recorded(provider)[-1]
    assert last["path"] == "/v1/chat/completions"
    assert last["headers"]["X-Fleetgate-Caller"] == "team-a"  # type: ignore[index]
