"""The failover alert Fleetgate composed, judged on real failover by a real Prometheus.

Real: Prometheus (plane/prometheus.py), the series it scrapes (Envoy AI Gateway's
external processor in the public gateway's pod, labelled with the tier, endpoint and
gateway headers the stack maps), and the rules it evaluates (the ``spec.groups`` of the
PrometheusRule a ModelRoute composed, as the workload cluster's API server holds it).
"""

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from e2e.driver import Ref
from e2e.realplane import traffic
from e2e.realplane.realdriver import ControlPlane
from e2e.realplane.traffic import CALLER, GATEWAY, MODEL, SERVICE
from fleetgate.core import metrics
from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.kinds.service import FailoverAlert
from fleetgate.model_service.alerts import FAILOVER_ACTIVE, PROMETHEUS_RULE_VERSION
from fleetgate.model_service.naming import Service, alerts_rule_name
from oracles import promtool
from plane import processes
from plane.prometheus import Prometheus, metrics_port

# Short enough for a drill: hold the share a few seconds. The threshold lets a handful
# of tier-0 answers bring the alert down again.
ALERT = FailoverAlert.model_validate({"threshold": "0.5", "for": "10s"})
UP_S = 60.0
FIRE_S = 90.0
# Tier 0's hosts stay ejected for the gateway's baseEjectionTime after failing; its
# answers must then outnumber the fallback's within the rule's 5-minute window.
RESOLVE_S = 240.0


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

    def alert() -> str:
        return prometheus.state(FAILOVER_ACTIVE)

    engines = traffic.every_engine(driver)
    traffic.fault(engines, "503")
    try:
        unfired = _timed_out(
            f"{FAILOVER_ACTIVE} fired, tier 1 answering",
            lambda: ask("failing over").status == 200 and alert() == "firing",
            FIRE_S,
        )
    finally:
        traffic.fault(engines, "ok")
    if unfired:
        return [f"{FAILOVER_ACTIVE} was {alert()}, not firing, {FIRE_S:.0f} s in"]
    unresolved = _timed_out(
        f"{FAILOVER_ACTIVE} resolved, tier 0 answering again",
        lambda: ask("back").status == 200 and alert() == "inactive",
        RESOLVE_S,
    )
    if unresolved:
        return [f"{FAILOVER_ACTIVE} was still {alert()} {RESOLVE_S:.0f} s after"]
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
        target = front.proxy.netns.publish(metrics_port(front.proxy))
        prometheus = Prometheus(sup, Path(folder), [target], rules)
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
