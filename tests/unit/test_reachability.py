"""ClusterReachable: a workload cluster whose API server does not answer, said on the XR.

provider-kubernetes marks each Object on such a cluster ``Synced`` False with
Go's network error; Crossplane keeps the XR Synced and Ready. Every function
turns those Objects into ``ClusterReachable`` False naming the cluster, keeps
the XR's readiness and everything it composes, and clears the condition once
the cluster answers. ``REFUSED`` is what provider-kubernetes wrote in ``make e2e``'s
fault drill that stops a workload cluster's API server.
"""

from typing import Any

import pytest

from fleetgate.core import reachability
from fleetgate.core.constants import OBJECT_API_VERSION
from fleetgate.core.reconcile import Reconcile
from tests.support import request, run

REFUSED = (
    "observe failed: cannot get object: failed to get API group resources: unable to retrieve "
    'the complete list of server APIs: aigateway.envoyproxy.io/v1beta1: Get "https://127.0.0.1:'
    '59113/apis/aigateway.envoyproxy.io/v1beta1": dial tcp 127.0.0.1:59113: connect: '
    "connection refused"
)
HUNG = 'connect failed: cannot get object: Get "https://10.0.0.9:6443/api": i/o timeout'
INVALID = 'cannot patch object: Backend.gateway.envoyproxy.io "x" is invalid: spec.endpoints'


def obj(cluster: str, synced: str = "True", message: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": OBJECT_API_VERSION,
        "kind": "Object",
        "spec": {"providerConfigRef": {"kind": "ClusterProviderConfig", "name": cluster}},
        "status": {
            "conditions": [
                {
                    "type": "Synced",
                    "status": synced,
                    "reason": "ReconcileError",
                    "message": message,
                },
                {"type": "Ready", "status": "True", "reason": "Available"},
            ]
        },
        **extra,
    }


def xr(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "qwen", "namespace": "team-a"},
        "status": {"conditions": list(conditions)},
    }


def compose_one(rec: Reconcile) -> None:
    """A composer that keeps what it composed, marked ready, as every function does."""
    rec.compose("backend", {"apiVersion": OBJECT_API_VERSION, "kind": "Object"}, ready=True)


GONE = ("False", "ClusterUnreachable")
HAD = {"type": "ClusterReachable", "status": "False", "reason": "ClusterUnreachable"}
CASES: list[tuple[str, dict[str, Any], dict[str, dict[str, Any]], tuple[str, str] | None]] = [
    ("every Object synced: nothing said", xr(), {"a": obj("eu")}, None),
    ("refused connection", xr(), {"a": obj("eu", "False", REFUSED)}, GONE),
    ("hung connection", xr(), {"a": obj("eu", "False", HUNG)}, GONE),
    ("a refusal by the cluster is not unreachability", xr(),
     {"a": obj("eu", "False", INVALID)}, None),
    ("a non-Object with the same message", xr(),
     {"a": {**obj("eu", "False", REFUSED), "apiVersion": "fleetgate.dev/v1alpha1"}}, None),
    ("answers again: cleared", xr(HAD), {"a": obj("eu")}, ("True", "Reachable")),
    ("cleared after a fatal error made it Unknown", xr({**HAD, "status": "Unknown"}),
     {"a": obj("eu")}, ("True", "Reachable")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("composite", "observed", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_condition(
    composite: dict[str, Any],
    observed: dict[str, dict[str, Any]],
    expected: tuple[str, str] | None,
) -> None:
    outcome = run(compose_one, request(composite, observed=observed))
    found = outcome.conditions.get(reachability.CONDITION)
    assert (found[:2] if found else None) == expected


def test_names_each_silent_cluster_and_what_to_check() -> None:
    observed = {
        "b": obj("us-east-1", "False", REFUSED),
        "a": obj("us-east-1", "False", REFUSED.replace("59113", "59114")),
        "c": obj("eu-west-1", "False", HUNG),
        "d": obj("ap-south-1"),
    }
    outcome = run(compose_one, request(xr(), observed=observed))
    _, _, message = outcome.conditions[reachability.CONDITION]
    assert message.startswith("the API server of cluster eu-west-1 does not answer")
    assert "cluster us-east-1 does not answer provider-kubernetes (2 composed Objects" in message
    assert "; a: " in message  # the first by name, so the message holds while it lasts
    assert "ClusterProviderConfig us-east-1" in message
    assert "ap-south-1" not in message
    assert "routes to it are kept" in message
    assert any(r.reason == "ClusterUnreachable" for r in outcome.rsp.results)  # a warning too


def test_readiness_and_desired_state_are_untouched() -> None:
    """Routes stay: the XR is not held back and nothing composed is dropped or unmarked."""
    outcome = run(compose_one, request(xr(), observed={"backend": obj("eu", "False", REFUSED)}))
    assert list(outcome.rsp.desired.resources) == ["backend"]
    assert outcome.rsp.desired.resources["backend"].ready == 1  # READY_TRUE
    assert outcome.rsp.desired.composite.ready == 0  # READY_UNSPECIFIED: Crossplane decides
