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

from e2e.controlplane.clusters import Cluster
from e2e.controlplane.fleet import xrs

SERIES = "function_run_function_request_total"
FUNCTION = re.compile(r'function_name="([^"]*)"')


def parse(text: str) -> dict[str, float]:
    """Requests sent per Function, from Prometheus's text format."""
    calls: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(SERIES + "{"):
            name = FUNCTION.search(line)
            key = name.group(1) if name else ""
            calls[key] = calls.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return calls


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        return parse(answer.read().decode())


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
