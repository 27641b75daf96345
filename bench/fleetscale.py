"""``make bench-fleet``: the generated fleet (bench/fleetgen.py) at growing sizes on the real
control plane of ``make e2e``, each size on a fresh plane. A benchmark: it asserts nothing
but that each size converges, and records what each size costs in
``bench/results/fleet.json``.

Per size:

- seconds from applying the fleet until every XR is Synced and Ready, every service
  routed (``controlplane.converge``, as ``make e2e`` judges it);
- seconds from every service routed until no function call is made for 30 s (the
  queues empty: the fleet settled);
- seconds from adding one ModelService to the settled fleet until it, too, converged;
- the function calls each of those cost (Crossplane's own count, plane/calls.py):
  per XR for the whole fleet, in all for the one service;
- over a settled window (the settled TTL and a minute, at most 10 minutes): function calls
  per minute (Crossplane's own count, plane/calls.py; with a window within the
  TTL, what the fleet costs between TTLs) and CPU seconds per minute of each component
  (``/proc/<pid>/stat``, user + system);
- peak RSS of each component (VmHWM) after all of it;
- objects the control plane's API server stores (``apiserver_storage_objects``) and the
  size of the etcd database every API server shares (``apiserver_storage_size_bytes``).
"""

import argparse
import fcntl
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from bench import fleetgen, machine
from e2e import fleetdrills
from e2e.realplane.realdriver import ControlPlane, DrillError
from fleetgate.core import pacing
from plane import calls, controlplane, envoygateway, processes, stack, workloads
from plane.clusters import Cluster

REPO = Path(__file__).resolve().parent.parent
STATE = REPO / ".cache" / "bench-fleet"
# Held while a run lasts: each size starts by deleting STATE, which would pull the
# certificates and data from under another run's control plane in the same checkout.
LOCK = REPO / ".cache" / "bench-fleet.lock"
RESULTS = REPO / "bench" / "results" / "fleet.json"
CONVERGE_TIMEOUT_S = 3600.0  # a size not converged within an hour is where this machine stops
# How often convergence is judged. Each judgement lists every XR and Object (each Object
# holding its remote object): every 2 s, as make e2e asks, it was the control plane API
# server's largest load at S=40 and measured the apparatus more than the fleet.
CONVERGE_POLL_S = 10.0
# A settled fleet, which one new service is added to, has made no function call for this
# long: Ready everywhere is not enough, as the reconciles queued before the last XR turned
# Ready still run (with Crossplane's ten workers per kind, S=100's ModelRoute queue held
# ~190), and those calls and that load would be counted as the new service's.
QUIET_S = 30.0
SERVICES = (10, 40, 100)
GATEWAYS = 2
# The settled window: longer than the settled TTL (core/pacing.py) by this much, so every
# settled XR is called in it at least once, unless the TTL is longer than the window's cap.
# A shorter window counts only what the fleet costs between TTLs (figures named so): with
# the hour's default TTL, its calls at rest are XRs / TTL plus that.
SETTLED_WINDOW_MARGIN_S = 60.0
SETTLED_WINDOW_MAX_S = 600.0
BETWEEN_TTLS = " at rest, between settled TTLs"
TICKS = os.sysconf("SC_CLK_TCK")
TRANSLATIONS = "Envoy Gateway translations"
TRANSLATION_SECONDS = "Envoy Gateway translation seconds"
# A function's debug line for a call or its answer (fleetgate/core/runner.py), as the SDK's
# console renderer writes it once its colours are taken out.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CALL_LINE = re.compile(
    r"RunFunction(?P<answered> answered)?\s.*\bkind=(?P<kind>\S+)\s.*\bname=(?P<name>\S+)"
    r"\s.*\bsize=(?P<size>\d+)"
)
# Components whose costs are reported, by the Supervisor's process name (a pattern matched
# from its start: the functions are one process each, and "crossplane" takes the RBAC
# manager with it). The workload clusters' API servers and Envoy Gateways are the
# clusters' side of a route: Envoy Gateway translates every route of a gateway again on
# each change, so what it costs while a fleet comes up is a figure of its own.
COMPONENTS = {
    "crossplane": re.compile("crossplane"),
    "provider-kubernetes": re.compile("provider-provider-kubernetes"),
    "functions": re.compile("function-"),
    "control plane kube-apiserver": re.compile("control-plane-kube-apiserver"),
    "etcd": re.compile("etcd"),
    "workload kube-apiservers": re.compile("(?!control-plane-).*-kube-apiserver$"),
    "Envoy Gateways": re.compile(".*-envoy-gateway$"),
}


