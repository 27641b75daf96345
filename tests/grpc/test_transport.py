"""The console scripts at the edge of the wire: bad bytes, big messages, shutdown, determinism.

* a request that is not a RunFunctionRequest (garbage, a truncated message,
  nesting deeper than protobuf parses) is refused with INVALID_ARGUMENT, one
  over the receive limit with RESOURCE_EXHAUSTED, and the process keeps serving;
* an answer over the send limit is a fatal result saying so, not a transport error;
* two processes answer the same request with the same bytes;
* a second process on a taken address exits saying so, instead of sharing it;
* SIGTERM while calls are in flight lets every one of them finish within the
  grace period, and the process exits 0.
"""

import concurrent.futures
import copy
import json
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from e2e.functions import console_script
from fleetgate.core import names
from fleetgate.core.runner import GRACE_PERIOD_S
from tests.grpc.process import FUNCTIONS, TIMEOUT_S, Server, insecure, raw_call, run, serving

Requests = dict[str, list[fnv1.RunFunctionRequest]]
MB = 1024 * 1024


def nested_struct_bytes(depth: int) -> bytes:
    """A RunFunctionRequest whose XR nests ``depth`` objects deep (written by hand)."""
    value = b""
    for _ in range(depth):
        # Value{struct_value: Struct{fields: {"a": value}}}
        entry = b"\x0a\x01a" + b"\x12" + _varint(len(value)) + value
        struct = b"\x0a" + _varint(len(entry)) + entry
        value = b"\x2a" + _varint(len(struct)) + struct
    xr = b"\x0a\x01x" + b"\x12" + _varint(len(value)) + value  # fields entry "x"
    resource = b"\x0a" + _varint(len(xr)) + xr  # Resource.resource = Struct
    composite = b"\x0a" + _varint(len(resource)) + resource  # State.composite
    return b"\x12" + _varint(len(composite)) + composite  # RunFunctionRequest.observed


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def truncated(reqs: Requests, name: str) -> bytes:
    data: bytes = reqs[name][0].SerializeToString()
    return data[:-3]


