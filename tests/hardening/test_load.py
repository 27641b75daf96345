"""Load: 50 concurrent callers against each function process, zero errors, memory flat.

Each function runs as a process and is called by 50 callers at once (over
five connections, as Crossplane multiplexes calls on few), each replaying
the example fleet's real requests for a bounded time. Every answer must be
exactly the bytes the same request gets in process (so concurrent calls
never see each other's state), and the process's resident memory must not
grow from the first half of the run (after a warm-up) to the second.
"""

import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from fleetgate.core.runner import answer
from tests.grpc.process import FUNCTIONS, insecure, raw_call, serving
from tests.hardening import harness
from tests.hardening.harness import settle

CALLERS = 50
CHANNELS = 5
WARM_UP_S = 1.0
RUN_S = 3.0
SAMPLE_S = 0.1
# Resident memory may wobble with the allocator; a leak grows with calls.
GROWTH_MAX = 0.10
GROWTH_FLOOR_KB = 6 * 1024


@dataclass
class Run:
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    rss_kb: list[tuple[float, int]] = field(default_factory=list)  # (seconds in, VmRSS)


@pytest.fixture(scope="module")
def workload() -> dict[str, list[tuple[bytes, bytes]]]:
    """Console script → (request, the answer it must get), from the settled example fleet."""
    fleet = settle()
    found: dict[str, list[tuple[bytes, bytes]]] = {name: [] for name in FUNCTIONS}
    for called in fleet.calls[-60:]:
        kind = called.req.observed.composite.resource.fields["kind"].string_value
        expected = answer(harness.composer(kind), called.req)
        found[harness.SCRIPTS[kind]].append((called.req.SerializeToString(), expected))
    for name in FUNCTIONS:
        assert found[name], f"no request for {name} in the last passes"
    return found


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def hammer(address: str, pid: int, work: list[tuple[bytes, bytes]]) -> Run:
    run = Run()
    lock = threading.Lock()
    start = time.monotonic()
    stop_at = start + WARM_UP_S + RUN_S
    channels = [insecure(address) for _ in range(CHANNELS)]

    def caller(index: int) -> None:
        channel = channels[index % CHANNELS]
        i = index
        while time.monotonic() < stop_at:
            data, expected = work[i % len(work)]
            i += 1
            try:
                got = raw_call(channel, data, timeout=30)
                problem = None if got == expected else "an answer other than in process"
            except grpc.RpcError as err:
                problem = f"{err.code()}: {err.details()}"
            with lock:
                run.calls += 1
                if problem:
                    run.errors.append(problem)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(CALLERS)]
    for thread in threads:
        thread.start()
    while time.monotonic() < stop_at:
        run.rss_kb.append((time.monotonic() - start, rss_kb(pid)))
        time.sleep(SAMPLE_S)
    for thread in threads:
        thread.join(timeout=60)
    for channel in channels:
        channel.close()
    return run


@pytest.fixture(params=FUNCTIONS, scope="module")
def loaded(
    request: pytest.FixtureRequest,
    workload: dict[str, list[tuple[bytes, bytes]]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Run:
    logs = tmp_path_factory.mktemp("load-logs")
    with serving(request.param, "--insecure", log_dir=logs) as server:
        run = hammer(server.address, server.proc.pid, workload[request.param])
        assert server.stop() == 0
    return run


def test_no_errors_under_load(loaded: Run) -> None:
    assert loaded.calls >= CALLERS * 2, f"only {loaded.calls} calls: the load never built up"
    assert loaded.errors[:5] == []


def test_memory_stays_flat(loaded: Run) -> None:
    steady = [kb for t, kb in loaded.rss_kb if t >= WARM_UP_S]
    half = len(steady) // 2
    # The second half's median, not its peak: one late allocator spike (an arena
    # growing once) is not a leak, and a leak lifts the whole second half.
    first, second = max(steady[:half]), int(statistics.median(steady[half:]))
    allowed = max(first * GROWTH_MAX, GROWTH_FLOOR_KB)
    assert second - first <= allowed, f"resident memory grew from {first} kB to {second} kB"
