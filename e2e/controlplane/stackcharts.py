"""What Helm makes of the stack's values for the one chart whose controller does not run here.

provider-helm cannot be built here, so the Releases compose-inference-cluster
writes are never installed. Envoy Gateway's and trust-manager's charts are
rendered with the stack's values and their controllers run from the result
(envoygateway.py, workloads.py). cert-manager's controller cannot run, but
its chart (in the module the pinned CRDs come from, e2e/crds/go.mod) can be
rendered: Helm checks the stack's values against the chart's
values.schema.json, and the controller must be started with
``--enable-certificate-owner-ref=true`` (templates/deployment.yaml:143-145,
v1.21.1), the flag the stand-in plays and on which a deleted registration's
keys going with it rests.
"""

import subprocess
from pathlib import Path

from e2e.controlplane import charts
from fleetgate.inference_cluster import stack

REPO = Path(__file__).resolve().parents[2]
CERT_MANAGER = next(c for c in stack.CHARTS if c.key == "cert-manager")
CONTROLLER = "cert-manager-controller"  # the controller's container in the chart
OWNER_REFS = "--enable-certificate-owner-ref=true"


def cert_manager() -> str | None:
    """None when the stack's values give cert-manager's controller owner references;
    otherwise what is wrong."""
    module = charts.module_dir("github.com/cert-manager/cert-manager", REPO / "e2e" / "crds")
    try:
        objects = charts.render(
            module / "deploy" / "charts" / "cert-manager",
            CERT_MANAGER.release,
            CERT_MANAGER.namespace,
            charts.stack_values(CERT_MANAGER),
        )
    except subprocess.CalledProcessError as err:
        return f"Helm refused the stack's cert-manager values: {err.stderr.strip()}"
    (deployment,) = (
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Deployment"
        and any(c["name"] == CONTROLLER for c in o["spec"]["template"]["spec"]["containers"])
    )
    args, _ = charts.container(objects, "Deployment", deployment, CONTROLLER)
    if OWNER_REFS not in args:
        return f"cert-manager's controller runs without {OWNER_REFS}: {args}"
    return None
