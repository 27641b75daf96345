"""The queries a scaling deployment's ScaledObject asks Prometheus, judged by Prometheus's
own rule evaluator (promtool, the pinned module): the first request of a series born with
it wakes the model, a minute without requests lets it sleep, in-flight requests count by
Little's law, and a dot in a service name is a dot."""

from pathlib import Path

from fleetgate.core import metrics
from fleetgate.model_deployment import scaler
from oracles import promtool

SERVICES = ["team-a/chat", "team-a/chat.v2"]
DEMAND, LOAD = "fleetgate:test:demand", "fleetgate:test:load"


def _series(name: str, model: str, values: str) -> dict[str, str]:
    return {"series": f'{name}{{{metrics.MODEL}="{model}",fleetgate_tier="1"}}', "values": values}


def test_demand_and_load_as_prometheus_evaluates_them(tmp_path: Path) -> None:
    group = {
        "name": "scaling",
        "rules": [
            {"record": DEMAND, "expr": scaler.demand_query(SERVICES)},
            {"record": LOAD, "expr": scaler.load_query(SERVICES)},
        ],
    }
    rules = promtool.rule_file([group], tmp_path)

    def at(expr: str, time: str, value: float) -> dict[str, object]:
        return {"expr": expr, "eval_time": time, "exp_samples": [{"labels": expr, "value": value}]}

    test = {
        "interval": "15s",
        "input_series": [
            # No series until the first request, at 60 s, answered by tier 1; then one
            # request every 15 s of 3 s each until 150 s, then none.
            _series(metrics.REQUESTS, "team-a/chat", "_x4 1+1x6 7x8"),
            _series(metrics.REQUEST_SECONDS, "team-a/chat", "_x4 3+3x6 21x8"),
            # Another model, whose name the regex would match if its dot were "any".
            _series(metrics.REQUESTS, "team-a/chatXv2", "0+5x20"),
        ],
        "promql_expr_test": [
            at(DEMAND, "30s", 0),
            # The very first request counts, although its series was born with it.
            at(DEMAND, "60s", 1),
            at(DEMAND, "150s", 4),
            # A minute after the last request: no demand, the scaler may cool down.
            at(DEMAND, "4m", 0),
            # 3 s of answering every 15 s: 0.2 requests in flight on average.
            at(LOAD, "150s", 0.2),
            at(LOAD, "4m", 0),
        ],
    }
    assert "SUCCESS" in promtool.unit_test(rules, [test], interval="15s")


def test_no_routing_service_means_no_demand(tmp_path: Path) -> None:
    assert scaler.demand_query([]) == scaler.load_query([]) == "vector(0)"
    group = {"name": "none", "rules": [{"record": DEMAND, "expr": scaler.demand_query([])}]}
    assert "SUCCESS: 1 rules found" in promtool.check(promtool.rule_file([group], tmp_path))
