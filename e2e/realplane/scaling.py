"""A model that sleeps when idle and wakes on demand, with no caller seeing the cold start.

Real: KEDA's operator on every workload cluster running the model (plane/keda.py), the
Prometheus it asks (plane/prometheus.py) scraping every fleet gateway's external
processor, Envoy and AI Gateway answering an OpenAI SDK client, and the functions on the
control plane. The engines are the workload stand-in's processes (plane/network.py),
one per replica KEDA asks for.

The drill gives ``team-a/qwen3-8b`` (tier 0 of ``team-a/chat``) a short ``idleAfter``
and a minimum of zero and waits until it sleeps (its endpoints marked asleep, parked on
the last priority of ``team-a/chat``'s route). First the cold start: it asks
``team-a/chat-internal``, which has no other tier, on the ``internal`` gateway once a
second until the model answers: every answer before must be the gateways' JSON 503 with
``Retry-After`` (the cluster gateways' ``answers.waking``, then the fleet gateway's
``answers.responses``). Those requests alone wake the model: the first ones reach the
cluster gateways, whose 503 passes AI Gateway's upstream processor, which counts it as a
request for the service
(internal/extproc/processor_impl.go:530-549 at v1.1.0); the fleet gateway's own 503s, once
outlier detection ejected the cluster gateways, are never counted. Once it sleeps again,
it asks ``team-a/chat`` once a second: the first answer must come from tier 1 (the third
party), none may fail, and tier 0 must answer again once the requests woke it, as the
usage records say too (the fallback's backend on each, then tier 0's). The
figures (time to tier 0, answers from the fallback meanwhile, errors) are printed and
recorded.
"""

import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai

from e2e.driver import Route, cold_start_unhidden, labels
from e2e.realplane import traffic
from e2e.realplane.realdriver import ControlPlane
from e2e.realplane.traffic import CALLER, FALLBACK, GATEWAY, MODEL, SERVICE
from fleetgate.core.answers import WAKING_RETRY_AFTER
from fleetgate.core.constants import LABEL_ASLEEP
from fleetgate.model_service.naming import Service, backend_name
from plane import keda, processes, proxies
from plane.prometheus import Prometheus, metrics_port

DEPLOYMENT = ("ModelDeployment", "team-a", "qwen3-8b")
SERVED = "team-a/qwen3-8b"
# team-a/chat-internal: qwen3-8b alone, on the internal gateway (plain http, no keys).
ALONE: tuple[str, str, str] = ("ModelService", "team-a", "chat-internal")
INTERNAL = "internal"
# How the gateways' 503 is recorded (answers.responses).
COLD_START = f"model_unavailable, Retry-After {WAKING_RETRY_AFTER}"
SCALING = {"minReplicas": 0, "maxReplicas": 2, "idleAfter": "10s", "targetInFlight": 8}
UP_S = 60.0
# Idle: the last request leaves the demand window (a minute), then idleAfter, then the
# functions and the routes converge.
SLEEP_S = 240.0
WAKE_S = 180.0
ASK_EVERY_S = 1.0


@dataclass
class Waking:
    """What the client saw from its first request to the first answer of tier 0: when,
    the status, and the model that answered (or, for a refusal, its error code and
    ``Retry-After``)."""

    answers: list[tuple[float, int, str]] = field(default_factory=list)

    @property
    def fallback(self) -> int:
        return sum(1 for _, status, model in self.answers if status == 200 and model != SERVED)

    @property
    def errors(self) -> int:
        return sum(1 for _, status, _ in self.answers if status != 200)

    @property
    def to_tier0(self) -> float | None:
        return next((at for at, status, m in self.answers if status == 200 and m == SERVED), None)


def _fleet_gateways(driver: ControlPlane) -> list[int]:
    """Every fleet gateway pod's metrics port, published on this machine: demand is what
    all of them see."""
    ports = []
    for name in sorted(driver.workloads):
        for proxy in proxies.on(name).running.values():
            try:
                ports.append(proxy.netns.publish(metrics_port(proxy)))
            except LookupError:  # a cluster gateway: no external processor beside it
                continue
    return ports


def _workload(xrs: dict[tuple[str, str, str], dict[str, Any]], cluster: str) -> str:
    """The workload cluster an InferenceCluster is: by its ClusterProviderConfig's name."""
    return str(xrs[("InferenceCluster", "", cluster)]["status"]["providerConfigRef"]["name"])


