"""The failover alerts, judged by Prometheus's own rule engine (promtool, pinned in tools/).

The rules are the ones compose-model-service composes for the example route
``failover-alerts`` (two tiers, alert above 10% held for 15 minutes). The
input series are Envoy AI Gateway v1.1.0's request counter as its Prometheus
exporter exposes it (fleetgate.model_service.alerts cites the source): one
count per request, labelled with the tier of the attempt that answered,
``error_type="_OTHER"`` when that answer was not a 2xx. Labels with empty
values (``otel_scope_schema_url``...) are left out, as Prometheus drops them at
ingestion; the scrape's own (job, namespace, pod) are in, as a platform's
scrape configuration would add them.
"""

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetgate.core import metrics
from fleetgate.inference_cluster import dashboard
from fleetgate.model_service.alerts import (
    ALL_TIERS_FAILING,
    FAILOVER_ACTIVE,
    FAILURE_RATIO,
    FALLBACK_RATIO,
)
from fleetgate.model_service.composer import compose
from fleetgate.model_service.naming import FAILOVER_ALERTS_KEY
from oracles import promtool
from sim import catalog
from tests.support import request, run
from tests.support.model_service import manifest

EXAMPLE = catalog.EXAMPLES / "model-service" / "failover-alerts" / "xr.yaml"
OWN = {"namespace": "team-a", "modelservice": "chat", "gateway": "public"}
WINDOW = "0+{}x60"  # a counter growing by {} requests every minute for an hour


# The example route's endpoint and served model name per tier.
SERVED = {0: ("qwen3-8b-eu-1", "team-a/qwen3-8b"), 1: ("openai", "gpt-4o-mini")}


def series(
    tier: int,
    *,
    failed: bool = False,
    model: str = "team-a/chat",
    gateway: str = "public",
    tokens: str = "",
) -> str:
    """A request count, or with ``tokens`` (a gen_ai.token.type) a token sum: no caller
    label, as the stack maps none (inference_cluster/stack.py METRIC_HEADERS)."""
    endpoint, served = SERVED[tier]
    labels = {
        "error_type": "_OTHER" if failed else "",
        "fleetgate_endpoint": endpoint,
        "fleetgate_gateway": gateway,
        "fleetgate_tier": str(tier),
        "gen_ai_operation_name": "chat",
        "gen_ai_original_model": model,
        "gen_ai_provider_name": "openai",
        "gen_ai_request_model": served,
        "gen_ai_response_model": served,
        "gen_ai_token_type": tokens,
        "otel_scope_name": "envoyproxy/ai-gateway",
        "job": "envoy-ai-gateway",
        "namespace": "envoy-gateway-system",
        "pod": f"envoy-{gateway}-7d9f8-abcde",
    }
    body = ",".join(f'{k}="{v}"' for k, v in labels.items() if v)
    return f"{metrics.TOKENS if tokens else metrics.REQUESTS}{{{body}}}"


def traffic(**per_minute: str) -> list[dict[str, str]]:
    """Input series: ``t0=`` tier 0 answered, ``t1=`` tier 1, ``t1_failed=`` tier 1 failed..."""
    found = []
    for key, values in per_minute.items():
        tier, _, state = key.removeprefix("t").partition("_")
        found.append({"series": series(int(tier), failed=state == "failed"), "values": values})
    return found


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    route = yaml.safe_load(EXAMPLE.read_text())
    rule = manifest(run(compose, request(route)), FAILOVER_ALERTS_KEY)
    return promtool.rule_file(rule["spec"]["groups"], tmp_path_factory.mktemp("rules"))


