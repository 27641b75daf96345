"""Stand-in for Envoy AI Gateway's extension server: every hook refused at once.

The stack names AI Gateway's controller as Envoy Gateway's extension manager
(functions/fleetgate/inference_cluster/stack.py), and AI Gateway's module is
not served by the Go module proxy, so its server cannot run here. Left
unanswered, Envoy Gateway v1.8.3 waits for it forever: its extension client
is configured ``waitForReady`` (internal/extension/registry/
extension_manager.go:43-53) and calls each hook with ``context.Background()``
(xds_hook.go:160-170), so the xDS runner never returns from its first
translation and never publishes the EnvoyPatchPolicy statuses it computed
(internal/xds/runner/runner.go:325-384). This stand-in answers every call
with ``UNIMPLEMENTED``, which the extension manager does not retry (it
retries only ``UNAVAILABLE`` unless told otherwise, extension_manager.go:528-531): the translation
ends with the hook's error, as with any failing extension server and
``failOpen`` off (internal/xds/translator/translator.go:167-177), and the
statuses are published (runner.go:360-384). It writes nothing: none of AI
Gateway's changes to the xDS are played, and no Envoy reads the snapshot.

Run inside Envoy Gateway's network namespace: ``python -m
e2e.controlplane.extension_refusal PORT``.
"""

import sys
from concurrent import futures
from typing import Any

import grpc


class Refusal(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc ships no types
    """Every method of every service, answered ``UNIMPLEMENTED`` (all of Envoy Gateway's
    extension hooks are unary)."""

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        def refuse(_request: bytes, context: grpc.ServicerContext) -> Any:
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                f"{details.method}: AI Gateway's extension server does not run on this plane",
            )

        return grpc.unary_unary_rpc_method_handler(refuse)


def main(port: int) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[Refusal()])
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    server.wait_for_termination()


if __name__ == "__main__":
    main(int(sys.argv[1]))
