"""The fleet on a real control plane: ``python -m e2e.realplane {e2e,up,down}``.

``e2e`` starts everything, applies examples/fleet, waits for it to converge,
prints what a user would look at, and stops everything (also on failure or
Ctrl-C). ``up`` starts the same control plane in the background, does the
platform team's part (Fleetgate installed, the two workload clusters
registered, the example's namespaces created; ``--fleet`` also applies the
example) and prints the commands that apply the example fleet and watch it;
``down`` stops it and removes its state. ``e2e`` applies the fleet with exactly
the command ``up`` prints.
"""

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NoReturn

from e2e import fleetcheck, fleetdrills
from e2e.fleet import documents
from e2e.realplane import (
    alerts,
    badinput,
    faults,
    limits,
    refusals,
    scaling,
    secretdrills,
    stackcharts,
    traffic,
)
from e2e.realplane.realdriver import ControlPlane
from oracles import secretsearch
from plane import (
    calls,
    controlplane,
    internet,
    network,
    processes,
    ratelimit,
    stack,
    workloads,
)
from plane.clusters import Cluster, binary
from plane.kube import Obj

REPO = Path(__file__).resolve().parents[2]
STATE = REPO / ".cache" / "controlplane"
PID = STATE / "pid"
# The inode of the control plane's network namespace: every process of it is there.
NETNS = STATE / "netns"
READY = STATE / "ready"
ROUTES = STATE / "routes"  # the routing table, written when `make routes` asks
ROUTES_TIMEOUT_S = 30.0
RESULTS = REPO / ".cache" / "controlplane-figures.json"  # bench/results/ keeps a recorded run
WORKLOADS = ["eu-west-1", "us-east-1"]
CONVERGE_TIMEOUT_S = 600.0
UP_TIMEOUT_S = 1200.0
# How long the settled fleet's function calls are counted (SETTLED_WINDOW_S overrides):
# a figure for bench/. Within the hour's settled TTL (core/pacing.py) it counts what the
# fleet costs between TTLs: wake-ups and XRs still waiting, none when all is well.
SETTLED_WINDOW_S = 120.0


def run(command: str, apply_fleet: bool = False) -> int:
    """Start the control plane in this process; ``e2e`` drives the fleet, ``serve`` waits
    (with ``apply_fleet``, once it applied the example fleet)."""
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    processes.isolate()
    NETNS.write_text(str(_netns(os.getpid())))
    PID.write_text(str(os.getpid()))
    print("starting the control plane (logs in .cache/controlplane/logs):")
    with processes.Supervisor(STATE / "logs") as sup:
        try:
            st = stack.bring_up(sup, STATE, WORKLOADS)
            the_world = workloads.world()
            docs = documents()
            # Before any Envoy starts: each root gets its trust store.
            internet.start(sup, STATE / "internet", docs)
            for workload in st.workloads.values():
                controlplane.register(st.cp, workload)
                workloads.start(sup, workload, the_world)
            network.Network(sup, st.workloads).start()
            made = controlplane.namespaces(st.cp, docs)
            print(f"namespaces of examples/fleet created: {', '.join(made)}")
            if command == "serve":
                _serve(sup, ControlPlane(st.cp, st.workloads, docs), apply_fleet)
            converged, checks = _apply_and_converge(st.cp, docs)
            print(controlplane.kubectl(st.cp, *controlplane.WATCH))
            needles = secretsearch.needles(docs)
            checks += [
                _at_rest("after the fleet converged", controlplane.secrets_at_rest(st.cp, needles)),
                _strict(controlplane.loose_tiers(st.cp)),
            ]
            figures = {**st.timings, **converged}
            # Requests first, on the fleet as applied: the drills after them edit it.
            checks += traffic.drills(ControlPlane(st.cp, st.workloads, docs))
            checks += _prometheus_drills(sup, ControlPlane(st.cp, st.workloads, docs), figures)
            # Limits next, while every caller of the fleet as applied holds its key.
            checks += _rate_limit_drills(
                ControlPlane(st.cp, st.workloads, docs), STATE / "ratelimit-drill", figures
            )
            checks += _secret_drills(
                st, needles, figures, traffic.prober(ControlPlane(st.cp, st.workloads, docs))
            )
            checks += _fleet_drills(ControlPlane(st.cp, st.workloads, docs), needles, figures)
            for refusal in refusals.refusals(st.cp, docs):
                problem = refusals.attempt(st.cp, refusal)
                print(f"refused: {refusal.name}" if problem is None else f"FAILED: {problem}")
                checks.append(problem is None)
            checks += _chart_checks()
            figures |= _settled_calls(st)
            checks += _fault_drills(
                sup, st, ControlPlane(st.cp, st.workloads, docs), needles, figures
            )
            # Last: Envoy Gateway's status may stay stale after a loss (secretdrills.lose).
            checks += _loss_drills(
                st, needles, figures, traffic.prober(ControlPlane(st.cp, st.workloads, docs))
            )
            figures["peak memory of the control plane (MiB)"] = round(sup.peak_rss_mib())
            print(f"peak memory of the control plane: {sup.peak_rss_mib():.0f} MiB")
            RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
            print(f"figures in {RESULTS.relative_to(REPO)}")
            # Convergence and each Secret drill's propagation (the edits, the shadowed
            # caller, the losses) raise when they fail; these are
            # the checks that count what they find.
            passed = 2 + len(secretdrills.DRILLS) + len(secretdrills.LOSSES) + checks.count(True)
            failed = checks.count(False)
            print(f"e2e: {passed} passed, {failed} failed")
            if failed:
                return 1
        except KeyboardInterrupt:
            print("interrupted: stopping every process", file=sys.stderr)
            return 130
        finally:
            PID.unlink(missing_ok=True)
    return 0


