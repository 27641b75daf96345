"""The SDK's own floors: the least a composition function on the same SDK can be.

``cli`` answers every request with the SDK's ``response.to(req)`` and composes
nothing. Its cold start (interpreter, gRPC, protobuf, the SDK's imports, one
answered call) is what every Python function on this SDK pays; a Fleetgate
function's cold start is reported as a multiple of it, measured in the same run.

``validating_cli`` does the same after validating the XR's name with a
two-field pydantic model, the least a function that validates its input
with pydantic does. It is reported beside the target, not judged: the share
of the cold-start budget pydantic takes before a function does anything.
"""

import os
from typing import Any

import click
import grpc
from crossplane.function import cli as sdkcli
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from pydantic import BaseModel, ConfigDict


class Minimal(grpcv1.FunctionRunnerServiceServicer):
    async def RunFunction(  # noqa: N802 - the gRPC method name
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext
    ) -> fnv1.RunFunctionResponse:
        return response.to(req)


class _Meta(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)
    name: str


class _Composite(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)
    metadata: _Meta


class Validating(Minimal):
    async def RunFunction(  # noqa: N802 - the gRPC method name
        self, req: fnv1.RunFunctionRequest, context: grpc.aio.ServicerContext
    ) -> fnv1.RunFunctionResponse:
        _Composite.model_validate(resource.struct_to_dict(req.observed.composite.resource))
        return await super().RunFunction(req, context)


@click.command(name="bench-minimal-function")
@sdkcli.standard_options
def cli(**kwargs: Any) -> None:
    sdkcli.run(Minimal(), **kwargs)


@click.command(name="bench-validating-function")
@sdkcli.standard_options
def validating_cli(**kwargs: Any) -> None:
    # As the Fleetgate functions start (fleetgate.core.startup): no plugin scan.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    sdkcli.run(Validating(), **kwargs)


SCRIPT = "bench.minimal:cli"
VALIDATING_SCRIPT = "bench.minimal:validating_cli"
