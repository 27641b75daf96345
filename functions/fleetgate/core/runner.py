"""The gRPC entry every Fleetgate function shares.

A composer is a plain function of one ``Reconcile``. The runner turns bad
input into a fatal result naming the field and any other exception into a
fatal result that discloses nothing, so nothing ever escapes ``RunFunction``.

The server is the SDK's (same flags, read by ``flags`` without click; v1 and
v1beta1, reflection, mutual TLS with ``--tls-certs-dir``, a grace period on
SIGTERM) with four differences, each load-bearing:

* responses are encoded deterministically. protobuf map fields (every Struct,
  ``desired.resources``, ``requirements.resources``) are written in hash order,
  and the hash is seeded per process: without this the same request answered
  by two replicas of a function gives different bytes;
* a request that is not a RunFunctionRequest is refused with INVALID_ARGUMENT
  (the SDK answers UNKNOWN and logs a traceback), and a response larger than
  the configured send limit becomes a fatal result saying so, instead of an
  opaque RESOURCE_EXHAUSTED that Crossplane retries forever;
* composing runs on a small thread pool, so the event loop keeps accepting
  calls, answering reflection and handling SIGTERM while a large XR composes;
* the listening address is this process's alone. gRPC sets SO_REUSEPORT by
  default, so a second function started on a taken address binds it too and
  the kernel splits connections between the two: Crossplane's calls for one
  function are answered by another, which refuses the XR as malformed. Here the
  second process exits saying the address is in use.
"""

import asyncio
import os
import signal
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from crossplane.function import response
from crossplane.function import runtime as sdkruntime
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from grpc_reflection.v1alpha import reflection  # type: ignore[import-untyped]

from fleetgate.core import flags, log, pacing, structs
from fleetgate.core.errors import InputError
from fleetgate.core.reconcile import Reconcile

Composer = Callable[[Reconcile], None]

# Crossplane calls v1; v1beta1 is kept for older Crossplanes. The two messages
# are wire-identical (the SDK converts between them by re-parsing the bytes).
SERVICES = (
    "apiextensions.fn.proto.v1.FunctionRunnerService",
    "apiextensions.fn.proto.v1beta1.FunctionRunnerService",
)
GRACE_PERIOD_S = sdkruntime.SHUTDOWN_GRACE_PERIOD_SECONDS
# Composing is CPU-bound Python: more threads than this only add contention.
COMPOSE_THREADS = 4
MB = 1024 * 1024


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
    except structs.NotJSONError:
        rsp = response.to(req)
        Reconcile(req, rsp).fatal(
            f"the request holds a number JSON cannot hold (NaN or Infinity) at {_not_json(req)}; "
            "nothing was changed"
        )
    except Exception as err:
        # Frames only, never the exception's text: it may quote input values.
        log.get().error(
            "composer failed",
            error=type(err).__name__,
            traceback="".join(traceback.format_tb(err.__traceback__)),
        )
        rsp = response.to(req)
        # The type only: an exception's text may quote input, Secrets included.
        Reconcile(req, rsp).fatal(f"internal error ({type(err).__name__}); see the function's logs")
    return rsp


def _not_json(req: fnv1.RunFunctionRequest) -> str:
    """Where in the request the first number JSON cannot hold is, for the fatal result."""
    places = [("the XR", req.observed.composite.resource), ("the step's input", req.input)]
    for key in sorted(req.required_resources):
        for i, item in enumerate(req.required_resources[key].items):
            places.append((f"required resource {key}[{i}]", item.resource))
    for name in sorted(req.observed.resources):
        places.append((f"observed resource {name}", req.observed.resources[name].resource))
    for where, struct in places:
        path = structs.first_not_json(struct)
        if path is not None:
            return f"{where}: {path}"
    return "an unknown place"


def encode(rsp: fnv1.RunFunctionResponse) -> bytes:
    """The response's wire bytes: the same for the same response in every process."""
    data: bytes = rsp.SerializeToString(deterministic=True)
    return data


def answer(
    compose: Composer, req: fnv1.RunFunctionRequest, *, max_bytes: int | None = None
) -> bytes:
    """``run_composer`` encoded; a response over ``max_bytes`` becomes a fatal result.

    Crossplane treats a fatal result as a failed reconcile and applies nothing,
    so an oversized answer deletes nothing and says why, where a gRPC
    RESOURCE_EXHAUSTED would only say that something was too big.
    """
    data = encode(run_composer(compose, req))
    if max_bytes is not None and len(data) > max_bytes:
        log.get().error("response too large", size=len(data), limit=max_bytes)
        rsp = response.to(req)
        Reconcile(req, rsp).fatal(
            f"the composed response is {len(data)} bytes, over this function's gRPC message "
            f"limit of {max_bytes} bytes (--max-send-message-size); nothing was changed"
        )
        data = encode(rsp)
    return data


