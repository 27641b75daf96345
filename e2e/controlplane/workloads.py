"""Each workload cluster's own controllers: trust-manager for real, the rest as stand-ins.

trust-manager v0.24.0 builds from the Go module proxy and runs out of cluster
with the settings the stack install gives it (trust namespace
``fleetgate-system``, see functions/fleetgate/inference_cluster/stack.py); it
writes the Bundle target ConfigMaps the functions read CA certificates from.
Its admission webhook is served but not registered (no webhook configuration
can reach a process outside the cluster network). It authenticates with the
workload cluster's admin certificate: its chart's RBAC is not reproduced here.
"""

from pathlib import Path

import yaml

from e2e import pki
from e2e.controlplane.clusters import Cluster, binary
from e2e.controlplane.processes import Supervisor
from e2e.controlplane.standins import Controllers
from e2e.fleet import World
from e2e.functions import free_port
from fleetgate.core.constants import SYSTEM_NAMESPACE

REPO = Path(__file__).resolve().parents[2]


def world() -> World:
    spec = yaml.safe_load((REPO / "examples" / "fleet" / "world.yaml").read_text()) or {}
    return World(load_balancers=spec.get("loadBalancers", {}))


def start(sup: Supervisor, workload: Cluster, the_world: World) -> Controllers:
    webhook = workload.dir / "trust-manager-webhook"
    webhook.mkdir(exist_ok=True)
    serving = pki.leaf(workload.ca, "trust-manager", server=True, ips=("127.0.0.1",))
    (webhook / "tls.crt").write_bytes(serving.cert_pem)
    (webhook / "tls.key").write_bytes(serving.key_pem)
    workload.admin.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE}}
    )
    sup.start(
        f"{workload.name}-trust-manager",
        [
            binary("trust-manager"),
            f"--kubeconfig={workload.admin_kubeconfig}",
            f"--trust-namespace={SYSTEM_NAMESPACE}",
            "--leader-elect=false",
            f"--metrics-port={free_port()}",
            f"--readiness-probe-port={free_port()}",
            "--webhook-host=127.0.0.1",
            f"--webhook-port={free_port()}",
            f"--webhook-certificate-dir={webhook}",
        ],
    )
    controllers = Controllers(workload, the_world)
    controllers.start()
    sup.on_stop.append(controllers.stop)
    return controllers
