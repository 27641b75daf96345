"""Crossplane core and its RBAC manager out of cluster, each as its own ServiceAccount.

What the Helm chart at the pinned tag would install is rendered by Helm from
that chart (in the Go module cache, checksummed by tools/go.sum): the
ServiceAccounts, ClusterRoles, ClusterRoleBindings and the TLS Secrets that
``crossplane core init`` fills. Everything but the Deployments is applied;
the Deployments' two containers run here as processes with the environment
the chart gives them, authenticated by a token of the chart's ServiceAccount,
never as an administrator. Fleetgate's own package/install/rbac.yaml is
applied as a platform team would, so a permission missing there fails here.
"""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from e2e.functions import free_port
from plane import charts
from plane.clusters import Cluster, binary
from plane.kube import ApiError, Obj, mount_secret, wait_for
from plane.processes import Namespace, Supervisor

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "crossplane-system"
VALUES = REPO / "package" / "install" / "crossplane-values.yaml"
MODULE = "github.com/crossplane/crossplane/v2"
INIT_ATTEMPTS = 5


def module_dir() -> Path:
    """Crossplane's module at the version of the core that runs: the go.mod folder the
    Makefile names in CROSSPLANE_CORE_MODULE (tools/controlplane/crossplane by default;
    tools, the CLI's, with CROSSPLANE_LINE=oldest), so chart, CRDs and binary agree."""
    pinned_by = os.environ.get("CROSSPLANE_CORE_MODULE", "tools/controlplane/crossplane")
    return charts.module_dir(MODULE, REPO / pinned_by)


def chart_objects() -> list[Obj]:
    return charts.render(
        module_dir() / "cluster" / "charts" / "crossplane",
        "crossplane",
        NAMESPACE,
        {
            # What package/install/crossplane-values.yaml tells users to install with.
            **yaml.safe_load(VALUES.read_text()),
            # No webhook can reach a process outside the cluster network; the
            # chart's own switch turns them off in every container it renders.
            "webhooks": {"enabled": False},
        },
    )


@dataclass
class Crossplane:
    client_certs: Path
    metrics_port: int  # where core serves Prometheus metrics (plane/calls.py)
    root_ca_secret: str = "crossplane-root-ca"


def install(sup: Supervisor, cp: Cluster, state: Path, registry_ca: Path) -> Crossplane:
    admin = cp.admin
    admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    objects = chart_objects()
    for obj in objects:
        if obj["kind"] != "Deployment":  # their containers run here as processes
            admin.apply(obj)
    for doc in yaml.safe_load_all((REPO / "package" / "install" / "rbac.yaml").read_text()):
        if doc:
            admin.apply(doc)

    core_sa = charts.pod(objects, "Deployment", "crossplane")["serviceAccountName"]
    rbac_sa = charts.pod(objects, "Deployment", "crossplane-rbac-manager")["serviceAccountName"]
    core_kubeconfig = cp.kubeconfig_for_token("crossplane", admin.token_for(NAMESPACE, core_sa))
    rbac_kubeconfig = cp.kubeconfig_for_token("rbac-manager", admin.token_for(NAMESPACE, rbac_sa))
    xp = binary("crossplane-core")
    # What the chart's containers get from the downward API.
    downward = {"POD_NAMESPACE": NAMESPACE, "POD_SERVICE_ACCOUNT": core_sa}
    init_args, init_env = charts.container(
        objects, "Deployment", "crossplane", "crossplane-init", init=True
    )
    # `core init` races the CRDs it has just created on a first run; in a
    # cluster the init container is restarted, here it is run again.
    for attempt in range(1, INIT_ATTEMPTS + 1):
        done = subprocess.run(
            [xp, *init_args],
            env={
                **os.environ,
                **init_env,
                **downward,
                "KUBECONFIG": str(core_kubeconfig),
                "CRDS_PATH": str(module_dir() / "cluster" / "crds"),
            },
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0:
            break
        if attempt == INIT_ATTEMPTS:
            raise RuntimeError(
                f"crossplane core init failed {attempt} times:\n{done.stderr[-3000:]}"
            )

    client_certs = mount_secret(
        admin, NAMESPACE, "crossplane-tls-client", state / "crossplane" / "tls-client", "core init"
    )
    server_certs = state / "crossplane" / "tls-server"
    # The chart mounts volumes at these paths; Crossplane writes into them and
    # fails unpacking ("read/write on closed pipe") when its cache is missing.
    for folder in (
        server_certs,
        state / "crossplane" / "xpkg-cache",
        state / "crossplane" / "xfn-cache",
    ):
        folder.mkdir(parents=True, exist_ok=True)
    start_args, start_env = charts.container(objects, "Deployment", "crossplane", "crossplane")
    metrics_port = free_port()
    sup.start(
        "crossplane",
        [xp, *start_args],
        env={
            **start_env,
            **downward,
            "KUBECONFIG": str(core_kubeconfig),
            "LEADER_ELECTION": "false",  # one replica
            "PACKAGE_RUNTIME": "External",
            "CA_BUNDLE_PATH": str(registry_ca),
            "XPKG_CACHE_DIR": str(state / "crossplane" / "xpkg-cache"),
            "XFN_CACHE_DIR": str(state / "crossplane" / "xfn-cache"),
            "METRICS_PORT": str(metrics_port),
            "HEALTH_PROBE_PORT": str(free_port()),
            "WEBHOOK_PORT": str(free_port()),
            "TLS_SERVER_CERTS_DIR": str(server_certs),
            "TLS_CLIENT_CERTS_DIR": str(client_certs),
        },
    )
    rbac_args, rbac_env = charts.container(
        objects, "Deployment", "crossplane-rbac-manager", "crossplane"
    )
    netns = Namespace(sup, "rbac-manager")
    netns.forward(int(cp.server.rsplit(":", 1)[1]))
    sup.start(
        "crossplane-rbac-manager",
        netns.argv([xp, *rbac_args]),
        env={**rbac_env, "KUBECONFIG": str(rbac_kubeconfig), "LEADER_ELECTION": "false"},
    )
    wait_for(
        "Crossplane to serve its package API",
        lambda: admin.list("pkg.crossplane.io/v1", "Configuration") is not None,
        120,
    )
    return Crossplane(client_certs, metrics_port)


__all__ = ["ApiError", "Crossplane", "install"]