def _chart_checks() -> list[bool]:
    """The stack's values for charts that do not run here, rendered by Helm and read."""
    found = [
        (
            stackcharts.cert_manager(),
            "the stack's cert-manager values render with owner references",
        ),
        (
            stackcharts.trust_manager_webhook_ca(workloads.trust_manager_chart()),
            "trust-manager's webhook takes its CA from its TLS Secret",
        ),
    ]
    for problem, fine in found:
        print(problem or fine)
    return [problem is None for problem, _ in found]


def _serve(sup: processes.Supervisor, driver: ControlPlane, apply_fleet: bool) -> NoReturn:
    """Say the control plane is ready (`make up` waits for that), then keep it running.

    Asked by SIGUSR1 (`make routes`), it writes the routing table the workload
    clusters hold: it is the one process inside the plane that can read them.
    """
    if apply_fleet:
        controlplane.apply(driver.cp)
    asked = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: asked.set())
    _wrappers()
    READY.touch()
    while True:
        sup.check()
        if asked.wait(timeout=5):
            asked.clear()
            table = fleetcheck.table(driver.routes()) or "(no model is routed)"
            ROUTES.write_text(table + "\n")


def _apply_and_converge(cp: Cluster, docs: list[Obj]) -> tuple[dict[str, float], list[bool]]:
    """Apply the fleet as `make up` says to, with malformed XRs beside it
    (e2e/realplane/badinput.py), wait for it, print when each thing turned Ready; the
    figures, and one check for the malformed XRs: each refused or reported, then deleted."""
    applied_at = time.time()
    controlplane.apply(cp)
    attempts = badinput.refused(docs) + badinput.reported(docs)
    print(f"applied examples/fleet: kubectl {' '.join(controlplane.APPLY)}")
    print(f"and beside it {len(attempts)} malformed XRs:")
    problems = badinput.apply(cp, attempts)
    print("waiting for the fleet to converge:")
    took = controlplane.converge(cp, CONVERGE_TIMEOUT_S, excluded=badinput.excluded)
    print(f"converged {took:.0f}s after the first apply; Ready at (s after it):")
    figures = {"seconds from the first apply to every service routed": round(took, 1)}
    for seconds, what in controlplane.readiness_timeline(cp, applied_at):
        print(f"  {seconds:6.0f}  {what}")
        kind = what.split(" ", 1)[0]
        if kind in controlplane.XR_KINDS:  # sorted: the last one of a kind wins
            figures[f"seconds from the first apply until every {kind} Ready"] = round(seconds)
    problems += badinput.reports(cp, attempts)
    badinput.delete(cp, attempts)
    print("\n".join(f"FAILED: {p}" for p in problems) or "every malformed XR refused or reported")
    print()
    return figures, [not problems]


