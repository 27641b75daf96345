"""How the real control plane runs a workload cluster's trust-manager from its chart."""

from e2e.controlplane.workloads import local_args


def test_the_chart_s_arguments_are_kept_but_for_what_differs_here() -> None:
    chart = ["--log-level=1", "--trust-namespace=fleetgate-system", "--webhook-port=6443"]
    assert local_args(chart, webhook_port=40123, leader_elect="false") == [
        "--log-level=1",
        "--trust-namespace=fleetgate-system",
        "--webhook-port=40123",
        "--leader-elect=false",
    ]