def judge(
    rules: Path,
    input_series: list[dict[str, str]],
    *,
    alerts: Sequence[tuple[str, str, str | None]] = (),
    ratios: tuple[tuple[str, str, float], ...] = (),
    samples: tuple[tuple[str, str, str, float], ...] = (),
) -> None:
    """One promtool test group over ``input_series`` sampled every minute: ``alerts``
    (eval time, alert, the value it fires at or None), ``ratios`` (eval time, recorded
    series of this service, value) and ``samples`` (eval time, expression, labels of its
    one sample, value)."""
    expected = [*((at, name, _recorded(name), value) for at, name, value in ratios), *samples]
    promtool.unit_test(
        rules,
        [
            {
                "interval": "1m",
                "input_series": input_series,
                "promql_expr_test": [
                    {
                        "expr": expr,
                        "eval_time": at,
                        "exp_samples": [{"labels": labels, "value": value}],
                    }
                    for at, expr, labels, value in expected
                ],
                "alert_rule_test": [
                    {"eval_time": at, "alertname": name, "exp_alerts": firing(name, value)}
                    for at, name, value in alerts
                ],
            }
        ],
    )


# What each alert says when it fires for the example route; {} is the value it reads.
SAYS: dict[str, tuple[str, str, str]] = {
    FAILOVER_ACTIVE: (
        "warning",
        "is failing over",
        "{} of requests in the last 5 minutes were served by a fallback tier (threshold 0.1): "
        "the preferred tier is failing or ejected, and spend may have moved to a paid tier.",
    ),
    ALL_TIERS_FAILING: (
        "critical",
        "is failing its callers",
        "{} of requests in the last 5 minutes failed, whichever tier answered: failover is not "
        "saving them (the tiers are down, the retries run out, or the answer is a status "
        "failover does not retry).",
    ),
}


def firing(name: str, value: str | None) -> list[dict[str, Any]]:
    """What promtool must see of alert ``name``: nothing (None), or it firing at ``value``."""
    if value is None:
        return []
    severity, summary, description = SAYS[name]
    return [
        {
            "exp_labels": {"severity": severity, **OWN},
            "exp_annotations": {
                "summary": f"ModelService team-a/chat on InferenceGateway public {summary}",
                "description": description.format(value),
            },
        }
    ]


def test_every_composed_rule_loads_in_prometheus(rules: Path) -> None:
    # Three recorded ratios, two alerts, and the priced fallback's input, cached and output.
    assert "SUCCESS: 8 rules found" in promtool.check(rules)


def test_failover_at_20_percent_fires_after_the_hold_and_resolves_when_tier_0_recovers(
    rules: Path,
) -> None:
    # Tier 1 serves 20 of 100 requests a minute for 30 minutes, then none.
    shifted = traffic(t0="0+80x30 2400+100x30", t1="0+20x30 600+0x30")
    judge(
        rules,
        shifted,
        ratios=(("10m", FALLBACK_RATIO, 0.2), ("10m", FAILURE_RATIO, 0)),
        alerts=[
            # Above 10% from minute 1, held 15 minutes: pending, not firing, at 15.
            ("15m", FAILOVER_ACTIVE, None),
            ("17m", FAILOVER_ACTIVE, "20%"),
            ("17m", ALL_TIERS_FAILING, None),
            # Tier 0 takes everything again from minute 31; 5 minutes later it is gone.
            ("37m", FAILOVER_ACTIVE, None),
        ],
    )


def test_one_percent_on_the_fallback_stays_silent(rules: Path) -> None:
    judge(
        rules,
        traffic(t0=WINDOW.format(99), t1=WINDOW.format(1)),
        alerts=[("50m", FAILOVER_ACTIVE, None)],
    )


def test_every_tier_failing_fires_the_all_tiers_alert(rules: Path) -> None:
    # Tier 0 is down (its attempts end in retries), tier 1 answers every request with 5xx.
    judge(
        rules,
        traffic(t0=WINDOW.format(0), t1_failed=WINDOW.format(50)),
        ratios=(("10m", FAILURE_RATIO, 1),),
        alerts=[
            ("3m", ALL_TIERS_FAILING, None),
            ("10m", ALL_TIERS_FAILING, "100%"),
            # Every request went to the fallback too.
            ("20m", FAILOVER_ACTIVE, "100%"),
        ],
    )