def _secret_drills(
    st: stack.Stack, needles: dict[str, str], figures: dict[str, float], probe: secretdrills.Probe
) -> list[bool]:
    """Each Secret edit (e2e/realplane/secretdrills.py), then the search; a caller-key edit
    also by the public gateway's answers (``probe``)."""
    cp, workloads = st.cp, list(st.workloads.values())

    performed: list[tuple[str, Callable[[], secretdrills.Outcome]]] = [
        *(
            (d.name, partial(secretdrills.run, d, cp, workloads, needles, probe))
            for d in secretdrills.DRILLS
        ),
        (
            secretdrills.SHADOW.name,
            partial(secretdrills.shadow, secretdrills.SHADOW, cp, workloads, needles, probe),
        ),
    ]
    return _outcomes(performed, figures)


def _loss_drills(
    st: stack.Stack, needles: dict[str, str], figures: dict[str, float], probe: secretdrills.Probe
) -> list[bool]:
    """Each loss of a copy on its cluster (e2e/realplane/secretdrills.py), then the search."""
    cp, workloads = st.cp, list(st.workloads.values())
    performed: list[tuple[str, Callable[[], secretdrills.Outcome]]] = [
        (d.name, partial(secretdrills.lose, d, cp, workloads, needles, probe))
        for d in secretdrills.LOSSES
    ]
    return _outcomes(performed, figures)


def _outcomes(
    performed: list[tuple[str, Callable[[], secretdrills.Outcome]]], figures: dict[str, float]
) -> list[bool]:
    """Perform each Secret drill, print what it found, and count its checks."""
    checks = []
    for name, perform in performed:
        print(f"drill: {name}")
        outcome = perform()
        print(f"  propagated and converged in {outcome.seconds:.0f}s; now held in")
        for holder in outcome.holders:
            print(f"    {holder}")
        figures[f"seconds until '{name}' reached the clusters and converged"] = round(
            outcome.seconds, 1
        )
        if outcome.refused_after is not None:
            print(f"  every removed caller key refused (401) {outcome.refused_after:.1f}s after")
            figures[f"seconds until '{name}' refused the removed keys"] = round(
                outcome.refused_after, 1
            )
        print("\n".join(f"  FAILED: {p}" for p in outcome.problems) or f"  passed: {name}")
        checks.append(not outcome.problems)
        checks.append(_at_rest(f"after '{name}'", outcome.hits))
    return checks


def _fleet_drills(
    driver: ControlPlane, needles: dict[str, str], figures: dict[str, float]
) -> list[bool]:
    """The drills shared with the offline walk (e2e/fleetdrills.py): one check each, and
    the secret search after each. A wait that runs out raises DrillError, with what is left."""
    print("routing table, as the workload clusters hold it:")
    print(fleetcheck.table(driver.routes()))
    checks = []
    for title, drill in fleetdrills.DRILLS.items():
        print(f"drill: {title}")
        driver.timings.clear()
        problems = drill(driver)
        for settled in driver.timings:
            figures[f"seconds until '{settled.what}' held and converged"] = round(
                settled.converged, 1
            )
        print("\n".join(f"  FAILED: {p}" for p in problems) or f"  passed: {title}")
        checks.append(not problems)
        hits = controlplane.secrets_at_rest(driver.cp, needles)
        checks.append(_at_rest(f"after '{title}'", hits))
    return checks


def _settled_calls(st: stack.Stack) -> dict[str, float]:
    """Crossplane's count of function calls with the fleet at rest: figures for bench/."""
    window = float(os.environ.get("SETTLED_WINDOW_S", SETTLED_WINDOW_S))
    print(f"function calls with the fleet at rest, counted by Crossplane over {window:.0f}s:")
    settled = calls.settled(st.cp, st.crossplane.metrics_port, window)
    for name, value in settled.items():
        print(f"  {name}: {value}")
    return settled


