"""Reading Crossplane's count of function calls (plane/calls.py)."""

from plane import calls

# As Crossplane core serves it: one series per Function, target and method
# (internal/xfn/function_runner_metrics.go:38-45 at v2.4.0).
SCRAPED = """\
# HELP function_run_function_request_total Total number of RunFunctionRequests sent.
# TYPE function_run_function_request_total counter
function_run_function_request_total{function_name="fleetgate-compose-model-service",\
function_package="localhost:5000/fleetgate/compose-model-service:v0.1.0",\
grpc_method="/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction",\
grpc_target="127.0.0.1:41234"} 42
function_run_function_request_total{function_name="fleetgate-compose-model-service",\
function_package="localhost:5000/fleetgate/compose-model-service:v0.1.0",\
grpc_method="/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction",\
grpc_target="127.0.0.1:41999"} 3
function_run_function_request_total{function_name="fleetgate-compose-model-endpoint",\
function_package="localhost:5000/fleetgate/compose-model-endpoint:v0.1.0",\
grpc_method="/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction",\
grpc_target="127.0.0.1:40001"} 7
# HELP function_run_function_seconds Histogram of RunFunctionResponse latency (seconds).
function_run_function_seconds_count{function_name="fleetgate-compose-model-endpoint"} 7
"""


def test_calls_are_summed_per_function_across_targets() -> None:
    assert calls.parse(SCRAPED) == {
        "fleetgate-compose-model-service": 45.0,
        "fleetgate-compose-model-endpoint": 7.0,
    }


def test_nothing_counted_yet_reads_as_no_calls() -> None:
    assert calls.parse("# HELP something else\nprocess_cpu_seconds_total 1.5\n") == {}


def test_the_watch_circuit_breakers_are_read_over_every_xr_controller() -> None:
    """As Crossplane v2.4 core serves them (internal/circuit/circuit_metrics.go)."""
    scraped = """\
# TYPE circuit_breaker_opens_total counter
circuit_breaker_opens_total{controller="composite/modelservices.fleetgate.dev"} 3
circuit_breaker_opens_total{controller="composite/modelroutes.fleetgate.dev"} 1
# TYPE circuit_breaker_events_total counter
circuit_breaker_events_total{controller="composite/modelservices.fleetgate.dev",result="Allowed"} 90
circuit_breaker_events_total{controller="composite/modelroutes.fleetgate.dev",result="Allowed"} 10
circuit_breaker_events_total{controller="composite/modelservices.fleetgate.dev",result="Dropped"} 7
"""
    assert sum(calls.parse(scraped, calls.BREAKER_OPENS, "controller").values()) == 4
    assert calls.parse(scraped, calls.BREAKER_EVENTS, "result") == {
        "Allowed": 100.0,
        "Dropped": 7.0,
    }
