"""Prometheus on a fleet gateway's metrics: the failover alert Fleetgate composed, judged
on real failover.

Real: Prometheus itself (the module promtool comes from, tools/promtool/go.mod), the
series it scrapes (Envoy AI Gateway's external processor in the public gateway's pod,
labelled with the tier, endpoint and gateway headers the stack maps), and the rules it
evaluates (the ``spec.groups`` of the PrometheusRule a ModelRoute composed, as the
workload cluster's API server holds it). Played: how Prometheus finds the pod and its
rules, which a Prometheus Operator does from a PodMonitor and the PrometheusRule: here a
static target at the pod's port named ``aigw-admin`` (reached as a port-forward would),
and a rule file.
"""

import json
import socket
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from e2e.controlplane import processes, proxies, traffic
from e2e.controlplane.driver import ControlPlane
from e2e.controlplane.kube import Obj
from e2e.controlplane.traffic import CALLER, GATEWAY, MODEL, SERVICE
from e2e.driver import Ref
from fleetgate.core import metrics
from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.kinds.service import FailoverAlert
from fleetgate.model_service.alerts import FAILOVER_ACTIVE, PROMETHEUS_RULE_VERSION
from fleetgate.model_service.naming import Service, alerts_rule_name
from oracles import promtool
from tools import pinned

# The extproc container's admin port, which serves /metrics (AI Gateway v1.1.0
# internal/controller/extproc_builder.go:31-32 and 164).
METRICS_PORT_NAME = "aigw-admin"
# Short enough for a drill: scrape and evaluate every second, hold the share a few
# seconds. The threshold lets a handful of tier-0 answers bring the alert down again.
INTERVAL = "1s"
ALERT = FailoverAlert.model_validate({"threshold": "0.5", "for": "10s"})
UP_S = 60.0
FIRE_S = 90.0
# Tier 0's hosts stay ejected for the gateway's baseEjectionTime after failing; its
# answers must then outnumber the fallback's within the rule's 5-minute window.
RESOLVE_S = 240.0


def binary() -> Path:
    """The pinned Prometheus (``make controlplane-bins``)."""
    return pinned.binary("prometheus", promtool.TOOLS_GO_MOD, "github.com/prometheus/prometheus")


