"""The failover dashboard: a Grafana dashboard, shipped as a ConfigMap Grafana's sidecar loads.

Grafana's chart runs a sidecar that loads every ConfigMap labelled
``grafana_dashboard`` in the namespaces it searches (its
``sidecar.dashboards.searchNamespace``: add ``fleetgate-system``, or ALL).
Every panel reads Envoy AI Gateway's own series (``core/metrics.py``), so it
works without the PrometheusRules too; ``PANELS`` is what the tests parse with
promtool.
"""

import json
from typing import Any, Final, NamedTuple

from fleetgate.core import metrics
from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.objects import Manifest

NAME: Final = "fleetgate-failover-dashboard"
UID: Final = "fleetgate-failover"
SIDECAR_LABEL: Final = "grafana_dashboard"
WINDOW: Final = "5m"
# Dashboard variables: the gateway and the ModelService (its model name).
SELECTED: Final = f'{metrics.GATEWAY}=~"$gateway",{metrics.MODEL}=~"$modelservice"'


def _rate(series: str, *more: str) -> str:
    return f"rate({series}{{{','.join([SELECTED, *more])}}}[{WINDOW}])"


def _share(*more: str) -> str:
    by = f"sum by ({metrics.MODEL})"
    requests = _rate(metrics.REQUESTS)
    return f"{by} ({_rate(metrics.REQUESTS, *more)}) / {by} ({requests})"


class Panel(NamedTuple):
    """One time-series panel: a title, a PromQL expression, its legend and unit."""

    title: str
    expr: str
    legend: str
    unit: str
    description: str


FALLBACK: Final = f'{metrics.TIER}!="0"'
# The labels of the spend the PrometheusRules record (model_service/alerts.py).
SPENT_BY: Final = "namespace, modelservice"
# The metrics carry no caller (inference_cluster/stack.py METRIC_HEADERS says why).
PER_CALLER: Final = "Per caller: the usage record (each fleet gateway's access log)."


PANELS: Final = (
    Panel(
        "Requests by serving tier",
        f"sum by ({metrics.MODEL}, {metrics.TIER}) ({_rate(metrics.REQUESTS)})",
        f"{{{{{metrics.MODEL}}}}} tier {{{{{metrics.TIER}}}}}",
        "reqps",
        "Requests per second per ModelService, by the priority tier of the endpoint that "
        "answered (0 is the preferred tier).",
    ),
    Panel(
        "Share served by a fallback tier",
        _share(FALLBACK),
        f"{{{{{metrics.MODEL}}}}}",
        "percentunit",
        "What FleetgateFailoverActive watches: the share of requests a tier above 0 answered.",
    ),
    Panel(
        "Share failed",
        _share(f'{metrics.ERROR_TYPE}!=""'),
        f"{{{{{metrics.MODEL}}}}}",
        "percentunit",
        "Requests whose final answer was not a 2xx, whichever tier gave it.",
    ),
    Panel(
        "Tokens per ModelService",
        f"sum by ({metrics.MODEL}, {metrics.TOKEN_TYPE}) ({_rate(metrics.TOKENS)})",
        f"{{{{{metrics.MODEL}}}}} {{{{{metrics.TOKEN_TYPE}}}}}",
        "short",
        "Tokens per second per ModelService and kind (input, cached_input, output...). "
        f"{PER_CALLER}",
    ),
    Panel(
        "Spend per ModelService, per hour",
        f'sum by ({SPENT_BY}) ({metrics.COST_RATE}{{gateway=~"$gateway"}}) * 3600',
        "{{namespace}}/{{modelservice}}",
        "short",
        "In the currency of the endpoints' prices; recorded by the PrometheusRules of "
        "gateways with spec.monitoring.prometheusRules (priced endpoints only). "
        f"{PER_CALLER}",
    ),
    Panel(
        "Fallback tokens per ModelService",
        f"sum by ({metrics.MODEL}) ({_rate(metrics.TOKENS, FALLBACK)})",
        f"{{{{{metrics.MODEL}}}}}",
        "short",
        "Tokens per second a fallback tier served: where failover moves spend.",
    ),
)


def _variable(name: str, label: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": f"label_values({metrics.REQUESTS}, {label})",
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
        "refresh": 2,
    }


def dashboard() -> dict[str, Any]:
    """The dashboard model Grafana imports (two panels a row)."""
    panels = [
        {
            "id": i + 1,
            "type": "timeseries",
            "title": p.title,
            "description": p.description,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
            "fieldConfig": {"defaults": {"unit": p.unit}, "overrides": []},
            "targets": [{"refId": "A", "expr": p.expr, "legendFormat": p.legend}],
        }
        for i, p in enumerate(PANELS)
    ]
    datasource = {"name": "datasource", "type": "datasource", "query": "prometheus"}
    return {
        "uid": UID,
        "title": "Fleetgate: failover and spend",
        "tags": ["fleetgate"],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {
            "list": [
                datasource,
                _variable("gateway", metrics.GATEWAY),
                _variable("modelservice", metrics.MODEL),
            ]
        },
        "panels": panels,
    }


def config_map() -> Manifest:
    """The ConfigMap Grafana's sidecar picks up, in the system namespace."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": NAME,
            "namespace": SYSTEM_NAMESPACE,
            "labels": {SIDECAR_LABEL: "1"},
        },
        "data": {f"{UID}.json": json.dumps(dashboard(), indent=1, sort_keys=True)},
    }
