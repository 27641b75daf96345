"""Prometheus itself, as a platform runs it beside its fleet gateways: one server scraping
fleet gateway pods and evaluating a rule file.

Real: Prometheus (the module promtool comes from, tools/promtool/go.mod). Played: how it
finds the pod and its rules, which a Prometheus Operator does from a PodMonitor and a
PrometheusRule: here a static target (``metrics_port``: the pod's port named
``aigw-admin``, reached as a port-forward would) and a rule file.
"""

import json
import socket
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from oracles import promtool
from plane import processes, proxies
from plane.kube import Obj
from tools import pinned

# The extproc container's admin port, which serves /metrics (AI Gateway v1.1.0
# internal/controller/extproc_builder.go:31-32 and 164).
METRICS_PORT_NAME = "aigw-admin"
# Scrape and evaluate every second: drills wait on it.
INTERVAL = "1s"


def binary() -> Path:
    """The pinned Prometheus (``make controlplane-bins``)."""
    return pinned.binary("prometheus", promtool.TOOLS_GO_MOD, "github.com/prometheus/prometheus")


class Prometheus:
    """One Prometheus server, scraping fleet gateway pods (by their published metrics ports)
    and evaluating a rule file, if given."""

    def __init__(
        self,
        sup: processes.Supervisor,
        folder: Path,
        targets: list[int],
        rules: Path | None = None,
    ):
        self.port = _free_port()
        scraped = [f"127.0.0.1:{target}" for target in targets]
        config = {
            "global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL},
            "rule_files": [str(rules)] if rules else [],
            "scrape_configs": [
                {"job_name": "ai-gateway", "static_configs": [{"targets": scraped}]}
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

    def state(self, name: str) -> str:
        """The state of the alert ``name``: ``firing``, ``pending``, or ``inactive``."""
        alerts = self.api("alerts")["alerts"]
        states = [a["state"] for a in alerts if a["labels"]["alertname"] == name]
        return states[0] if states else "inactive"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics_port(proxy: proxies.Proxy) -> int:
    """The pod's port named ``aigw-admin``, as a PodMonitor would select it."""
    spec = proxy.pod["spec"]
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        for port in container.get("ports") or []:
            if port.get("name") == METRICS_PORT_NAME:
                return int(port["containerPort"])
    raise LookupError(f"{proxy.gateway}'s pod has no port named {METRICS_PORT_NAME}")