def _asleep(driver: ControlPlane) -> list[str]:
    """What is not yet as a sleeping deployment leaves it: status Idle, endpoints marked,
    the public route trying them last, the routes of the service with no other tier a cold
    start's."""
    problems = []
    xrs = driver.xrs()
    status = xrs[DEPLOYMENT].get("status") or {}
    if (status.get("scaling") or {}).get("state") != "Idle":
        problems.append(f"{SERVED}: status.scaling is {status.get('scaling')}, not Idle")
    endpoints = [
        xr
        for key, xr in xrs.items()
        if key[0] == "ModelEndpoint" and xr["metadata"]["name"].startswith("qwen3-8b-")
    ]
    awake = [e["metadata"]["name"] for e in endpoints if LABEL_ASLEEP not in labels(e)]
    if not endpoints or awake:
        problems.append(f"endpoints not marked asleep: {awake or 'none published'}")
    routes = _public_routes(driver)
    if not routes or not all(r.tried_after(SERVED) for r in routes):
        problems.append(f"{MODEL} on {GATEWAY} does not try {SERVED} last")
    if not cold_start_unhidden(xrs.get(ALONE)):
        problems.append(f"{_model(ALONE)} does not say its callers can meet a cold start")
    return problems


def _awake(driver: ControlPlane) -> list[str]:
    """What is not yet as it was before the drill: both replicas ready, tier 0 tried first."""
    status = driver.xrs()[DEPLOYMENT].get("status") or {}
    routes = _public_routes(driver)
    first = bool(routes) and all(r.tried_first(SERVED) for r in routes)
    problems = [] if first else [f"{MODEL} on {GATEWAY} does not try {SERVED} first"]
    if status.get("replicas") != {"desired": 2, "ready": 2} or "scaling" in status:
        problems.append(f"{SERVED}: replicas {status.get('replicas')}, {status.get('scaling')}")
    return problems


def _public_routes(driver: ControlPlane) -> list[Route]:
    """The service's routes on the public gateway (while one replaces another, both)."""
    return [r for r in driver.routes() if r.gateway == GATEWAY and r.service == SERVICE]


def _wake(client: openai.OpenAI, model: str, within: float = WAKE_S) -> Waking:
    """Ask for ``model`` once a second from the first request until tier 0 answers (or
    ``within`` seconds ran out)."""
    seen = Waking()
    started = time.monotonic()
    while seen.to_tier0 is None and time.monotonic() - started < within:
        at = time.monotonic() - started
        try:
            reply = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "wake up"}]
            )
            seen.answers.append((at, 200, reply.model))
        except openai.APIStatusError as err:
            retry = err.response.headers.get("retry-after")
            # The model the body names says which gateway answered: a cluster gateway
            # names the deployment, the fleet gateway the service asked for.
            named = err.body.get("model") if isinstance(err.body, dict) else None
            said = f"{err.code}, Retry-After {retry}, naming {named}"
            seen.answers.append((at, err.status_code, said))
        except openai.APIConnectionError:
            seen.answers.append((at, 0, ""))
        time.sleep(ASK_EVERY_S)
    return seen


def drill(
    sup: processes.Supervisor, driver: ControlPlane, workdir: Path, figures: dict[str, float]
) -> list[bool]:
    """``team-a/qwen3-8b`` scales to zero when idle; a request for ``team-a/chat`` is
    answered by tier 1 at once and wakes it; tier 0 answers again: one check."""
    title = f"{SERVED} sleeps when idle, {MODEL} is answered by tier 1 while it wakes"
    print(f"drill: {title}")
    xrs = driver.xrs()
    placed = [p["cluster"] for p in xrs[DEPLOYMENT]["status"]["placements"]]
    workdir.mkdir(parents=True, exist_ok=True)
    prometheus = Prometheus(sup, workdir, _fleet_gateways(driver))
    operators = [keda.start(sup, workdir / c, driver.workloads[_workload(xrs, c)]) for c in placed]
    problems: list[str] = []
    try:
        processes.wait_listening(prometheus.process, prometheus.ready, UP_S, "starting")
        address = f"http://127.0.0.1:{prometheus.port}"
        for cluster in placed:
            metrics_at = {"stack": {"metrics": {"prometheusAddress": address}}}
            driver.patch_spec(("InferenceCluster", "", cluster), metrics_at)
        driver.patch_spec(DEPLOYMENT, {"scaling": SCALING})
        slept = time.monotonic()
        problems += _fell_asleep(driver, f"{SERVED} asleep")
        figures["scale to zero: idle to asleep and parked last (s)"] = round(
            time.monotonic() - slept
        )
        internal = traffic.plain_gateway(driver, INTERNAL, ALONE).client()
        problems += _cold_started(_wake(internal, _model(ALONE)), figures)
        problems += _fell_asleep(driver, f"{SERVED} asleep again")
        front = traffic.public_gateway(driver)
        sent = datetime.now(UTC)
        seen = _wake(front.client(front.keys[CALLER]), MODEL)
        problems += _judged(seen, figures)
        problems += _switch_recorded(driver, front, sent, seen)
    finally:
        driver.patch_spec(DEPLOYMENT, {"scaling": None})
        for cluster in placed:
            driver.patch_spec(("InferenceCluster", "", cluster), {"stack": {"metrics": None}})
        try:
            # KEDA still runs: its finalizer on each ScaledObject is its to remove.
            problems += driver.settle(f"{SERVED} as applied", lambda: _awake(driver))
        finally:
            for operator in operators:
                sup.stop(operator.process)
            sup.stop(prometheus.process)
    print("\n".join(f"  FAILED: {p}" for p in problems) or f"  passed: {title}")
    return [not problems]