class Prometheus:
    """One Prometheus server, scraping one target and evaluating one rule file."""

    def __init__(self, sup: processes.Supervisor, folder: Path, target: int, rules: Path):
        self.port = _free_port()
        config = {
            "global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {"job_name": "ai-gateway", "static_configs": [{"targets": [f"127.0.0.1:{target}"]}]}
            ],
        }
        (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.process = sup.start(
            "prometheus",
            [
                str(binary()),
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
        )

    def ready(self) -> bool:
        """Whether it serves queries: it answers 503 until its storage is open."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5):
                return True
        except OSError:  # refused, or an HTTP error status
            return False

    def api(self, path: str, **query: str) -> Any:
        """A GET on Prometheus's HTTP API: its ``data``."""
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.load(answer)["data"]

    def query(self, expr: str) -> list[Obj]:
        return list(self.api("query", query=expr)["result"])

    def state(self, name: str = FAILOVER_ACTIVE) -> str:
        """The alert's state: ``firing``, ``pending``, or ``inactive``."""
        alerts = self.api("alerts")["alerts"]
        states = [a["state"] for a in alerts if a["labels"]["alertname"] == name]
        return states[0] if states else "inactive"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metrics_port(proxy: proxies.Proxy) -> int:
    """The pod's port named ``aigw-admin``, as a PodMonitor would select it."""
    spec = proxy.pod["spec"]
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        for port in container.get("ports") or []:
            if port.get("name") == METRICS_PORT_NAME:
                return int(port["containerPort"])
    raise LookupError(f"{proxy.gateway}'s pod has no port named {METRICS_PORT_NAME}")


def _timed_out(what: str, holds: Callable[[], bool], timeout: float) -> bool:
    """Whether ``timeout`` ran out before ``holds()``; how long it took, printed when not."""
    started = time.monotonic()
    while not _holds(holds):
        if time.monotonic() - started > timeout:
            return True
        time.sleep(0.5)
    print(f"  {what} after {time.monotonic() - started:.0f} s")
    return False


def _holds(holds: Callable[[], bool]) -> bool:
    """``holds()``, false while Prometheus (or the gateway) cannot answer."""
    try:
        return holds()
    except OSError as unanswered:  # urllib's errors, an HTTP error status among them
        print(f"  not answered: {unanswered}")
        return False


def _rule_ref(driver: ControlPlane) -> Ref:
    (route,) = (r for r in driver.routes() if r.gateway == GATEWAY and r.service == SERVICE)
    name = alerts_rule_name(Service(SERVICE[1], SERVICE[2]), GATEWAY)
    return Ref(route.cluster, PROMETHEUS_RULE_VERSION, "PrometheusRule", SYSTEM_NAMESPACE, name)


def _alert_holds(driver: ControlPlane, ref: Ref, alert: FailoverAlert) -> list[str]:
    """The cluster's PrometheusRule carries ``alert``'s threshold and ``for``."""
    rule = driver.remote(ref) or {"spec": {"groups": []}}
    found = [
        (r["expr"].rsplit(" > ", 1)[-1], r["for"])
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if r.get("alert") == FAILOVER_ACTIVE
    ]
    wanted = (alert.threshold, alert.for_)
    return [] if found == [wanted] else [f"{ref}: {FAILOVER_ACTIVE} at {found}, not {wanted}"]


def _fire_and_resolve(prometheus: Prometheus, driver: ControlPlane) -> list[str]:
    """Tier 0 failing: the alert fires while tier 1 answers; tier 0 back, it resolves."""
    ask = traffic.asking(driver, CALLER)
    series = f'{metrics.REQUESTS}{{{metrics.GATEWAY}="{GATEWAY}"}}'
    if _timed_out("Prometheus scraped the gateway", lambda: bool(prometheus.query(series)), UP_S):
        return [f"Prometheus found no {series}; its log ends:\n{prometheus.process.tail()}"]
    engines = traffic.every_engine(driver)
    traffic.fault(engines, "503")
    try:
        unfired = _timed_out(
            f"{FAILOVER_ACTIVE} fired, tier 1 answering",
            lambda: ask("failing over").status == 200 and prometheus.state() == "firing",
            FIRE_S,
        )
    finally:
        traffic.fault(engines, "ok")
    if unfired:
        return [f"{FAILOVER_ACTIVE} was {prometheus.state()}, not firing, {FIRE_S:.0f} s in"]
    unresolved = _timed_out(
        f"{FAILOVER_ACTIVE} resolved, tier 0 answering again",
        lambda: ask("back").status == 200 and prometheus.state() == "inactive",
        RESOLVE_S,
    )
    if unresolved:
        return [f"{FAILOVER_ACTIVE} was still {prometheus.state()} {RESOLVE_S:.0f} s after"]
    return []


def drill(sup: processes.Supervisor, driver: ControlPlane, workdir: Path) -> list[bool]:
    """``team-a/chat``'s failover alert, its ``for`` shortened, fires on real failover and
    resolves after it, in a real Prometheus: one check."""
    title = f"{FAILOVER_ACTIVE} fires in Prometheus on real failover, and resolves"
    print(f"drill: {title}")
    front = traffic.public_gateway(driver)
    ref = _rule_ref(driver)
    as_applied = driver.source(SERVICE)["spec"].get("failoverAlert")
    driver.patch_spec(SERVICE, {"failoverAlert": ALERT.model_dump(by_alias=True)})
    problems = driver.settle(
        f"{MODEL}'s alert held for {ALERT.for_}", lambda: _alert_holds(driver, ref, ALERT)
    )
    rule = driver.remote(ref) or {}
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as folder:
        rules = promtool.rule_file(rule["spec"]["groups"], Path(folder))
        target = front.proxy.netns.publish(_metrics_port(front.proxy))
        prometheus = Prometheus(sup, Path(folder), target, rules)
        try:
            processes.wait_listening(prometheus.process, prometheus.ready, UP_S, "starting")
            problems += _fire_and_resolve(prometheus, driver)
        finally:
            sup.stop(prometheus.process)
    # A merge patch: every field as applied, and none left of the drill's.
    restore = {field: (as_applied or {}).get(field) for field in ("threshold", "for")}
    driver.patch_spec(SERVICE, {"failoverAlert": restore})
    before = FailoverAlert.model_validate(as_applied or {})
    problems += driver.settle(
        f"{MODEL}'s alert as applied", lambda: _alert_holds(driver, ref, before)
    )
    print("\n".join(f"  FAILED: {p}" for p in problems) or f"  passed: {title}")
    return [not problems]
