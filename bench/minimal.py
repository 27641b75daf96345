"""The SDK's own floor: the least a composition function on the same SDK can be.

It answers every request with the SDK's ``response.to(req)`` and composes
nothing. Its cold start (interpreter, gRPC, protobuf, the SDK's imports, one
answered call) is what every Python function on this SDK pays; a Fleetgate
function's cold start is reported as a multiple of it, measured in the same run.
It imports no pydantic model: ``bench/validating.py`` is the same function
validating its XR with one.
"""

from typing import Any

import click
import grpc
from crossplane.function import cli as sdkcli
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1


class Minimal(grpcv1.FunctionRunnerServiceServicer):
    async def RunFunction(  # noqa: N802 - the gRPC method name
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext
    ) -> fnv1.RunFunctionResponse:
        return response.to(req)


@click.command(name="bench-minimal-function")
@sdkcli.standard_options
def cli(**kwargs: Any) -> None:
    sdkcli.run(Minimal(), **kwargs)


SCRIPT = "bench.minimal:cli"
