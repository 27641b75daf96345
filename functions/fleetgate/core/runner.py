"""The gRPC entry every Fleetgate function shares.

A composer is a plain function of one ``Reconcile``. The runner turns bad
input into a fatal result naming the field and any other exception into a
fatal result that discloses nothing, so nothing ever escapes ``RunFunction``.
"""

import traceback
from collections.abc import Callable
from typing import Any

import click
import grpc
from crossplane.function import cli as sdkcli
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from fleetgate.core.errors import InputError
from fleetgate.core.function import Reconcile

Composer = Callable[[Reconcile], None]


def run_composer(compose: Composer, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    """Answer one request with ``compose``; never raises."""
    rsp = response.to(req)
    rec = Reconcile(req, rsp)
    try:
        compose(rec)
        rec.finish()
    except InputError as err:
        rsp = response.to(req)
        Reconcile(req, rsp).fatal(str(err))
    except Exception as err:
        # Frames only, never the exception's text: it may quote input values.
        logging.get_logger().error(
            "composer failed",
            error=type(err).__name__,
            traceback="".join(traceback.format_tb(err.__traceback__)),
        )
        rsp = response.to(req)
        # The type only: an exception's text may quote input, Secrets included.
        Reconcile(req, rsp).fatal(f"internal error ({type(err).__name__}); see the function's logs")
    return rsp


class FunctionRunner(grpcv1.FunctionRunnerServiceServicer):
    """Serves one composer over Crossplane's FunctionRunnerService."""

    def __init__(self, compose: Composer) -> None:
        self._compose = compose

    async def RunFunction(  # noqa: N802 - the gRPC method name
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext
    ) -> fnv1.RunFunctionResponse:
        return run_composer(self._compose, req)


def command(name: str, compose: Composer) -> click.Command:
    """The console script for a function, with the SDK's standard flags."""

    @click.command(name=name, help=f"Serve the {name} Crossplane composition function.")
    @sdkcli.standard_options
    def cli(**kwargs: Any) -> None:
        sdkcli.run(FunctionRunner(compose), **kwargs)

    return cli
