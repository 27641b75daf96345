"""The targets, and the results as JSON (for the next run to compare with) and a short table."""

import json
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
LIMIT_BYTES = 4 * MIB  # Crossplane's default gRPC message limit for a function's response

# Target name → (what it asks, how to read it off one function's results).
TARGETS = {
    "per_call_vs_floor": "in-process p50 ≤ 3x the encode/decode floor, at every size",
    "growth_exponent": "latency exponent against the dominant dimension ≤ 1.1",
    "cold_start": "process start → first answer ≤ 1.25x the minimal SDK function",
    "concurrency": "50 concurrent callers: 0 errors, p99 ≤ 5x p50",
    "peak_rss": "peak RSS ≤ 256 MiB at the largest workload",
    "response_size": "every response < 4 MiB at the largest workload",
}


def evaluate(fn: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target's measured figure for one function, and whether it is met."""
    workloads = fn["workloads"]
    worst_ratio = max(w["in_process"]["ratio_to_floor"] for w in workloads)
    exponents = [e for e in (fn["exponent"]["all"], fn["exponent"]["largest3"]) if e is not None]
    exponent = max(exponents) if exponents else None
    largest = workloads[-1]["in_process"]
    conc = fn["concurrency"]
    cold, cold_cpu = fn["cold_start"]["ratio_to_sdk"], fn["cold_start"]["cpu_ratio_to_sdk"]
    return {
        "per_call_vs_floor": {"measured": f"{worst_ratio:.2f}x", "met": worst_ratio <= 3.0},
        "growth_exponent": {
            "measured": "n/a" if exponent is None else f"{exponent:.2f}",
            "met": exponent is not None and exponent <= 1.1,
        },
        "cold_start": {"measured": f"{cold:.2f}x (CPU {cold_cpu:.2f}x)", "met": cold <= 1.25},
        "concurrency": {
            "measured": f"{conc['errors']} errors, p99/p50 {conc['p99_over_p50']:.2f}",
            "met": conc["errors"] == 0 and conc["p99_over_p50"] <= 5.0,
        },
        "peak_rss": {"measured": f"{fn['peak_rss_mib']:.0f} MiB", "met": fn["peak_rss_mib"] <= 256},
        "response_size": {
            "measured": f"{largest['response_mib']:.2f} MiB",
            "met": largest["response_bytes"] < LIMIT_BYTES,
        },
    }


def load(path: Path) -> dict[str, Any] | None:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
        return loaded
    except (OSError, ValueError):
        return None


def write(results: dict[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    previous = load(out / "results.json")
    json_path, md_path = out / "results.json", out / "results.md"
    json_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    md_path.write_text(markdown(results, previous))
    return json_path, md_path


def _previous_ratio(previous: dict[str, Any] | None, fn: str, size: int) -> float | None:
    if previous is None:
        return None
    for w in previous.get("functions", {}).get(fn, {}).get("workloads", []):
        if w.get("size") == size:
            ratio: float = w["in_process"]["ratio_to_floor"]
            return ratio
    return None


def markdown(results: dict[str, Any], previous: dict[str, Any] | None) -> str:
    m = results["machine"]
    lines = [
        "# Fleetgate function benchmarks",
        "",
        f"Run {results['started']} in {results['duration_s']:.0f} s with `make bench`, "
        f"commit {m['commit']}. Machine: {m['cpu']}, {m['cores_usable']} usable cores, "
        f"{m['memory_gib']} GiB, {m['os']}, Python {m['python']} "
        f"(protobuf {m['packages']['protobuf']} {m['protobuf_backend']}, "
        f"grpcio {m['packages']['grpcio']}, "
        f"SDK {m['packages']['crossplane-function-sdk-python']}). "
        f"Load average before/after: {results['load_before'][0]} / {results['load_after'][0]}.",
        "",
        "Absolute times move with the machine; the ratios (to the encode/decode floor, to the "
        "minimal SDK function) are the figures to compare between runs.",
        "",
        "## Targets",
        "",
        "| function | " + " | ".join(TARGETS) + " |",
        "|---|" + "---|" * len(TARGETS),
    ]
    for name, fn in results["functions"].items():
        cells = [f"{t['measured']} {'✅' if t['met'] else '❌'}" for t in fn["targets"].values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", *(f"- `{k}`: {v}" for k, v in TARGETS.items()), ""]
    cs = results["cold_start"]
    lines += [
        f"Cold start of the minimal SDK function: {cs['sdk_floor_ms']:.0f} ms wall, "
        f"{cs['sdk_cpu_ms']:.0f} ms CPU (median of {cs['runs']} starts, interleaved with the "
        "functions'). The target is judged on wall time; CPU time (what the process itself "
        "used, start to exit) is beside it because other work on a shared machine moves wall "
        "time and not CPU time.",
        "",
        f"The same function validating its XR with a two-field pydantic model (the least a "
        f"function validating with pydantic does, `bench/validating.py`): "
        f"{cs['validating']['ratio_to_sdk']:.2f}x wall, "
        f"{cs['validating']['cpu_ratio_to_sdk']:.2f}x CPU. That much of the budget is "
        "pydantic's before a function composes anything.",
        "",
        "## Per workload",
        "",
        "In-process and gRPC p50/p99 in ms; floor = the SDK encoding and decoding the same "
        "response; Δ = ratio to floor in the last recorded run.",
        "",
        "| function | size | workload | in-proc p50 / p99 | floor p50 | ratio (Δ) "
        "| gRPC p50 / p99 | response | of 4 MiB | request |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, fn in results["functions"].items():
        for w in fn["workloads"]:
            ip = w["in_process"]
            before = _previous_ratio(previous, name, w["size"])
            delta = f" ({before:.2f})" if before is not None else ""
            g = w["grpc"]
            lines.append(
                f"| {name} | {w['size']} | {w['shape']} "
                f"| {ip['call']['p50_ms']:.2f} / {ip['call']['p99_ms']:.2f} "
                f"| {ip['floor']['p50_ms']:.2f} | {ip['ratio_to_floor']:.2f}{delta} "
                f"| {g['p50_ms']:.2f} / {g['p99_ms']:.2f} "
                f"| {_size(ip['response_bytes'])} | {ip['response_bytes'] / LIMIT_BYTES:.0%} "
                f"| {_size(ip['request_bytes'])} |"
            )
    lines += [
        "",
        "## Growth, concurrency, memory, cold start",
        "",
        "| function | dimension | exponent all / largest 3 (floor) | 50 callers: p50 / p99 ms, "
        "calls/s | peak RSS | cold start ms (x SDK) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, fn in results["functions"].items():
        e, c, cold = fn["exponent"], fn["concurrency"], fn["cold_start"]
        lines.append(
            f"| {name} | {fn['dimension']} | {e['all']} / {e['largest3']} ({e['floor_all']}) "
            f"| {c['latency']['p50_ms']:.1f} / {c['latency']['p99_ms']:.1f}, "
            f"{c['throughput_per_s']:.0f} ({c['calls']} calls, {c['errors']} errors) "
            f"| {fn['peak_rss_mib']:.0f} MiB | {cold['median_ms']:.0f} "
            f"({cold['ratio_to_sdk']:.2f}x; CPU {cold['cpu_ratio_to_sdk']:.2f}x) |"
        )
    for name, why in (results.get("failed") or {}).items():
        lines += ["", f"**{name} could not be measured**: {why}"]
    notes = results.get("notes") or []
    if notes:
        lines += ["", "## Notes", "", *(f"- {n}" for n in notes)]
    return "\n".join(lines) + "\n"


def _size(n: int) -> str:
    return f"{n / MIB:.2f} MiB" if n >= MIB else f"{n / 1024:.0f} KiB"
