"""Each workload cluster's own controllers: trust-manager and Envoy Gateway (envoygateway.py)
for real, the rest as stand-ins (standins.py).

trust-manager v0.25.0 builds from the Go module proxy and runs out of cluster
as the stack installs it: its Helm chart at the pinned tag (in the Go module
cache) is rendered by Helm with the values compose-inference-cluster gives
its Release (functions/fleetgate/inference_cluster/stack.py), the chart's
ServiceAccount, ClusterRoles, Roles and bindings are applied, and the
Deployment's container runs here with the chart's arguments, authenticated
by a token of that ServiceAccount, never as an administrator. So the trust
namespace the values set, and the RBAC the chart grants for it, are what
the Bundles are synced with: a permission they lack fails ``make e2e``. It
writes the Bundle target ConfigMaps the functions read CA certificates from.
Its admission webhook is served but not registered (no webhook configuration
can reach a process outside the cluster network), so the chart's webhook
objects (configuration, Certificate, Issuer) and Services are not applied,
and the Bundle CRD comes from the pinned set like every other CRD.
"""

import functools
from pathlib import Path

from e2e.fleet import load_world
from e2e.functions import free_port
from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.inference_cluster import stack
from plane import aigateway, charts, envoygateway, proxies, ratelimit
from plane.clusters import Cluster, binary
from plane.kube import Obj
from plane.processes import Supervisor
from plane.standins import Controllers
from sim import pki
from sim.controllers import World

REPO = Path(__file__).resolve().parents[1]
TRUST_MANAGER = next(c for c in stack.CHARTS if c.key == "trust-manager")
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def world() -> World:
    return load_world()


@functools.cache
def trust_manager_chart() -> list[Obj]:
    """What trust-manager's chart renders with the stack's values, under its release name."""
    module = charts.module_dir(
        "github.com/cert-manager/trust-manager", REPO / "tools" / "controlplane" / "trust-manager"
    )
    return charts.render(
        module / "deploy" / "charts" / "trust-manager",
        TRUST_MANAGER.release,
        TRUST_MANAGER.namespace,
        charts.stack_values(TRUST_MANAGER),
    )


def local_args(args: list[str], **here: object) -> list[str]:
    """The chart's container arguments, with the ``--flag=value`` ones in ``here`` replaced
    (ports and paths that differ for a process on this machine)."""
    flags = {f"--{k.replace('_', '-')}": v for k, v in here.items()}
    kept = [a for a in args if a.split("=", 1)[0] not in flags]
    return kept + [f"{flag}={value}" for flag, value in flags.items()]


def start(sup: Supervisor, workload: Cluster, the_world: World) -> Controllers:
    _start_trust_manager(sup, workload)
    # AI Gateway's chart first: it grants Envoy Gateway the InferencePools it reads.
    aigateway.install(workload)
    ai_gateway = aigateway.start(sup, workload)
    envoy_gateway = envoygateway.start(sup, workload, ai_gateway)
    controllers = Controllers(workload, the_world)
    controllers.start()
    sup.on_stop.append(controllers.stop)
    # Once Envoy Gateway made its Deployment, when its configuration rate-limits.
    ratelimit.start(sup, workload, envoy_gateway)
    # Each Gateway's Envoy, as Envoy Gateway makes its Deployment.
    proxies.Proxies(sup, workload, envoy_gateway).start()
    return controllers


def _start_trust_manager(sup: Supervisor, workload: Cluster) -> None:
    objects = trust_manager_chart()
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    for namespace in (TRUST_MANAGER.namespace, SYSTEM_NAMESPACE):
        workload.admin.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
    for obj in objects:
        if obj["kind"] in RBAC_KINDS:
            workload.admin.apply(obj)
    token = workload.admin.token_for(TRUST_MANAGER.namespace, pod["serviceAccountName"])
    webhook = workload.dir / "trust-manager-webhook"
    webhook.mkdir(exist_ok=True)
    serving = pki.leaf(workload.ca, "trust-manager", server=True, ips=("127.0.0.1",))
    (webhook / "tls.crt").write_bytes(serving.cert_pem)
    (webhook / "tls.key").write_bytes(serving.key_pem)
    sup.start(
        f"{workload.name}-trust-manager",
        [
            binary("trust-manager"),
            *local_args(
                [str(a) for a in container["args"]],
                kubeconfig=workload.kubeconfig_for_token("trust-manager", token),
                # controller-runtime finds the lease's namespace in the pod's
                # ServiceAccount mount, which a process has not; one replica
                # needs no election.
                leader_elect="false",
                metrics_port=free_port(),
                readiness_probe_port=free_port(),
                webhook_host="127.0.0.1",
                webhook_port=free_port(),
                webhook_certificate_dir=webhook,
            ),
        ],
    )