def _fault_drills(
    sup: processes.Supervisor,
    st: stack.Stack,
    driver: ControlPlane,
    needles: dict[str, str],
    figures: dict[str, float],
) -> list[bool]:
    """Faults nobody chose (e2e/realplane/faults.py), each judged by what it lost: one
    check each."""
    plane = faults.Plane(sup, st, driver, needles)
    checks = []
    for fault in faults.FAULTS:
        print(f"fault: {fault.name}")
        outcome = faults.endure(fault, plane)
        for line in outcome.said:
            print(f"  {line}")
        print(
            f"  its changes landed and the fleet converged {outcome.seconds:.0f}s after it "
            f"ended; routes read {outcome.samples} times meanwhile"
            + (f" ({outcome.unread} reads unanswered)" if outcome.unread else "")
        )
        figures[f"seconds from the end of '{fault.name}' until converged"] = round(
            outcome.seconds, 1
        )
        print("\n".join(f"  FAILED: {p}" for p in outcome.problems) or f"  passed: {fault.name}")
        checks.append(not outcome.problems)
    return checks


def _prometheus_drills(
    sup: processes.Supervisor, driver: ControlPlane, figures: dict[str, float]
) -> list[bool]:
    """What a real Prometheus reads of the fleet gateways: the failover alert firing and
    resolving, then a model scaled to zero and woken by demand."""
    checks = alerts.drill(sup, driver, STATE / "prometheus")
    return checks + scaling.drill(sup, driver, STATE / "scaling", figures)


def _rate_limit_drills(
    driver: ControlPlane, workdir: Path, figures: dict[str, float]
) -> list[bool]:
    """Limits composed for a service and its gateway, counted by the real rate-limit service
    of the gateway's cluster (plane/ratelimit.py): one check."""
    title = "each caller's limits counted by the rate-limit service Envoy Gateway configures"
    print(f"drill: {title}")
    (cluster,) = {r.cluster for r in driver.routes() if r.gateway == limits.GATEWAY}
    if cluster not in ratelimit.services():
        print(f"  FAILED: no rate-limit service runs on {cluster}")
        return [False]
    outcome = limits.drill(
        driver,
        driver.workloads[cluster],
        workdir,
        partial(traffic.asking, driver),
        partial(traffic.spent, driver),
    )
    figures[f"seconds until '{title}' loaded"] = round(outcome.seconds_to_load, 1)
    for line in outcome.observed:
        print(f"  {line}")
    print("\n".join(f"  FAILED: {p}" for p in outcome.problems) or f"  passed: {title}")
    return [not outcome.problems]


def _at_rest(when: str, hits: list[str]) -> bool:
    """Print the secret search's verdict (issue 18): no value outside a Secret; True if none."""
    print(f"secret values at rest outside Secrets {when}: {len(hits)}")
    for hit in hits:
        print(f"  {hit}")
    return not hits


def _strict(loose: list[str]) -> bool:
    """Print whether Envoy Gateway made every ModelRoute's tiers strict; True if it did."""
    print("\n".join(loose) or "every ModelRoute's tiers strict, by Envoy Gateway's status")
    return not loose


# The commands `make up` leaves beside its state, each run inside the control
# plane's network namespace (root: nsenter) on its admin kubeconfig;
# K=eu-west-1 or K=us-east-1 points one at a workload cluster instead.
WRAPPED = ("kubectl", "crossplane")  # the pinned kubectl, and the Crossplane CLI
WRAPPERS = STATE / "bin"
SHOWN = WRAPPERS.relative_to(REPO)  # as the user, in the checkout, types it


def _wrappers() -> None:
    config = f"{STATE}/${{K:-control-plane}}/admin.kubeconfig"
    enter = f"nsenter --net=/proc/$(cat {PID})/ns/net"
    WRAPPERS.mkdir(exist_ok=True)
    for name in WRAPPED:
        wrapper = WRAPPERS / name
        wrapper.write_text(
            "#!/bin/sh\n"
            f"# {name} on the Fleetgate control plane of make up (K=eu-west-1: a workload\n"
            "# cluster). Needs root: it joins the plane's network namespace.\n"
            f'KUBECONFIG={config} exec {enter} {Path(binary(name)).resolve()} "$@"\n'
        )
        wrapper.chmod(0o755)


def _running() -> int | None:
    """The pid of the control plane `make up` started, if it is still running (a pid the
    system gave another process since is not: it is outside the plane's namespace)."""
    try:
        pid = int(PID.read_text())
        netns = int(NETNS.read_text())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _netns(pid) == netns else None


