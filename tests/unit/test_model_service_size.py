"""compose-model-service stays within Crossplane's 4 MiB function messages at the API's maxima.

Sizes, not times: the benchmark's largest ModelService workloads
(``bench.workloads.service``), settled the way Crossplane would reconcile them
(``bench.settle``): every request the ModelService and each ModelRoute it
composes are sent once the fleet is steady, with what a real API server adds
to observed objects. Each must stay under two thirds of the limit, leaving room
for what the emulation does not add (``managedFields``, longer generated names).
"""

from collections.abc import Callable, Iterator

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from bench.settle import Reconciler, Settled
from bench.workloads import Workload, service
from schemas import xrds
from sim.controllers import World

# gRPC's default maximum message size, which Crossplane and the SDK keep.
MESSAGE_LIMIT = 4 * 1024 * 1024
HEADROOM = MESSAGE_LIMIT * 2 // 3
# The largest: 128 endpoints selected, each route full, behind 16 gateways.
ENTRIES, PER_ENTRY, GATEWAYS = 32, 4, 16

LARGEST = [
    pytest.param(lambda: service(ENTRIES, PER_ENTRY, GATEWAYS), id="max"),
    pytest.param(
        lambda: service(ENTRIES, PER_ENTRY, GATEWAYS, third_party_every=1), id="max-credentials"
    ),
    pytest.param(lambda: service(ENTRIES, PER_ENTRY, GATEWAYS, long_names=True), id="max-long"),
]


def calls(settled: Settled) -> Iterator[Settled]:
    """Each composed XR's steady call, then its composer's."""
    for child in settled.children:
        yield from calls(child)
    yield settled


@pytest.mark.parametrize("build", LARGEST)
def test_every_call_fits_with_room_to_spare(build: Callable[[], Workload]) -> None:
    workload = build()
    steady = list(calls(Reconciler(workload.pool).settle(workload.xr)))
    # One ModelRoute per gateway, then the ModelService that reads them back.
    kinds = [s.xr["kind"] for s in steady]
    assert kinds == ["ModelRoute"] * GATEWAYS + ["ModelService"]
    for s in steady:
        who = f"{s.xr['kind']} {s.xr['metadata']['name']}"
        assert not [r for r in s.response.results if r.severity == fnv1.SEVERITY_FATAL], who
        assert s.request.ByteSize() < HEADROOM, (who, s.request.ByteSize())
        assert s.response.ByteSize() < HEADROOM, (who, s.response.ByteSize())
        # The call measured is the steady one: it observed everything it composed.
        assert set(s.request.observed.resources) == set(s.response.desired.resources), who
    assert steady[-1].conditions["RoutingReady"] == "True"


def test_the_largest_workload_is_at_the_maxima_the_xrds_allow() -> None:
    # A route's backends are capped at the ModelRoute's maxItems (the HTTPRoute rule
    # AI Gateway generates holds 16); the service still resolves every endpoint its
    # entries select, so the largest workload selects more than fill each route. The
    # number of gateways serving a service has no bound in spec: the largest
    # workload's 16 stands for a large fleet.
    workload = service(ENTRIES, PER_ENTRY, GATEWAYS)
    endpoints = [o for o in workload.pool.objects if o["kind"] == "ModelEndpoint"]
    assert (
        len(workload.xr["spec"]["endpoints"])
        == (xrds.field("ModelService", "spec.endpoints")["maxItems"])
    )
    assert len(endpoints) >= xrds.field("ModelRoute", "spec.backends")["maxItems"]


def test_the_same_fleet_gives_the_same_bytes() -> None:
    workload, world = service(8, 4, 4), World(load_balancers={})
    first, again = (
        list(calls(Reconciler(workload.pool, world=world).settle(workload.xr))) for _ in range(2)
    )
    for one, other in zip(first, again, strict=True):
        assert one.request.SerializeToString(deterministic=True) == (
            other.request.SerializeToString(deterministic=True)
        )
        assert one.response.SerializeToString(deterministic=True) == (
            other.response.SerializeToString(deterministic=True)
        )