BAD_REQUESTS: dict[str, tuple[Callable[[Requests, str], bytes], grpc.StatusCode]] = {
    "garbage bytes": (lambda r, n: b"\xff\xfe\xfd not protobuf", grpc.StatusCode.INVALID_ARGUMENT),
    "a truncated request": (truncated, grpc.StatusCode.INVALID_ARGUMENT),
    "nesting deeper than protobuf parses": (
        lambda r, n: nested_struct_bytes(200),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    "over the 4 MB receive limit": (
        lambda r, n: b"\x0a" + _varint(5 * MB) + b"x" * (5 * MB),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    ),
}


@pytest.fixture(params=FUNCTIONS, scope="module")
def server(request: pytest.FixtureRequest, logs: Path) -> Iterator[Server]:
    with serving(request.param, "--insecure", log_dir=logs) as running:
        yield running
        assert running.stop() == 0


@pytest.mark.parametrize("bad", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_request_is_refused_and_serving_continues(
    server: Server,
    fleet_requests: Requests,
    bad: tuple[Callable[[Requests, str], bytes], grpc.StatusCode],
) -> None:
    make, code = bad
    good = fleet_requests[server.name][0]
    with insecure(server.address) as channel:
        with pytest.raises(grpc.RpcError) as err:
            raw_call(channel, make(fleet_requests, server.name))
        assert err.value.code() == code
        assert run(channel, good).meta.tag == good.meta.tag
    assert server.proc.poll() is None, "the function process is still running"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_at_the_default_level_only_what_went_wrong_is_logged_as_the_sdks_json(
    name: str, fleet_requests: Requests, logs: Path
) -> None:
    """A good call writes no line; a refused one writes one, in the SDK's production format.

    The SDK's logging is configured when the first line is written
    (``fleetgate.core.log``): this is what shows it was, at info level.
    """
    good = fleet_requests[name][0]
    with serving(name, "--insecure", log_dir=logs) as server:
        with insecure(server.address) as channel:
            assert run(channel, good).meta.tag == good.meta.tag
            quiet = server.logged()
            with pytest.raises(grpc.RpcError):
                raw_call(channel, b"\xff\xfe\xfd not protobuf")
            assert run(channel, good).meta.tag == good.meta.tag
        assert server.stop() == 0
        lines = server.logged()[len(quiet) :].splitlines()
    assert quiet == "", "a good call at info level writes nothing"
    assert len(lines) == 1, lines
    line = json.loads(lines[0])
    assert (line["level"], line["msg"]) == ("warning", "refused a malformed RunFunctionRequest")
    assert {"ts", "filename", "lineno", "size"} <= line.keys()


def test_two_processes_answer_with_the_same_bytes(
    server: Server, fleet_requests: Requests, logs: Path
) -> None:
    """protobuf writes maps in a per-process hash order unless told to be deterministic."""
    with serving(server.name, "--insecure", log_dir=logs) as twin:
        with insecure(server.address) as one, insecure(twin.address) as other:
            for req in fleet_requests[server.name]:
                data = req.SerializeToString()
                assert raw_call(one, data) == raw_call(other, data)
        assert twin.stop() == 0


def test_a_second_process_on_a_taken_address_exits_instead_of_sharing_it(
    server: Server, fleet_requests: Requests
) -> None:
    """gRPC binds with SO_REUSEPORT unless told not to: two functions on one address
    would both serve, and the kernel would hand each call to either of them."""
    second = subprocess.run(
        [console_script(server.name), "--insecure", "--address", server.address],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert second.returncode != 0
    assert f"cannot listen on {server.address}" in second.stderr
    good = fleet_requests[server.name][0]
    with insecure(server.address) as channel:
        assert run(channel, good).meta.tag == good.meta.tag


def gateway_reaching(clusters: int, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionRequest:
    """``req`` (an InferenceGateway's) with ``clusters`` more published clusters, 30 KB CA each.

    The gateway copies every cluster's CA into a ConfigMap on its cluster.
    """
    bigger = copy.deepcopy(req)
    pem = "-----BEGIN CERTIFICATE-----\n" + "A" * 30_000 + "\n-----END CERTIFICATE-----\n"
    listed = bigger.required_resources["clusters"]
    for i in range(clusters):
        name = f"far-{i}"
        listed.items.add().resource.update(
            {
                "apiVersion": "fleetgate.dev/v1alpha1",
                "kind": "InferenceCluster",
                "metadata": {"name": name},
                "spec": {"credentials": {"providerConfigName": name}},
                "status": {
                    "providerConfigRef": {"name": name},
                    "gateway": {
                        "address": f"10.0.{i // 250}.{i % 250 + 1}",
                        "caCertificate": pem,
                        "hostname": names.cluster_hostname(name),
                    },
                },
            }
        )
    return bigger


def test_an_answer_over_the_send_limit_is_a_fatal_result(
    fleet_requests: Requests, logs: Path
) -> None:
    name = "compose-inference-gateway"
    req = gateway_reaching(40, fleet_requests[name][0])
    with serving(name, "--insecure", log_dir=logs) as roomy:
        with insecure(roomy.address) as channel:
            rsp = run(channel, req)
        assert not [r for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
        assert rsp.ByteSize() > MB, "the answer must outgrow the tight limit below"
        assert roomy.stop() == 0
    with serving(name, "--insecure", "--max-send-message-size", "1", log_dir=logs) as tight:
        with insecure(tight.address) as channel:
            rsp = run(channel, req)
        fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
        assert len(fatal) == 1
        assert f"over this function's gRPC message limit of {MB} bytes" in fatal[0]
        assert not rsp.desired.resources, "nothing half-composed goes back"
        assert tight.stop() == 0


IN_FLIGHT = 32
# Every function reads its XR's metadata first; 30,000 annotations make each
# call take tens of milliseconds, so calls are still in flight at SIGTERM.
PADDING = {f"example.com/k{i}": f"v{i}" for i in range(30_000)}


def padded(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionRequest:
    slow = copy.deepcopy(req)
    annotations = slow.observed.composite.resource.fields["metadata"].struct_value.fields[
        "annotations"
    ]
    annotations.struct_value.update(PADDING)
    return slow


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def handled(server: Server) -> tuple[int, int]:
    """Calls the function has started and finished answering, from its --debug log."""
    text = ANSI.sub("", server.logged())
    answered = len(re.findall(r"\] RunFunction answered", text))
    return len(re.findall(r"\] RunFunction\s", text)) - answered, answered


@pytest.mark.parametrize("name", FUNCTIONS)
def test_sigterm_lets_calls_in_flight_finish(
    name: str, fleet_requests: Requests, logs: Path
) -> None:
    """Every call the function took before SIGTERM is answered in the grace period; exit 0.

    SIGTERM goes out once the function has started on every call (its debug
    log says so) and while some are still unanswered.
    """
    some = [padded(req) for req in fleet_requests[name][:4]]
    reqs = [some[i % len(some)] for i in range(IN_FLIGHT)]
    with (
        serving(name, "--insecure", "--debug", log_dir=logs) as server,
        insecure(server.address) as channel,
    ):
        run(channel, reqs[0])  # connected and warm
        with concurrent.futures.ThreadPoolExecutor(IN_FLIGHT) as pool:
            futures = [pool.submit(run, channel, req) for req in reqs]
            deadline = time.monotonic() + 30
            while handled(server)[0] < IN_FLIGHT + 1 and time.monotonic() < deadline:
                time.sleep(0.002)
            server.proc.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            started, answered = handled(server)
            answers = [f.result(timeout=GRACE_PERIOD_S + 10) for f in futures]
        status = server.proc.wait(timeout=GRACE_PERIOD_S + 10)
        took = time.monotonic() - stopped
    assert started == IN_FLIGHT + 1, "every call reached the function before SIGTERM"
    assert answered < started, "some calls were still in flight at SIGTERM"
    assert [a.meta.tag for a in answers] == [r.meta.tag for r in reqs]
    assert status == 0
    assert took < GRACE_PERIOD_S + 2
