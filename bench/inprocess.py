"""Per-call cost inside one process, and the floor it is measured against.

The floor is what answering with *this* response costs on the SDK before any
composing: encoding it (every desired resource and the XR from plain data into
the protobuf with the SDK's ``resource.update``, then to bytes) and decoding it
(bytes back to the message, every resource back to plain data with the SDK's
``resource.struct_to_dict``). It grows with the response exactly as the
function's own cost should, and machine noise moves both alike, so the ratio
of the two is the figure to compare between runs and machines. The bare
protobuf serialise-and-parse (upb, in C) is recorded beside it as ``wire``,
and decoding the *request* the same way as ``request_decode``: a function
whose response is tiny next to its inputs (compose-model-endpoint composes
nothing) is dominated by reading them, which the response floor cannot show.
"""

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from bench.stats import Budget, Timing, measure, measure_together
from fleetgate.core.runner import Composer, run_composer

MIB = 1024 * 1024


@dataclass(frozen=True)
class Plain:
    """A response with its resources as plain data, ready to be encoded again."""

    shell: fnv1.RunFunctionResponse  # everything but the resources' contents
    composite: dict[str, Any]
    composite_ready: int
    resources: dict[str, tuple[dict[str, Any], int]]  # name -> (manifest, ready)

    @classmethod
    def of(cls, rsp: fnv1.RunFunctionResponse) -> "Plain":
        shell = fnv1.RunFunctionResponse()
        shell.CopyFrom(rsp)
        shell.desired.Clear()
        return cls(
            shell,
            resource.struct_to_dict(rsp.desired.composite.resource),
            rsp.desired.composite.ready,
            {
                name: (resource.struct_to_dict(r.resource), r.ready)
                for name, r in rsp.desired.resources.items()
            },
        )

    def encode(self) -> bytes:
        rsp = fnv1.RunFunctionResponse()
        rsp.CopyFrom(self.shell)
        composite = rsp.desired.composite
        resource.update(composite, self.composite)
        composite.ready = self.composite_ready  # type: ignore[assignment]
        for name, (manifest, ready) in self.resources.items():
            desired = rsp.desired.resources[name]
            resource.update(desired, manifest)
            desired.ready = ready
        return bytes(rsp.SerializeToString())


def decode(data: bytes) -> None:
    rsp = fnv1.RunFunctionResponse.FromString(data)
    resource.struct_to_dict(rsp.desired.composite.resource)
    for r in rsp.desired.resources.values():
        resource.struct_to_dict(r.resource)


def decode_request(data: bytes) -> None:
    """The request to plain data the SDK's way: the XR, every required and observed resource."""
    req = fnv1.RunFunctionRequest.FromString(data)
    resource.struct_to_dict(req.observed.composite.resource)
    for required in req.required_resources.values():
        for item in required.items:
            resource.struct_to_dict(item.resource)
    for observed in req.observed.resources.values():
        resource.struct_to_dict(observed.resource)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Time calls the way a function process makes them: with what is alive before, frozen.

    A function process freezes its imports once started (core.startup), so the
    cyclic collector, during a call, walks only what that call allocates. This
    process also holds every settled workload, which no function process does:
    unfrozen, a collection triggered by a large call walks all of them, and
    the cost of a call would grow with the size of the benchmark's own heap.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass(frozen=True)
class InProcess:
    call: Timing
    floor: Timing
    wire: Timing
    request_decode: Timing
    response_bytes: int
    request_bytes: int
    desired_resources: int
    deterministic: bool

    @property
    def ratio(self) -> float:
        return round(self.call.p50_ms / self.floor.p50_ms, 3)

    def as_dict(self) -> dict[str, Any]:
        return {
            "call": self.call.as_dict(),
            "floor": self.floor.as_dict(),
            "wire": self.wire.as_dict(),
            "request_decode": self.request_decode.as_dict(),
            "ratio_to_floor": self.ratio,
            "response_bytes": self.response_bytes,
            "response_mib": round(self.response_bytes / MIB, 3),
            "response_headroom_to_4mib": round(1 - self.response_bytes / (4 * MIB), 3),
            "request_bytes": self.request_bytes,
            "request_mib": round(self.request_bytes / MIB, 3),
            "desired_resources": self.desired_resources,
            "deterministic": self.deterministic,
        }


def in_process(
    compose: Composer, req: fnv1.RunFunctionRequest, budget: Budget, quick: Budget
) -> InProcess:
    """Time ``compose`` on ``req``, the floor of its response, and the cheaper references."""
    rsp = run_composer(compose, req)
    again = run_composer(compose, req)
    data = rsp.SerializeToString(deterministic=True)
    plain = Plain.of(rsp)
    req_data = req.SerializeToString()
    with frozen_heap():
        timed = measure_together(
            {"call": lambda: run_composer(compose, req), "floor": lambda: decode(plain.encode())},
            budget,
        )
        wire = measure(lambda: fnv1.RunFunctionResponse.FromString(rsp.SerializeToString()), quick)
        request_decode = measure(lambda: decode_request(req_data), quick)
    return InProcess(
        call=timed["call"],
        floor=timed["floor"],
        wire=wire,
        request_decode=request_decode,
        response_bytes=len(data),
        request_bytes=req.ByteSize(),
        desired_resources=len(rsp.desired.resources),
        deterministic=data == again.SerializeToString(deterministic=True),
    )