def _fell_asleep(driver: ControlPlane, what: str) -> list[str]:
    """Falling asleep takes the demand window, ``idleAfter`` and KEDA's poll beyond the
    control plane's convergence (166 s once, after waking): ``SLEEP_S``, not the usual
    wait."""
    return replace(driver, hold_timeout_s=SLEEP_S).settle(what, lambda: _asleep(driver))


def _model(service: tuple[str, str, str]) -> str:
    """The model name a caller asks for to reach ``service``."""
    return f"{service[1]}/{service[2]}"


def _cold_started(seen: Waking, figures: dict[str, float]) -> list[str]:
    """What a caller of a service whose every tier sleeps was answered until its requests
    woke the model: the gateways' 503 with ``Retry-After`` each time, then the model."""
    _printed(seen)
    woke = seen.to_tier0
    said = [(status, what) for _, status, what in seen.answers]
    before = said[:-1] if woke is not None else said
    problems = []
    if any(status != 503 or not what.startswith(f"{COLD_START},") for status, what in before):
        problems.append(
            f"{_model(ALONE)} was answered {before} before {SERVED}: wanted the gateways' "
            f"503 ({COLD_START}) each time"
        )
    if woke is None:
        problems.append(f"{_model(ALONE)}'s requests did not wake {SERVED} in {WAKE_S:.0f} s")
        return problems
    figures["scale to zero: cold start, first request to the model answering (s)"] = round(woke, 1)
    print(f"  {SERVED} answered {woke:.1f} s after the first request; {len(before)} 503s before")
    return problems


def _switch_recorded(
    driver: ControlPlane, front: traffic.Front, sent: datetime, seen: Waking
) -> list[str]:
    """The usage records of the wake-up say who answered each request: the fallback while
    tier 0 slept, then tier 0."""
    answered = sum(1 for _, status, _ in seen.answers if status == 200)
    try:
        records = traffic.usage_records_since(front, sent, answered)
    except LookupError as err:
        return [str(err)]
    service = Service(SERVICE[1], SERVICE[2])
    fallback = backend_name(service, GATEWAY, FALLBACK)
    served = {
        backend_name(service, GATEWAY, key[2])
        for key in driver.xrs()
        if key[0] == "ModelEndpoint" and key[2].startswith(f"{DEPLOYMENT[2]}-")
    }
    # "<namespace>/<AIServiceBackend>/route/...": the backend that answered.
    answered_by = [str(r.get("endpoint")).partition("/")[2].partition("/")[0] for r in records]
    tiers = (f"{b} (tier {r.get('tier')})" for b, r in zip(answered_by, records, strict=True))
    print(f"  usage records: {', '.join(tiers)}")
    *before, last = answered_by or [""]
    if any(b != fallback for b in before) or last not in served:
        return [f"the usage records do not say {FALLBACK} answered until {SERVED} did"]
    return []


def _printed(seen: Waking) -> None:
    for at, status, said in seen.answers:
        print(f"  {at:5.1f} s: {status} {said}")


def _judged(seen: Waking, figures: dict[str, float]) -> list[str]:
    """The figures of a wake-up behind a fallback, and what in it a caller would have
    noticed."""
    _printed(seen)
    if seen.to_tier0 is not None:
        figures["scale to zero: first request to tier 0 answering (s)"] = round(seen.to_tier0, 1)
    figures["scale to zero: answered by the fallback meanwhile"] = seen.fallback
    figures["scale to zero: errors"] = seen.errors
    problems = []
    first = seen.answers[0] if seen.answers else None
    if first is None or first[1] != 200 or first[2] == SERVED:
        problems.append(f"the first request was not answered by tier 1: {first}")
    if seen.errors:
        problems.append(f"{seen.errors} request(s) failed while {SERVED} woke")
    if seen.to_tier0 is None:
        problems.append(f"tier 0 did not answer within {WAKE_S:.0f} s of the first request")
    else:
        print(
            f"  tier 0 answered {seen.to_tier0:.1f} s after the first request; "
            f"{seen.fallback} answered by the fallback meanwhile, {seen.errors} errors"
        )
    return problems
