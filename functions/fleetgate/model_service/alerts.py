"""Failover an operator can see: one route's recording rules and alerts, as a PrometheusRule.

The series are Envoy AI Gateway's request counter (``core/metrics.py`` says
where each label comes from): one count per request, labelled with the tier
of the attempt that answered and, when it failed, ``error_type``. Each rule
sums away whatever labels the scrape adds (pod, namespace of the Envoy pod...)
and sets the service's own, so the alert reads the same under any scrape
configuration.
"""

from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any, Final

from fleetgate.core import metrics
from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.kinds.route import RouteBackend
from fleetgate.core.kinds.service import FailoverAlert
from fleetgate.core.objects import Manifest
from fleetgate.model_service.naming import Service, alerts_rule_name

PROMETHEUS_RULE_VERSION: Final = "monitoring.coreos.com/v1"
WINDOW: Final = "5m"
FALLBACK_RATIO: Final = "fleetgate:modelservice_fallback_ratio:rate5m"
FAILURE_RATIO: Final = "fleetgate:modelservice_failure_ratio:rate5m"
REQUEST_RATE: Final = "fleetgate:modelservice_requests:rate5m"
PER_MILLION: Final = Decimal(1_000_000)
FAILOVER_ACTIVE: Final = "FleetgateFailoverActive"
ALL_TIERS_FAILING: Final = "FleetgateAllTiersFailing"
# Share of the service's requests that failed, whichever tier gave the final
# answer, above which FleetgateAllTiersFailing fires. Not only those failed on
# the last tier: a request also ends on an earlier tier when the retries run
# out first (more tiers than retries + 1) or when the answer is a status
# outside retryOn (a provider's 429), and callers are refused all the same.
ALL_TIERS_FAILING_SHARE: Final = "0.5"
ALL_TIERS_FAILING_FOR: Final = "5m"


def tiers(backends: Sequence[RouteBackend]) -> int:
    """How many priority tiers the route has (renumbered 0..N-1 by the ModelService)."""
    return len({b.priority for b in backends})


def _selector(service: Service, gateway: str, *more: str) -> str:
    matchers = [f'{metrics.MODEL}="{service.model}"', f'{metrics.GATEWAY}="{gateway}"']
    return "{" + ",".join([*matchers, *more]) + "}"


def _rate(service: Service, gateway: str, *more: str, series: str = metrics.REQUESTS) -> str:
    return f"sum(rate({series}{_selector(service, gateway, *more)}[{WINDOW}]))"


def _share(service: Service, gateway: str, *more: str) -> str:
    # "or vector(0)": a share is 0, not absent, before its first request.
    return f"(({_rate(service, gateway, *more)}) or vector(0)) / {_rate(service, gateway)}"


def _labels(service: Service, gateway: str) -> dict[str, str]:
    return {"namespace": service.namespace, "modelservice": service.name, "gateway": gateway}


def _own(series: str, labels: dict[str, str]) -> str:
    return series + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def failover_rules(service: Service, gateway: str, alert: FailoverAlert) -> list[dict[str, Any]]:
    """The rule group's rules: three recorded series and two alerts."""
    labels = _labels(service, gateway)
    failed = f'{metrics.ERROR_TYPE}!=""'
    where = f"ModelService {service.model} on InferenceGateway {gateway}"
    return [
        {"record": REQUEST_RATE, "expr": _rate(service, gateway), "labels": labels},
        {
            "record": FALLBACK_RATIO,
            "expr": _share(service, gateway, f'{metrics.TIER}!="0"'),
            "labels": labels,
        },
        {"record": FAILURE_RATIO, "expr": _share(service, gateway, failed), "labels": labels},
        {
            "alert": FAILOVER_ACTIVE,
            "expr": f"{_own(FALLBACK_RATIO, labels)} > {alert.threshold}",
            "for": alert.for_,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"{where} is failing over",
                "description": (
                    "{{ $value | humanizePercentage }} of requests in the last 5 minutes were "
                    f"served by a fallback tier (threshold {alert.threshold}): the preferred "
                    "tier is failing or ejected, and spend may have moved to a paid tier."
                ),
            },
        },
        {
            "alert": ALL_TIERS_FAILING,
            "expr": f"{_own(FAILURE_RATIO, labels)} > {ALL_TIERS_FAILING_SHARE}",
            "for": ALL_TIERS_FAILING_FOR,
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": f"{where} is failing its callers",
                "description": (
                    "{{ $value | humanizePercentage }} of requests in the last 5 minutes failed, "
                    "whichever tier answered: failover is not saving them (the tiers are down, "
                    "the retries run out, or the answer is a status failover does not retry)."
                ),
            },
        },
    ]


def _per_token(backend: RouteBackend) -> Iterator[tuple[str, Decimal]]:
    """(token type, price of one token) for the backend's priced token types.

    AI Gateway's input count includes the cached input tokens (as its cost
    variables do, fleetgate.core.governance), so a cached token adds the
    difference of the two prices to the input price.
    """
    pricing = backend.pricing
    if pricing is None:
        return
    uncached = Decimal(pricing.input_tokens)
    cached = Decimal(pricing.cached_input_tokens or pricing.input_tokens)
    prices = (
        (metrics.INPUT, uncached),
        (metrics.CACHED_INPUT, cached - uncached),
        (metrics.OUTPUT, Decimal(pricing.output_tokens)),
    )
    for token_type, price in prices:
        if price:
            yield token_type, price / PER_MILLION


def cost_rules(
    service: Service, gateway: str, backends: Sequence[RouteBackend]
) -> list[dict[str, Any]]:
    """The service's spend per second on each priced endpoint, by token type.

    From AI Gateway's token counter, labelled by the endpoint that answered
    (``fleetgate_endpoint``); the same price as the usage record's ``cost``,
    unrounded. The metrics carry no caller (inference_cluster/stack.py
    METRIC_HEADERS says why): a caller's spend is the sum of the usage
    record's ``cost`` over their requests.
    """
    rules = []
    for b in backends:
        for token_type, price in _per_token(b):
            matchers = (
                f'{metrics.ENDPOINT}="{b.endpoint}"',
                f'{metrics.TOKEN_TYPE}="{token_type}"',
            )
            tokens = _rate(service, gateway, *matchers, series=metrics.TOKENS)
            rules.append(
                {
                    "record": metrics.COST_RATE,
                    "expr": f"{tokens} * {price:f}",
                    "labels": {
                        **_labels(service, gateway),
                        metrics.ENDPOINT: b.endpoint,
                        metrics.TOKEN_TYPE: token_type,
                    },
                }
            )
    return rules


def prometheus_rule(
    service: Service, gateway: str, backends: Sequence[RouteBackend], alert: FailoverAlert
) -> Manifest | None:
    """The PrometheusRule for the route, in the system namespace of the gateway's cluster:
    failover alerts with more than one tier, spend with a priced endpoint; else None."""
    rules = [
        *(failover_rules(service, gateway, alert) if tiers(backends) > 1 else []),
        *cost_rules(service, gateway, backends),
    ]
    if not rules:
        return None
    name = alerts_rule_name(service, gateway)
    return {
        "apiVersion": PROMETHEUS_RULE_VERSION,
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "groups": [
                {
                    "name": f"fleetgate-failover-{name}",
                    "rules": rules,
                }
            ]
        },
    }