def _describe(req: fnv1.RunFunctionRequest) -> dict[str, str]:
    """What a log line may say about a request: its tag and the XR's kind and name."""
    xr = req.observed.composite.resource.fields
    meta = xr["metadata"].struct_value.fields if "metadata" in xr else {}
    return {
        "tag": req.meta.tag,
        "kind": xr["kind"].string_value if "kind" in xr else "",
        "name": meta["name"].string_value if "name" in meta else "",
    }


class FunctionRunner:
    """Serves one composer over Crossplane's FunctionRunnerService (``handlers``)."""

    def __init__(self, compose: Composer, *, max_response_bytes: int | None = None) -> None:
        self._compose = compose
        self._max_bytes = max_response_bytes
        self._pool = ThreadPoolExecutor(COMPOSE_THREADS, thread_name_prefix="compose")

    async def run_encoded(self, data: bytes, context: grpc.aio.ServicerContext) -> bytes:
        """One call on the wire: bytes in, deterministic bytes out."""
        req = fnv1.RunFunctionRequest()
        try:
            req.ParseFromString(data)
        except DecodeError:
            log.get().warning("refused a malformed RunFunctionRequest", size=len(data))
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "the request is not a RunFunctionRequest"
            )
        call = log.get().bind(**_describe(req)) if log.debugging() else None
        if call is not None:
            call.debug("RunFunction", size=len(data))
        loop = asyncio.get_running_loop()
        out = await loop.run_in_executor(
            self._pool, lambda: answer(self._compose, req, max_bytes=self._max_bytes)
        )
        if call is not None:
            call.debug("RunFunction answered", size=len(out))
        return out

    def handlers(self) -> list[grpc.GenericRpcHandler]:
        """v1 and v1beta1 RunFunction, taking and returning raw bytes (see ``encode``)."""
        method = grpc.unary_unary_rpc_method_handler(self.run_encoded)
        return [
            grpc.method_handlers_generic_handler(service, {"RunFunction": method})
            for service in SERVICES
        ]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def serve(
    runner: FunctionRunner,
    address: str,
    *,
    creds: grpc.ServerCredentials | None,
    insecure: bool,
    options: Sequence[tuple[str, Any]] = (),
) -> None:
    """Serve until SIGTERM, then let calls in flight finish within the grace period.

    The SDK's ``runtime.serve`` with ``runner.handlers()`` in place of its
    servicers; insecure wins over credentials, as the SDK's flag help says.
    """
    if creds is None and not insecure:
        raise ValueError(
            "no credentials were provided - did you provide credentials or use the insecure flag?"
        )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    server = grpc.aio.server(options=[*options, ("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers(runner.handlers())
    reflection.enable_server_reflection(sdkruntime.SERVICE_NAMES, server)
    try:
        if insecure:
            server.add_insecure_port(address)
        else:
            server.add_secure_port(address, creds)
    except RuntimeError:  # grpc's only word for it: "Failed to bind to address"
        runner.close()
        loop.close()
        raise SystemExit(f"cannot listen on {address}: the address is in use or invalid") from None
    stopping: list[asyncio.Future[None]] = []
    loop.add_signal_handler(
        signal.SIGTERM,
        lambda: stopping.append(asyncio.ensure_future(server.stop(grace=GRACE_PERIOD_S))),
    )

    async def run() -> None:
        await server.start()
        await server.wait_for_termination()

    try:
        loop.run_until_complete(run())
    finally:
        loop.run_until_complete(server.stop(grace=GRACE_PERIOD_S))
        _finish_tasks(loop)
        runner.close()
        loop.close()


def _finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the stopped server left scheduled and let it finish, as ``asyncio.run``
    does on its way out: a task still pending when the loop closes is destroyed, and
    asyncio logs "Task was destroyed but it is pending!" for each, an error line for a
    clean stop (seen on a loaded machine: grpc's handler tasks waiting on a done future)."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())


def command(name: str, compose: Composer) -> Callable[..., None]:
    """The console script for a function, with the SDK's standard flags (``flags``)."""
    cli = flags.parser(name, f"Serve the {name} Crossplane composition function.")

    def main(argv: Sequence[str] | None = None) -> None:
        opts = flags.parse(cli, argv, os.environ)
        try:
            pacing.configure(os.environ)
        except ValueError as err:
            cli.error(str(err))  # exits 2, as a bad flag does
        # As sdkcli.run: the same log formats, limits in MB, send defaulting to receive.
        log.configure(debug=opts.debug)
        receive = opts.max_recv_message_size
        send = receive if opts.max_send_message_size is None else opts.max_send_message_size
        serve(
            FunctionRunner(compose, max_response_bytes=send * MB),
            opts.address,
            creds=None if opts.insecure else sdkruntime.load_credentials(opts.tls_certs_dir),
            insecure=opts.insecure,
            options=[
                ("grpc.max_receive_message_length", receive * MB),
                ("grpc.max_send_message_length", send * MB),
            ],
        )

    return main
