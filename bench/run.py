"""One benchmark run: settle every workload, measure each function, gather the results.

A function may answer more than one XR kind (compose-model-service also
composes the ModelRoutes a ModelService composes, one per serving gateway):
every kind a function answers is a *series* of its own, measured on the
largest XR of that kind each reference workload composes. Process-level
figures (peak memory, 50 concurrent callers, cold start) belong to the
function and are shared by its series.
"""

import datetime
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from bench import machine, processes, report
from bench.inprocess import MIB, InProcess, in_process
from bench.minimal import SCRIPT as MINIMAL
from bench.settle import Reconciler, Settled
from bench.stats import Budget, Timing, growth_exponent
from bench.validating import SCRIPT as VALIDATING
from bench.workloads import SUITE, Workload
from fleetgate.core.runner import run_composer
from sim import catalog
from sim.catalog import Function

CALLERS = 50
MEDIUM = 2  # index of the workload the concurrency run uses


@dataclass(frozen=True)
class Settings:
    call: Budget
    wire: Budget
    grpc: Budget
    cold_starts: int
    concurrency_seconds: float
    out: Path

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "out": str(self.out), "concurrent_callers": CALLERS}


@dataclass(frozen=True)
class Point:
    size: int
    shape: str
    settled: Settled


@dataclass(frozen=True)
class Series:
    """One XR kind a function answers, from small to large."""

    name: str  # the function, and the kind when it answers more than one
    kind: str
    dimension: str
    points: list[Point]


def settle(workload: Workload, registry: dict[str, Function]) -> Settled:
    """The workload's steady state; stops the run if the XR does not end up where expected."""
    settled = Reconciler(workload.pool, registry).settle(workload.xr)
    wrong = {
        t: settled.conditions.get(t, "missing")
        for t, want in workload.expect.items()
        if settled.conditions.get(t) != want
    }
    if wrong:
        raise RuntimeError(
            f"{workload.kind} at size {workload.size} did not settle as expected: {wrong}; "
            "bench/world.py no longer matches what the functions publish"
        )
    return settled


def series_of(
    fn: Function, workloads: list[Workload], registry: dict[str, Function]
) -> list[Series]:
    """The function's own kind, then each kind it composes and also answers."""
    settled = [settle(w, registry) for w in workloads]
    main = Series(
        fn.name,
        workloads[0].kind,
        workloads[0].label,
        [Point(w.size, w.shape, st) for w, st in zip(workloads, settled, strict=True)],
    )
    composed: dict[str, list[Point]] = {}
    for w, st in zip(workloads, settled, strict=True):
        by_kind: dict[str, list[Settled]] = {}
        for child in st.children:
            kind = child.xr["kind"]
            if registry[kind].name == fn.name and kind != main.kind:
                by_kind.setdefault(kind, []).append(child)
        for kind, children in sorted(by_kind.items()):
            largest = max(children, key=lambda c: c.request.ByteSize())
            size = len(largest.response.desired.resources)
            shape = f"largest of {len(children)} composed for: {w.shape}"
            composed.setdefault(kind, []).append(Point(size, shape, largest))
    extra = [
        Series(f"{fn.name} ({kind})", kind, f"resources composed per {kind}", points)
        for kind, points in sorted(composed.items())
    ]
    return [main, *extra]


def _print(size: int, shape: str, ip: InProcess) -> None:
    print(
        f"   {size:>5} {shape[:56]:<56} {ip.call.p50_ms:9.2f} ms  floor {ip.floor.p50_ms:9.2f}"
        f"  x{ip.ratio:5.2f}  {ip.response_bytes / MIB:6.2f} MiB",
        flush=True,
    )


def _series_result(series: Series, measured: list[tuple[InProcess, Timing]]) -> dict[str, Any]:
    sizes = [p.size for p in series.points]
    p50s = [ip.call.p50_ms for ip, _ in measured]
    return {
        "kind": series.kind,
        "dimension": series.dimension,
        "workloads": [
            {
                "size": p.size,
                "shape": p.shape,
                "settled_in_passes": p.settled.passes,
                "in_process": ip.as_dict(),
                "grpc": grpc.as_dict(),
                "grpc_ratio_to_floor": round(grpc.p50_ms / ip.floor.p50_ms, 3),
            }
            for p, (ip, grpc) in zip(series.points, measured, strict=True)
        ],
        "exponent": {
            "all": growth_exponent(sizes, p50s),
            "largest3": growth_exponent(sizes[-3:], p50s[-3:]),
            "floor_all": growth_exponent(sizes, [ip.floor.p50_ms for ip, _ in measured]),
        },
    }


