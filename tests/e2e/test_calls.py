"""Reading Crossplane's count of function calls (e2e/controlplane/calls.py)."""

from e2e.controlplane import calls

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