def _cpu_seconds(sup: processes.Supervisor) -> dict[str, float]:
    """User + system CPU seconds each component's processes used so far."""
    used = dict.fromkeys(COMPONENTS, 0.0)
    for proc in sup.processes:
        component = _component(proc.name)
        if component is None:
            continue
        try:
            fields = Path(f"/proc/{proc.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used[component] += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return used


def _component(process: str) -> str | None:
    return next((c for c, pattern in COMPONENTS.items() if pattern.match(process)), None)


def _peak_rss_mib(sup: processes.Supervisor) -> dict[str, float]:
    peak = dict.fromkeys(COMPONENTS, 0.0)
    for proc in sup.processes:
        component = _component(proc.name)
        if component is not None:
            peak[component] += proc.peak_rss_kib() / 1024
    return {c: round(v) for c, v in peak.items()}


def _storage(cp: Cluster) -> dict[str, float]:
    """Objects the control plane stores, and the bytes of the shared etcd database."""
    text = str(cp.admin.request("GET", "/metrics"))
    objects = size = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_storage_objects{"):
            objects += float(line.rsplit(" ", 1)[1])
        elif line.startswith("apiserver_storage_size_bytes{"):
            size = max(size, float(line.rsplit(" ", 1)[1]))
    return {"objects stored by the control plane": objects, "etcd database MiB": size / 2**20}


def _apply(cp: Cluster, docs: list[dict[str, Any]], folder: Path) -> None:
    """Apply ``docs`` as a platform would: one server-side ``kubectl apply`` of a folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fleet.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    controlplane.kubectl(cp, "apply", "--server-side", "-f", str(folder), check=True)


def measure(size: fleetgen.Size, window_s: float, drain: bool = True) -> dict[str, Any]:
    """One size on a fresh control plane: its figures."""
    subprocess.run(["rm", "-rf", str(STATE)], check=True)
    STATE.mkdir(parents=True)
    with processes.Supervisor(STATE / "logs") as sup:
        st = stack.bring_up(
            sup,
            STATE,
            fleetgen.workload_clusters(size.clusters),
            log=lambda _: None,
            function_args=["--debug"],
        )
        the_world = workloads.world()
        for workload in st.workloads.values():
            controlplane.register(st.cp, workload)
            workloads.start(sup, workload, the_world)
        docs = fleetgen.documents(size)
        figures: dict[str, Any] = {}

        def record(found: dict[str, Any]) -> None:
            for name, value in found.items():
                print(f"  {name}: {value}", flush=True)
            figures.update(found)

        start, before = time.monotonic(), _counters(st, sup)
        _apply(st.cp, docs, STATE / "fleet")
        controlplane.converge(st.cp, CONVERGE_TIMEOUT_S, interval=CONVERGE_POLL_S)
        xr_count = sum(1 for _ in controlplane.xrs(st.cp))
        made = _between(before, _counters(st, sup), "from apply to routed")
        record(
            {
                "seconds from apply to every service routed": _since(start),
                "function calls per XR from apply to routed": round(
                    made["function calls from apply to routed"] / xr_count, 1
                ),
                **made,
            }
        )
        record(
            {
                "seconds from every service routed to the last call before 30 s without": (
                    calls.quiet(st.crossplane.metrics_port, QUIET_S, CONVERGE_TIMEOUT_S)
                )
            }
        )
        start, before = time.monotonic(), _counters(st, sup)
        _apply(st.cp, [fleetgen.service(size.services, size)], STATE / "one-more")
        controlplane.converge(st.cp, CONVERGE_TIMEOUT_S, interval=CONVERGE_POLL_S)
        record(
            {
                "seconds from one new service to routed": _since(start),
                **_between(before, _counters(st, sup), "from one new service to routed"),
            }
        )

        cpu_before = _cpu_seconds(sup)
        settled = calls.settled(st.cp, st.crossplane.metrics_port, window_s)
        if window_s <= pacing.SETTLED.total_seconds():
            # A settled XR may not be called in it at all: what is counted is what the fleet
            # costs besides its TTLs (wake-ups, XRs still waiting), named so.
            settled = {k.replace(", settled", BETWEEN_TTLS): v for k, v in settled.items()}
        record(settled)
        cpu_after = _cpu_seconds(sup)
        record(
            {
                f"CPU seconds per minute, settled: {c}": round(
                    (cpu_after[c] - cpu_before[c]) / (window_s / 60), 2
                )
                for c in COMPONENTS
            }
        )
        if drain:
            record(_drain(st, sup, docs))
        record({f"peak RSS MiB: {c}": v for c, v in _peak_rss_mib(sup).items()})
        record({k: round(v, 1) for k, v in _storage(st.cp).items()})
        record({"Objects on the control plane": len(st.cp.admin.list(*controlplane.OBJECT))})
        record(_largest_calls(STATE / "logs"))
        return figures


def _drain(
    st: stack.Stack, sup: processes.Supervisor, docs: list[dict[str, Any]]
) -> dict[str, Any]:
    """The drill ``make e2e`` runs (e2e/fleetdrills.py ``drain``) on the settled fleet: one
    cluster made unschedulable until no route sends to it, then schedulable again until
    nothing moved; each wait as long as the fleet's first convergence may take."""
    driver = ControlPlane(
        st.cp,
        st.workloads,
        docs,
        hold_timeout_s=CONVERGE_TIMEOUT_S,
        converge_timeout_s=CONVERGE_TIMEOUT_S,
        interval_s=CONVERGE_POLL_S,
    )
    before = _counters(st, sup)
    placed = fleetdrills.deployments_per_cluster(driver)
    problems = fleetdrills.drain(driver)
    drained, undrained = driver.timings
    return {
        **{f"deployments on the cluster before the drain: {c}": n for c, n in placed.items()},
        "seconds from drain of one cluster to no route sending to it": round(drained.held, 1),
        "seconds from drain of one cluster to converged": round(drained.converged, 1),
        "seconds from undrain to converged, nothing moved": round(undrained.converged, 1),
        **_between(before, _counters(st, sup), "from drain to undrained"),
        **({"drain problems": problems} if problems else {}),
    }


def _counters(st: stack.Stack, sup: processes.Supervisor) -> dict[tuple[str, str], float]:
    """Every cumulative count a figure is the growth of, by (figure, part): function calls
    per Function (Crossplane's own count), its XR watch circuit breakers (calls.breakers),
    CPU seconds per component, and each cluster's Envoy Gateway translations and the
    seconds they took (its own metrics, envoygateway.translations)."""
    port = st.crossplane.metrics_port
    found = {("function calls", name): n for name, n in calls.scrape(port).items()}
    found |= {("watch circuit breaker", kind): n for kind, n in calls.breakers(port).items()}
    found |= {("CPU seconds", c): used for c, used in _cpu_seconds(sup).items()}
    for cluster in st.workloads:
        count, seconds = envoygateway.translations(sup, cluster)
        found[(TRANSLATIONS, cluster)] = count
        found[(TRANSLATION_SECONDS, cluster)] = seconds
    return found


def _between(
    before: dict[tuple[str, str], float], after: dict[tuple[str, str], float], what: str
) -> dict[str, float]:
    """What each count grew by from ``before`` to ``after``, named for the figures with
    ``what``: function calls in all beside those per Function (what converging costs, and
    which function it costs most); Envoy Gateway's mean seconds per translation beside its
    count, per cluster (what a change of routes costs the cluster side)."""
    grown = {key: after[key] - before.get(key, 0.0) for key in after}
    calls_made = sum(n for (figure, _), n in grown.items() if figure == "function calls")
    figures: dict[str, float] = {f"function calls {what}": round(calls_made)}
    for (figure, part), n in sorted(grown.items()):
        if figure == TRANSLATION_SECONDS:
            count = grown[(TRANSLATIONS, part)]
            figures[f"Envoy Gateway seconds per translation {what}: {part}"] = round(
                n / count if count else 0.0, 3
            )
        else:
            figures[f"{figure} {what}: {part}"] = (
                round(n, 1) if figure == "CPU seconds" else round(n)
            )
    return figures


def _largest_calls(logs: Path) -> dict[str, Any]:
    """The largest request and response each Function had, in bytes on the wire, and whose
    they were: from the line the functions write at debug level per call and per answer
    (fleetgate/core/runner.py). Crossplane counts calls, not their bytes
    (internal/xfn/function_runner_metrics.go at v2.4.0); a response over 4 MiB, gRPC's
    default limit, would fail."""
    figures: dict[str, Any] = {}
    for log in sorted(logs.glob("function-*.log")):
        largest: dict[str, tuple[int, str]] = {}
        for line in log.read_text(errors="replace").splitlines():
            found = CALL_LINE.search(ANSI.sub("", line))
            if found is None:
                continue
            way = "response" if found["answered"] else "request"
            size = int(found["size"])
            if size > largest.get(way, (0, ""))[0]:
                largest[way] = (size, f"{found['kind']} {found['name']}")
        function = log.stem.removeprefix("function-")
        for way, (size, whose) in sorted(largest.items()):
            figures[f"largest function {way} bytes: {function}"] = size
            figures[f"largest function {way} is for: {function}"] = whose
    return figures


def _since(start: float) -> float:
    return round(time.monotonic() - start, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench-fleet", description=__doc__)
    parser.add_argument(
        "--services", type=int, nargs="+", default=list(SERVICES), help="sizes, by S"
    )
    parser.add_argument("--gateways", type=int, default=GATEWAYS)
    parser.add_argument(
        "--clusters",
        type=int,
        default=fleetgen.CLUSTERS,
        help="workload clusters, each its own API server and Envoy Gateway",
    )
    parser.add_argument(
        "--window",
        type=float,
        help="settled window, seconds (the settled TTL and a minute, at most 600)",
    )
    parser.add_argument(
        "--no-drain",
        action="store_true",
        help="skip the drain drill (at S=100 as long as first convergence)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    held = LOCK.open("w")  # released when the process exits, however it exits
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(
            "another make bench-fleet is running in this checkout; wait for it, or stop it",
            file=sys.stderr,
        )
        return 1
    processes.isolate()
    # The functions' TTLs: what they read from the environment this run hands them.
    pacing.configure(os.environ)
    window = args.window or min(
        pacing.SETTLED.total_seconds() + SETTLED_WINDOW_MARGIN_S, SETTLED_WINDOW_MAX_S
    )
    ttls = {
        "settled TTL s": pacing.SETTLED.seconds,
        "least waiting TTL s": pacing.WAITING_MIN.seconds,
    }
    results: dict[str, Any] = {"machine": machine.describe(), "pacing": ttls, "sizes": []}
    for services in args.services:
        size = fleetgen.Size.for_services(services, args.gateways, args.clusters)
        print(f"fleet {size}:", flush=True)
        try:
            results["sizes"].append({"size": str(size), **measure(size, window, not args.no_drain)})
        except (TimeoutError, DrillError) as err:  # where it stops: said, and the run ends
            print(f"  stopped: {err}".splitlines()[0], file=sys.stderr)
            results["sizes"].append({"size": str(size), "stopped": str(err)[:2000]})
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        if "stopped" in results["sizes"][-1]:
            break
    print(f"figures in {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