def bench_function(
    fn: Function, workloads: list[Workload], registry: dict[str, Function], s: Settings
) -> dict[str, dict[str, Any]]:
    """Every series of one function; the process-level figures are the function's."""
    print(f"== {fn.name}", flush=True)
    all_series = series_of(fn, workloads, registry)
    in_proc: dict[str, list[InProcess]] = {}
    for series in all_series:
        if series.name != fn.name:
            print(f"   -- {series.kind}", flush=True)
        in_proc[series.name] = []
        for p in series.points:
            ip = in_process(fn.compose, p.settled.request, s.call, s.wire)
            in_proc[series.name].append(ip)
            _print(p.size, p.shape, ip)
    grpc: dict[str, list[Timing]] = {}
    with processes.serving(fn.script) as server:
        for series in all_series:
            grpc[series.name] = [server.timed(p.settled.request, s.grpc) for p in series.points]
        peak = server.peak_rss_mib
        main = all_series[0]
        medium = main.points[min(MEDIUM, len(main.points) - 1)]
        per_call = grpc[fn.name][min(MEDIUM, len(main.points) - 1)].p50_ms / 1000
        calls_each = max(2, min(20, int(s.concurrency_seconds / (CALLERS * per_call))))
        expected = run_composer(fn.compose, medium.settled.request)
        conc = processes.concurrent(
            server, medium.settled.request, expected, callers=CALLERS, calls_each=calls_each
        )
    out = {}
    for series in all_series:
        result = _series_result(
            series, list(zip(in_proc[series.name], grpc[series.name], strict=True))
        )
        result["peak_rss_mib"] = peak
        result["concurrency"] = {"workload_size": medium.size, **conc.as_dict()}
        out[series.name] = result
    return out


def cold_starts(
    scripts: Sequence[str], first: dict[str, fnv1.RunFunctionRequest], runs: int
) -> dict[str, list[processes.Start]]:
    """Interleaved starts (the minimal functions first each round) so noise hits all alike.

    Each function's first call is its smallest workload; the minimal functions
    are sent the first of those.
    """
    print(f"== cold start ({runs} x {len(scripts) + 1} processes)", flush=True)
    processes.byte_compile()
    samples: dict[str, list[processes.Start]] = {MINIMAL: [], VALIDATING: []}
    samples.update({s: [] for s in scripts})
    for _ in range(runs):
        for script, taken in samples.items():
            req = first.get(script, next(iter(first.values())))
            taken.append(processes.cold_start(script, req))
    return samples


def _cold(samples: list[processes.Start], floor: list[processes.Start]) -> dict[str, Any]:
    wall = statistics.median(s.wall_s for s in samples) * 1000
    cpu = statistics.median(s.cpu_s for s in samples) * 1000
    floor_wall = statistics.median(s.wall_s for s in floor) * 1000
    floor_cpu = statistics.median(s.cpu_s for s in floor) * 1000
    return {
        "median_ms": round(wall, 1),
        "ratio_to_sdk": round(wall / floor_wall, 3),
        "cpu_median_ms": round(cpu, 1),
        "cpu_ratio_to_sdk": round(cpu / floor_cpu, 3),
        "samples_ms": [round(s.wall_s * 1000, 1) for s in samples],
    }


def notes(results: dict[str, Any]) -> list[str]:
    out = []
    for name, fn in results["functions"].items():
        for w in fn["workloads"]:
            ip = w["in_process"]
            where = f"{name} at size {w['size']}"
            if ip["request_bytes"] >= 4 * MIB:
                out.append(
                    f"{where}: the request is {ip['request_mib']:.1f} MiB, over the 4 MiB a "
                    "function server accepts by default (SDK --max-recv-message-size)"
                )
            if ip["response_bytes"] >= 4 * MIB:
                out.append(
                    f"{where}: the response is {ip['response_mib']:.1f} MiB, "
                    "over Crossplane's 4 MiB limit"
                )
            if not ip["deterministic"]:
                out.append(f"{where}: two identical calls answered differently")
    return out


def run(kinds: Sequence[str], s: Settings) -> dict[str, Any]:
    started = time.time()
    registry = catalog.registry()
    results: dict[str, Any] = {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine.describe(),
        "load_before": machine.load(),
        "settings": s.as_dict(),
        "functions": {},
        "failed": {},
    }
    first: dict[str, Callable[[], Workload]] = {}  # script -> its smallest workload
    scripts: dict[str, str] = {}  # series name -> the function's script
    for kind in kinds:
        fn = registry[kind]
        try:
            measured = bench_function(fn, [build() for build in SUITE[kind]], registry, s)
        except Exception as err:  # one broken function must not hide the others
            print(f"   failed: {type(err).__name__}: {err}", flush=True)
            results["failed"][fn.name] = f"{type(err).__name__}: {err}"
            continue
        results["functions"].update(measured)
        scripts.update(dict.fromkeys(measured, fn.script))
        first[fn.script] = SUITE[kind][0]
    smallest = {script: settle(build(), registry).request for script, build in first.items()}
    samples = cold_starts(sorted(set(scripts.values())), smallest, s.cold_starts)
    floor = samples[MINIMAL]
    results["cold_start"] = {
        "sdk_floor_ms": round(statistics.median(x.wall_s for x in floor) * 1000, 1),
        "sdk_cpu_ms": round(statistics.median(x.cpu_s for x in floor) * 1000, 1),
        "sdk_samples_ms": [round(x.wall_s * 1000, 1) for x in floor],
        "validating": _cold(samples[VALIDATING], floor),
        "runs": s.cold_starts,
    }
    for name, script in scripts.items():
        fn_result = results["functions"][name]
        fn_result["cold_start"] = _cold(samples[script], floor)
        fn_result["targets"] = report.evaluate(fn_result)
    results["load_after"] = machine.load()
    results["duration_s"] = round(time.time() - started, 1)
    results["notes"] = notes(results)
    return results
