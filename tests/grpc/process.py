"""A console script as a real process on a free loopback port, and raw calls to it.

Raw calls send and receive bytes: the transport tests need to send what is
not a RunFunctionRequest, and to compare the exact bytes two processes answer.
"""

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from e2e.functions import console_script, free_port, wait_for_port
from tests.hardening.harness import SCRIPTS

FUNCTIONS = sorted(set(SCRIPTS.values()))
V1_METHOD = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"
V1BETA1_METHOD = "/apiextensions.fn.proto.v1beta1.FunctionRunnerService/RunFunction"
TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 15.0
# What a client lets itself send and receive: more than any server limit, so
# that the server's limits are the ones tested.
CLIENT_OPTIONS = [
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
]


@dataclass
class Server:
    name: str
    address: str
    proc: "subprocess.Popen[bytes]"
    log: Path

    def stop(self) -> int:
        """SIGTERM, as the kubelet sends it; the exit status."""
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def logged(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def serving(
    name: str, *args: str, log_dir: Path, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """Run console script ``name`` with ``args`` (and ``env`` added to this process's
    environment); stop it (SIGTERM, exit 0 expected) after."""
    address = f"127.0.0.1:{free_port()}"
    log = log_dir / f"{name}-{address.rsplit(':', 1)[1]}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [console_script(name), "--address", address, *args],
            stdout=out,
            stderr=out,
            env={**os.environ, **(env or {})},
        )
        server = Server(name, address, proc, log)
        try:
            wait_for_port(address, proc, 30)
            yield server
        finally:
            if proc.poll() is None:
                server.stop()


def raw_call(
    channel: grpc.Channel, data: bytes, method: str = V1_METHOD, timeout: float = TIMEOUT_S
) -> bytes:
    """Send ``data`` as the request; the response's bytes exactly as they came."""
    call = channel.unary_unary(
        method,
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    out: bytes = call(data, timeout=timeout)
    return out


def run(channel: grpc.Channel, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    rsp = fnv1.RunFunctionResponse()
    rsp.ParseFromString(raw_call(channel, req.SerializeToString()))
    return rsp


def insecure(address: str) -> grpc.Channel:
    return grpc.insecure_channel(address, options=CLIENT_OPTIONS)
