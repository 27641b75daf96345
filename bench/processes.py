"""Functions as Crossplane runs them: separate processes answering RunFunction over gRPC.

Every process is started the same way, ``python -c 'from <module> import cli;
cli()'`` with the SDK's standard flags, exactly what a console script does, so
a Fleetgate function and the minimal SDK function differ only in what they
import and compute.
"""

import asyncio
import compileall
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from bench.stats import Budget, Timing, measure
from e2e.functions import free_port, wait_for_port

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 300.0
# The benchmark's own channels take any size: the size columns, not a refused
# call, say which responses break Crossplane's 4 MiB limit.
UNLIMITED = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
# Raised on the servers too, for the same reason (the SDK's default is 4 MiB).
SERVER_LIMIT_MIB = 64


def launcher(script: str) -> list[str]:
    """The command line for a console-script target ``module:attr``."""
    module, attr = script.split(":")
    code = f"import sys; from {module} import {attr}; sys.exit({attr}())"
    return [sys.executable, "-c", code]


def free_address() -> str:
    return f"127.0.0.1:{free_port()}"


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), 0.5).close()
    except OSError:
        return False
    return True


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def call(address: str, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    with grpc.insecure_channel(address, options=UNLIMITED) as channel:
        stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
        rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=CALL_TIMEOUT_S)
        return rsp


@dataclass
class Server:
    """One function process on a loopback port, and a channel to it."""

    proc: subprocess.Popen[bytes]
    address: str
    channel: grpc.Channel

    def run(self, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
        stub = grpcv1.FunctionRunnerServiceStub(self.channel)  # type: ignore[no-untyped-call]
        rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=CALL_TIMEOUT_S)
        return rsp

    def timed(self, req: fnv1.RunFunctionRequest, budget: Budget) -> Timing:
        return measure(lambda: self.run(req), budget)

    @property
    def peak_rss_mib(self) -> float:
        """The process's high-water mark of resident memory (VmHWM)."""
        return round(_memory_kib(self.proc.pid, "VmHWM") / 1024, 1)


@contextlib.contextmanager
def serving(script: str) -> Iterator[Server]:
    address = free_address()
    limits = [f"--max-recv-message-size={SERVER_LIMIT_MIB}"]
    cmd = [*launcher(script), "--insecure", f"--address={address}", *limits]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        wait_for_port(address, proc, START_TIMEOUT_S)
        with grpc.insecure_channel(address, options=UNLIMITED) as channel:
            yield Server(proc, address, channel)
    finally:
        _stop(proc)


def byte_compile() -> None:
    """Write the .pyc of the functions' and the benchmark's own sources beside them.

    The runtime image ships its Python byte-compiled (package/wheels.py), so a
    function's pod never compiles source at start. A development checkout is an
    editable install, and this environment sets PYTHONDONTWRITEBYTECODE: every
    start would recompile each Fleetgate module (about 20 ms of a cold start,
    which the minimal function, one small module, barely pays). Interpreters
    still read .pyc they did not write, and a stale one is ignored (its source's
    mtime differs), so compiling before timing starts makes the two comparable
    and matches what production runs.
    """
    for tree in ("functions", "bench"):
        if not compileall.compile_dir(REPO / tree, quiet=2):
            raise RuntimeError(f"byte-compiling {tree}/ failed")


@dataclass(frozen=True)
class Start:
    wall_s: float  # process start → first RunFunction answered
    cpu_s: float  # CPU the process used, start to exit right after that answer


def cold_start(script: str, req: fnv1.RunFunctionRequest) -> Start:
    """Start a function, make the first call, stop it at once.

    Wall time is the figure Crossplane waits for; on a shared machine it also
    holds every other process's turn on the CPU, so the CPU time the function
    itself used (user + system, all threads, from the kernel's accounting at
    exit) is recorded too: it includes stopping, which costs little and the
    same for every function.
    """
    address = free_address()
    cmd = [*launcher(script), "--insecure", f"--address={address}"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        # Polled every 2 ms (not e2e's 50 ms): the wait is part of the figure.
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(address):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{script} did not start serving (exit code {proc.returncode})")
            time.sleep(0.002)
        call(address, req)
        wall = time.perf_counter() - start
    except BaseException:
        _stop(proc)
        raise
    proc.terminate()
    deadline = time.monotonic() + 15
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return Start(wall, usage.ru_utime + usage.ru_stime)
        if time.monotonic() > deadline:
            proc.kill()
            deadline = time.monotonic() + 15
        time.sleep(0.002)


@dataclass(frozen=True)
class Concurrency:
    callers: int
    calls: int
    errors: int
    latency: Timing
    throughput_per_s: float
    peak_rss_mib: float

    def as_dict(self) -> dict[str, Any]:
        ratio = round(self.latency.p99_ms / self.latency.p50_ms, 3)
        return {**asdict(self), "p99_over_p50": ratio}


def concurrent(
    server: Server,
    req: fnv1.RunFunctionRequest,
    expected: fnv1.RunFunctionResponse,
    *,
    callers: int,
    calls_each: int,
) -> Concurrency:
    """``callers`` clients at once, each making ``calls_each`` calls in a row.

    An error is a failed call or an answer that differs from the one given
    to a lone caller: concurrency must change neither.
    """

    async def caller(stub: Any, samples: list[float]) -> int:
        errors = 0
        for _ in range(calls_each):
            start = time.perf_counter()
            try:
                rsp = await stub.RunFunction(req, timeout=CALL_TIMEOUT_S)
            except grpc.aio.AioRpcError:
                errors += 1
                continue
            samples.append(time.perf_counter() - start)
            errors += rsp != expected
        return errors

    async def run() -> tuple[int, list[float], float]:
        async with grpc.aio.insecure_channel(server.address, options=UNLIMITED) as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            samples: list[float] = []
            start = time.perf_counter()
            errors = await asyncio.gather(*(caller(stub, samples) for _ in range(callers)))
            return sum(errors), samples, time.perf_counter() - start

    errors, samples, elapsed = asyncio.run(run())
    return Concurrency(
        callers=callers,
        calls=callers * calls_each,
        errors=errors,
        latency=Timing.of(samples or [float("nan")]),
        throughput_per_s=round(len(samples) / elapsed, 2),
        peak_rss_mib=server.peak_rss_mib,
    )