def test_failures_that_end_on_tier_0_fire_the_failing_alert(rules: Path) -> None:
    """A provider answers 429, which retryOn leaves alone (or the retries run out before
    the last tier): 60 of 100 requests a minute end failed on tier 0, no tier above it
    ever answers. Callers are refused all the same, so the alert fires."""
    judge(
        rules,
        traffic(t0=WINDOW.format(40), t0_failed=WINDOW.format(60)),
        ratios=(("10m", FAILURE_RATIO, 0.6), ("10m", FALLBACK_RATIO, 0)),
        alerts=[
            ("10m", ALL_TIERS_FAILING, "60%"),
            # Nothing failed over: no fallback tier served anything.
            ("10m", FAILOVER_ACTIVE, None),
        ],
    )


def test_another_service_or_gateway_on_the_cluster_is_not_counted(rules: Path) -> None:
    others = [
        {"series": series(1, model="team-b/chat"), "values": WINDOW.format(100)},
        {"series": series(1, gateway="internal"), "values": WINDOW.format(100)},
    ]
    judge(
        rules,
        [*traffic(t0=WINDOW.format(100)), *others],
        ratios=(("20m", FALLBACK_RATIO, 0),),
        alerts=[("30m", FAILOVER_ACTIVE, None)],
    )


def _recorded(name: str) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in OWN.items()) + "}"


# --- the dashboard ----------------------------------------------------------------------


def panel_exprs() -> dict[str, str]:
    """Each panel's expression with the dashboard's variables at "All"."""
    model = json.loads(next(iter(dashboard.config_map()["data"].values())))
    return {
        p["title"]: p["targets"][0]["expr"].replace("$gateway", ".*").replace("$modelservice", ".*")
        for p in model["panels"]
    }


def test_every_dashboard_expression_parses_and_reads_only_the_upstream_series(
    tmp_path: Path,
) -> None:
    exprs = panel_exprs()
    assert len(exprs) == len(dashboard.PANELS)
    group = {
        "name": "dashboard",
        "rules": [{"record": f"panel:{i}", "expr": e} for i, e in enumerate(exprs.values())],
    }
    assert f"SUCCESS: {len(exprs)} rules found" in promtool.check(
        promtool.rule_file([group], tmp_path)
    )
    read = {name for e in exprs.values() for name in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", e)}
    # AI Gateway's two series, and the spend the composed rules record from one of them.
    assert read == {metrics.REQUESTS, metrics.TOKENS, metrics.COST_RATE}


def test_the_dashboard_shows_the_share_the_alert_watches(rules: Path) -> None:
    share = panel_exprs()["Share served by a fallback tier"]
    judge(
        rules,
        traffic(t0=WINDOW.format(80), t1=WINDOW.format(20)),
        samples=(("10m", share, f'{{{metrics.MODEL}="team-a/chat"}}', 0.2),),
    )


def test_the_dashboard_prices_each_services_tokens_as_the_usage_record_does(rules: Path) -> None:
    """openai (the example's tier 1) at 0.15 / 0.075 cached / 0.60 per million tokens: the
    service's 1000 input tokens a minute, 200 of them cached, and 500 output cost
    (800 * 0.15 + 200 * 0.075 + 500 * 0.60) / 1e6 = 0.000435 a minute, 0.0261 an hour."""
    spend = panel_exprs()["Spend per ModelService, per hour"]
    used = {"input": 1000, "cached_input": 200, "output": 500}
    judge(
        rules,
        [
            {"series": series(1, tokens=kind), "values": WINDOW.format(n)}
            for kind, n in used.items()
        ],
        samples=(("10m", spend, '{namespace="team-a",modelservice="chat"}', 0.0261),),
    )
