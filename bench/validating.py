"""The minimal SDK function (``bench/minimal.py``) validating its XR with pydantic first.

The least a function that validates its input with pydantic does: one
two-field model, built on first use like the Fleetgate models. Its cold start
is reported beside the target, not judged: the share of the budget that
pydantic takes (its own import, and on the first validator its plugin
loader's import of ``importlib.metadata``) before a function composes
anything. A module of its own, so that the minimal function imports no
pydantic model.
"""

import os
from typing import Any

import click
import grpc
from crossplane.function import cli as sdkcli
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from pydantic import BaseModel, ConfigDict

from bench.minimal import Minimal


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


@click.command(name="bench-validating-function")
@sdkcli.standard_options
def cli(**kwargs: Any) -> None:
    # As the Fleetgate functions start (fleetgate.core.startup): no plugin scan.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    sdkcli.run(Validating(), **kwargs)


SCRIPT = "bench.validating:cli"
