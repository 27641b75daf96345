"""compose-model-service stays within Crossplane's 4 MiB function messages at the API's maxima.

Sizes, not times: the reference workloads (tests/support/model_service_workloads.py)
are deterministic, so every request and response has an exact size. Each must
stay under two thirds of the limit, leaving room for what the workloads do
not model (``managedFields``, longer server-generated names).
"""

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.model_service.composer import compose
from tests.support import xrd_field
from tests.support.model_service_workloads import MESSAGE_LIMIT, WORKLOADS, Workload, calls

HEADROOM = MESSAGE_LIMIT * 2 // 3


@pytest.mark.parametrize("workload", WORKLOADS, ids=[w.name for w in WORKLOADS])
def test_every_call_fits_with_room_to_spare(workload: Workload) -> None:
    settled = calls(compose, workload)
    kinds = [c.who.split(" ")[0] for c in settled]
    # One ModelRoute per gateway, then the ModelService that reads them back.
    assert kinds == ["ModelRoute"] * workload.gateways + ["ModelService"]
    for call in settled:
        assert not [r for r in call.response.results if r.severity == fnv1.SEVERITY_FATAL]
        assert call.request.ByteSize() < HEADROOM, (call.who, call.request.ByteSize())
        assert call.response.ByteSize() < HEADROOM, (call.who, call.response.ByteSize())
    # The calls measured are the settled ones: each ModelRoute observed every
    # Object it composed, and the ModelService saw every route accepted.
    for call in settled[:-1]:
        assert set(call.request.observed.resources) == set(call.response.desired.resources)
    [routing] = settled[-1].response.conditions
    assert (routing.type, routing.status) == ("RoutingReady", fnv1.STATUS_CONDITION_TRUE)


def test_the_largest_workload_is_at_the_maxima_the_xrds_allow() -> None:
    # A route's backends are capped at the ModelRoute's maxItems (an AIGatewayRoute
    # rule's limit). The number of gateways serving a service has no such bound in
    # spec: the largest workload's 16 stands for a large fleet.
    largest = max(WORKLOADS, key=lambda w: (w.backends, w.gateways))
    assert largest.entries == xrd_field("modelservices", "spec.endpoints")["maxItems"]
    assert largest.backends == xrd_field("modelroutes", "spec.backends")["maxItems"]


def test_workloads_are_deterministic() -> None:
    workload = next(w for w in WORKLOADS if w.name == "medium")
    first, again = calls(compose, workload), calls(compose, workload)
    for one, other in zip(first, again, strict=True):
        assert one.request.SerializeToString(deterministic=True) == (
            other.request.SerializeToString(deterministic=True)
        )
        assert one.response.SerializeToString(deterministic=True) == (
            other.response.SerializeToString(deterministic=True)
        )
