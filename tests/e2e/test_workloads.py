"""How the real control plane runs a workload cluster's trust-manager from its chart."""

from typing import Any

import pytest

from e2e.realplane.stackcharts import (
    ALLOW_DIRECT_INJECTION,
    INJECT_FROM_SECRET,
    trust_manager_webhook_ca,
)
from plane.workloads import local_args


def test_the_chart_s_arguments_are_kept_but_for_what_differs_here() -> None:
    chart = ["--log-level=1", "--trust-namespace=fleetgate-system", "--webhook-port=6443"]
    assert local_args(chart, webhook_port=40123, leader_elect="false") == [
        "--log-level=1",
        "--trust-namespace=fleetgate-system",
        "--webhook-port=40123",
        "--leader-elect=false",
    ]


def chart_objects(inject: str | None, allow: str | None) -> list[dict[str, Any]]:
    """The two objects of trust-manager's rendered chart the webhook's CA depends on."""
    webhook = {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"annotations": {INJECT_FROM_SECRET: inject} if inject else {}},
    }
    template = {"annotations": {ALLOW_DIRECT_INJECTION: allow}} if allow else {}
    certificate = {
        "kind": "Certificate",
        "metadata": {"namespace": "cert-manager"},
        "spec": {"secretName": "trust-manager-tls", "secretTemplate": template},
    }
    return [webhook, certificate]


@pytest.mark.parametrize(
    ("inject", "allow", "wrong"),
    [
        pytest.param("cert-manager/trust-manager-tls", "true", None, id="as v0.25.0 renders"),
        pytest.param(None, "true", "no cert-manager.io/inject-ca-from-secret", id="v0.24.0"),
        pytest.param("cert-manager/trust-manager-tls", None, "cainjector refuses", id="no allow"),
        pytest.param("cert-manager/other", "true", "no Certificate writes", id="other secret"),
    ],
)
def test_trust_manager_webhook_takes_its_ca_from_an_injectable_secret(
    inject: str | None, allow: str | None, wrong: str | None
) -> None:
    problem = trust_manager_webhook_ca(chart_objects(inject, allow))
    assert problem is None if wrong is None else wrong in (problem or "")
