"""Function calls a settled fleet costs, counted by Crossplane itself.

Crossplane core counts every RunFunctionRequest it sends, per Function, as
``function_run_function_request_total{function_name=...}`` on its metrics
endpoint (internal/xfn/function_runner_metrics.go:38-45, the same at v2.2.0
and v2.4.0). Two scrapes a window apart, with nothing applied in between,
give what the fleet costs at rest: the figure ``core/pacing.py``'s TTLs are
chosen from.
"""

import re
import time
import urllib.request

from plane.clusters import Cluster
from plane.controlplane import xrs

SERIES = "function_run_function_request_total"
# Crossplane v2.4's per-XR watch circuit breaker (internal/circuit/circuit_metrics.go):
# how often one opened, and each watch event it judged, by outcome (``result``: Allowed,
# Dropped, HalfOpenAllowed). While open it drops an XR's watch events but a probe every
# 30 s, so the XR waits for its TTL instead (token_bucket.go: 100 tokens, 1 a second, by
# default; make e2e and bench-fleet run the 1000 and 10 a second docs/install.md's step
# 0 sets, package/install/crossplane-values.yaml).
BREAKER_OPENS = "circuit_breaker_opens_total"
BREAKER_EVENTS = "circuit_breaker_events_total"


def parse(text: str, series: str = SERIES, label: str = "function_name") -> dict[str, float]:
    """A counter's value per ``label`` value (summed over its other labels), from
    Prometheus's text format: by default, requests sent per Function."""
    pattern = re.compile(rf'[{{,]{label}="([^"]*)"')
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(series + "{"):
            value = pattern.search(line)
            key = value.group(1) if value else ""
            found[key] = found.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text: str = answer.read().decode()
    return text


def scrape(port: int) -> dict[str, float]:
    """Function calls so far, per Function."""
    return parse(metrics(port))


def breakers(port: int) -> dict[str, float]:
    """The XR watch circuit breakers so far: opens, and events by outcome, over every
    XR controller."""
    text = metrics(port)
    found = {"opens": sum(parse(text, BREAKER_OPENS, "controller").values())}
    found.update(parse(text, BREAKER_EVENTS, "result"))
    return found


def settled(cp: Cluster, metrics_port: int, window_s: float) -> dict[str, float]:
    """Calls per minute, per Function and in all, over ``window_s`` with the fleet at rest;
    and calls per XR per 5 minutes, the figure the pacing targets."""
    count = sum(1 for _ in xrs(cp))
    before = scrape(metrics_port)
    time.sleep(window_s)
    after = scrape(metrics_port)
    minutes = window_s / 60
    figures = {
        f"function calls per minute, settled: {name}": round(
            (after[name] - before.get(name, 0)) / minutes, 2
        )
        for name in sorted(after)
    }
    total = sum(after.values()) - sum(before.values())
    figures["function calls per minute, settled: all"] = round(total / minutes, 2)
    figures["function calls per XR per 5 minutes, settled"] = round(total / count / minutes * 5, 2)
    figures["XRs in the settled fleet"] = count
    return figures


def quiet(metrics_port: int, for_s: float, timeout_s: float, poll_s: float = 5.0) -> float:
    """Wait until Crossplane has made no function call for ``for_s`` seconds: the fleet's
    queues are empty, not only every XR Ready (reconciles queued before the last XR turned
    Ready still run after it). Returns the seconds waited; raises TimeoutError after
    ``timeout_s``."""
    start = last_call = time.monotonic()
    made = sum(scrape(metrics_port).values())
    while time.monotonic() - last_call < for_s:
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"function calls still being made after {timeout_s:.0f}s")
        time.sleep(poll_s)
        now = sum(scrape(metrics_port).values())
        if now != made:
            made, last_call = now, time.monotonic()
    return round(last_call - start, 1)
