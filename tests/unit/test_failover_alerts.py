"""Failover an operator can see: the tier on every attempt, and a PrometheusRule per route.

The rules' behaviour is judged by Prometheus itself (tests/e2e/test_failover_alerts.py);
here, what the functions compose and when.
"""

import copy
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.metrics import COST_RATE
from fleetgate.model_service.alerts import (
    ALL_TIERS_FAILING,
    FAILOVER_ACTIVE,
    FAILURE_RATIO,
    FALLBACK_RATIO,
    REQUEST_RATE,
)
from fleetgate.model_service.composer import compose
from fleetgate.model_service.naming import FAILOVER_ALERTS_KEY
from tests.support import request, run
from tests.support.model_service import CANARY, canary_fleet, manifest, model_routes
from tests.unit.test_model_route import backend, model_route

Obj = dict[str, Any]
ALERT = {"threshold": "0.05", "for": "10m"}


def monitored_fleet(*, rules: bool) -> dict[str, list[Obj]]:
    fleet = canary_fleet()
    for gw in fleet["gateways"]:
        gw["spec"]["monitoring"] = {"prometheusRules": rules}
    return fleet


def route_spec(service: Obj, *, rules: bool) -> Obj:
    spec: Obj = model_routes(run(compose, request(service, required=monitored_fleet(rules=rules))))[
        "public"
    ]["spec"]
    return spec


def test_a_gateway_with_prometheus_rules_gets_the_services_alert_on_its_route() -> None:
    assert route_spec(CANARY, rules=True)["failoverAlert"] == ALERT
    tuned = copy.deepcopy(CANARY)
    tuned["spec"]["failoverAlert"] = {"threshold": "0.2", "for": "1h"}
    assert route_spec(tuned, rules=True)["failoverAlert"] == {"threshold": "0.2", "for": "1h"}


def test_a_gateway_without_them_gets_no_alert() -> None:
    assert "failoverAlert" not in route_spec(CANARY, rules=False)


def two_tiers(**alert: str) -> Obj:
    xr = model_route(backend("primary"), backend("fallback", priority=1))
    xr["spec"]["failoverAlert"] = {**ALERT, **alert}
    return xr


def rules_of(out: Any) -> dict[str, Obj]:
    rule = manifest(out, FAILOVER_ALERTS_KEY)
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["metadata"]["namespace"] == "fleetgate-system"
    [group] = rule["spec"]["groups"]
    return {r.get("record") or r["alert"]: r for r in group["rules"]}


def test_a_route_with_two_tiers_composes_its_rules() -> None:
    rules = rules_of(run(compose, request(two_tiers(threshold="0.1", **{"for": "15m"}))))
    assert set(rules) == {
        REQUEST_RATE,
        FALLBACK_RATIO,
        FAILURE_RATIO,
        FAILOVER_ACTIVE,
        ALL_TIERS_FAILING,
    }
    own = {"namespace": "team-a", "modelservice": "chat", "gateway": "public"}
    for record in (REQUEST_RATE, FALLBACK_RATIO, FAILURE_RATIO):
        assert rules[record]["labels"] == own
        # The service's own series: its model name and this gateway.
        assert 'gen_ai_original_model="team-a/chat"' in rules[record]["expr"]
        assert 'fleetgate_gateway="public"' in rules[record]["expr"]
    active = rules[FAILOVER_ACTIVE]
    assert active["expr"].endswith("> 0.1")
    assert active["for"] == "15m"
    # Every failed request, whichever tier gave the answer: the recorded failure ratio,
    # whose labels (the service's own) the alert carries.
    failing = rules[ALL_TIERS_FAILING]
    own_series = '{namespace="team-a",modelservice="chat",gateway="public"}'
    assert failing["expr"] == f"{FAILURE_RATIO}{own_series} > 0.5"
    assert failing["labels"] == {"severity": "critical"}


def test_a_route_with_one_unpriced_tier_has_nothing_to_watch() -> None:
    xr = model_route(backend("a"), backend("b"))
    xr["spec"]["failoverAlert"] = ALERT
    assert FAILOVER_ALERTS_KEY not in run(compose, request(xr)).desired


PRICED = {"inputTokens": "0.15", "cachedInputTokens": "0.075", "outputTokens": "0.60"}


def test_a_priced_endpoint_records_the_services_spend_without_failover_alerts() -> None:
    xr = model_route(backend("a"), backend("paid", pricing=PRICED))
    xr["spec"]["failoverAlert"] = ALERT
    rules = manifest(run(compose, request(xr)), FAILOVER_ALERTS_KEY)["spec"]["groups"][0]["rules"]
    assert {r.get("record") or r.get("alert") for r in rules} == {COST_RATE}
    # Per token: input at its price, a cached token the difference (it is also an input token).
    prices = {r["labels"]["gen_ai_token_type"]: r["expr"].split(" * ")[-1] for r in rules}
    assert prices == {"input": "0.00000015", "cached_input": "-0.000000075", "output": "0.0000006"}
    assert {r["labels"]["fleetgate_endpoint"] for r in rules} == {"paid"}
    # Summed over whatever labels the series has: no caller label is read, or kept.
    assert all(r["expr"].startswith("sum(rate(gen_ai_client_token_usage_sum{") for r in rules)
    assert not any("caller" in r["expr"] for r in rules)


def test_the_rule_never_holds_the_route_back_and_a_refusal_is_named() -> None:
    """A cluster without the Prometheus Operator's CRDs still serves the route."""
    refused = {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "status": {
            "conditions": [
                {
                    "type": "Synced",
                    "status": "False",
                    "reason": "ReconcileError",
                    "message": 'no matches for kind "PrometheusRule" in version '
                    '"monitoring.coreos.com/v1"',
                }
            ]
        },
    }
    out = run(compose, request(two_tiers(), observed={FAILOVER_ALERTS_KEY: refused}))
    assert out.rsp.desired.resources[FAILOVER_ALERTS_KEY].ready == fnv1.READY_TRUE
    [warning] = [w for w in out.warnings if "PrometheusRule" in w]
    assert "Prometheus Operator" in warning
    assert 'no matches for kind "PrometheusRule"' in warning


@pytest.mark.parametrize("threshold", ["1", "0.1234567", "-0.1", ".5", "0.5x"])
def test_a_threshold_outside_zero_to_one_is_refused(threshold: str) -> None:
    xr = copy.deepcopy(CANARY)
    xr["spec"]["failoverAlert"] = {"threshold": threshold}
    out = run(compose, request(xr, required=monitored_fleet(rules=True)))
    assert any("spec.failoverAlert.threshold" in f for f in out.fatal), out.fatal