def up(apply_fleet: bool) -> int:
    if _running() is not None and READY.exists():
        print("the control plane is already up (make down stops it).")
        print(_instructions(apply_fleet=False))
        return 0
    if STATE.exists():
        down()  # what an earlier one left, after a crash
    STATE.mkdir(parents=True, exist_ok=True)
    log_path = STATE.parent / "controlplane-up.log"
    command = [sys.executable, "-m", "e2e.realplane", "serve"]
    child = subprocess.Popen(
        [*command, *(["--fleet"] if apply_fleet else [])],
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=REPO,
    )
    print("starting the control plane (a few minutes; log: .cache/controlplane-up.log)")
    deadline = time.monotonic() + UP_TIMEOUT_S
    while not READY.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            print(log_path.read_text()[-4000:], file=sys.stderr)
            print("the control plane did not come up: the log's end is above", file=sys.stderr)
            return 1
        time.sleep(2)
    print(_instructions(apply_fleet))
    return 0


def _instructions(apply_fleet: bool) -> str:
    """What to run next on the control plane `make up` started (root: it joins a netns)."""
    kubectl, crossplane = (SHOWN / name for name in WRAPPED)
    applied = (
        "The example fleet is applied (as with the command below)."
        if apply_fleet
        else "Apply the example fleet:"
    )
    return "\n".join(
        [
            "Up: Fleetgate and its packages installed, workload clusters eu-west-1 and "
            "us-east-1 registered (ClusterProviderConfigs), namespaces created.",
            applied,
            f"  {kubectl} {' '.join(controlplane.APPLY)}",
            "Watch it converge (about a minute), and see each XR's conditions:",
            f"  {kubectl} {' '.join(controlplane.WATCH)}",
            f"  {crossplane} beta trace modelservice chat -n team-a",
            "The routing table the workload clusters hold (as make render prints it):",
            "  make routes",
            "A workload cluster:",
            f"  K=eu-west-1 {kubectl} get aigatewayroutes,securitypolicies -n fleetgate-system",
            "make down stops it and removes its state.",
        ]
    )


def _netns(pid: int | str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:  # gone meanwhile, or not ours to read
        return None


def _stragglers() -> list[int]:
    """Processes still in the control plane's network namespace (after a crash, orphans)."""
    try:
        netns = int(NETNS.read_text())
    except (FileNotFoundError, ValueError):
        return []
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _netns(p) == netns]


def routes() -> int:
    """Print the routing table the running control plane's workload clusters hold."""
    pid = _running()
    if pid is None or not READY.exists():
        print("no control plane is up: make up starts one")
        return 1
    before = ROUTES.stat().st_mtime_ns if ROUTES.exists() else 0
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + ROUTES_TIMEOUT_S
    while not ROUTES.exists() or ROUTES.stat().st_mtime_ns == before:
        if time.monotonic() > deadline:
            print(f"the control plane wrote no routing table in {ROUTES_TIMEOUT_S:.0f}s")
            return 1
        time.sleep(0.2)
    print(ROUTES.read_text(), end="")
    return 0


def down() -> int:
    pid = _running()
    if pid is not None:
        os.kill(pid, signal.SIGTERM)  # it stops its processes itself
        try:
            for _ in range(60):
                os.kill(pid, 0)
                time.sleep(0.5)
        except ProcessLookupError:
            pass
    left = _stragglers()
    for straggler in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(straggler, signal.SIGKILL)
    if left:
        print(f"stopped {len(left)} processes an earlier control plane left running")
    existed = STATE.exists()
    shutil.rmtree(STATE, ignore_errors=True)
    if pid is not None:
        print("control plane stopped; its state removed")
    elif existed:
        print("no control plane was running; removed what one left")
    else:
        print("no control plane to stop")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", choices=["e2e", "up", "down", "routes", "serve"])
    parser.add_argument(
        "--fleet",
        action="store_true",
        help="up: apply examples/fleet too (make up FLEET=examples/fleet)",
    )
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress, live
    if args.command == "up":
        return up(args.fleet)
    if args.command == "down":
        return down()
    if args.command == "routes":
        return routes()
    return run(args.command, apply_fleet=args.fleet)


if __name__ == "__main__":
    sys.exit(main())
