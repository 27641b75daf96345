"""KEDA's operator on one workload cluster: scales a model server to zero and wakes it.

Real: KEDA at the tag tools/keda/go.mod pins (v2.20.0): its six CRDs from the
module's ``config/crd/bases`` (the operator runs a controller for each kind,
cmd/operator/main.go:264-315) and its operator (tools/keda/keda.mk), run out
of cluster with its Deployment's environment (config/manager/manager.yaml).
Out of a pod, the namespace it reads Secrets in is named
(``KEDA_CLUSTER_OBJECT_NAMESPACE``; else it reads the ServiceAccount mount,
pkg/util/env_resolver.go:65-82), leader election is off and every listener is
on loopback. Its gRPC metrics service stops the operator unless ``--cert-dir``
holds ``ca.crt``, ``tls.crt`` and ``tls.key`` (pkg/metricsservice/server.go:
155-162); upstream's cert rotation would write a Secret and patch webhooks and
the APIService, so here they are made once. No metrics adapter runs: waking
(0 -> 1) and scaling to zero are the operator's own, through the scale
subresource (pkg/scaling/executor/scale_scaledobjects.go:66-116); scaling
from 1 to ``maxReplicaCount`` is the HPA controller's, which the plane lacks.
"""

import json
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from e2e.functions import free_port
from plane.clusters import Cluster
from plane.kube import ApiError, Kube, is_true, wait_for
from plane.processes import Process, Supervisor, wait_listening
from sim import pki
from tools import pinned

MODULE = "github.com/kedacore/keda/v2"
PINNED_BY = pinned.REPO / "tools" / "keda"
NAMESPACE = "keda"  # the operator's own, as upstream installs it
CRD = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
START_TIMEOUT_S = 60.0


def binary() -> Path:
    """The pinned operator (``make controlplane-bins``); ``$KEDA_OPERATOR`` overrides."""
    override = os.environ.get("KEDA_OPERATOR")
    return (
        Path(override) if override else pinned.binary("keda-operator", PINNED_BY / "go.mod", MODULE)
    )


def module_dir() -> Path:
    """KEDA's files at the pinned tag, downloaded and checked against tools/keda/go.sum."""
    out = pinned.run(
        ["go", "mod", "download", "-json", MODULE],
        what=f"go mod download {MODULE}",
        cwd=PINNED_BY,
        env={"GOFLAGS": "-mod=readonly", "GOWORK": "off", "GOTOOLCHAIN": "local"},
    )
    return Path(json.loads(out)["Dir"])


@dataclass(frozen=True)
class Operator:
    """One running operator: its process and loopback ports."""

    process: Process
    health_port: int  # /healthz, /readyz
    metrics_port: int  # Prometheus /metrics (keda_scaler_active, keda_scaler_metrics_value...)
    grpc_port: int  # the metrics service an adapter would dial
    crds: tuple[str, ...]


def install_crds(kube: Kube) -> tuple[str, ...]:
    """KEDA's CRDs on the cluster, created (or already there) and Established; their names."""
    names = []
    for path in sorted((module_dir() / "config" / "crd" / "bases").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        try:
            kube.create(crd)
        except ApiError as err:
            if err.status != 409:
                raise
        names.append(crd["metadata"]["name"])
    for name in names:
        wait_for(
            f"CRD {name} Established", lambda n=name: is_true(kube.get(*CRD, n), "Established"), 60
        )
    return tuple(names)


def start(sup: Supervisor, folder: Path, cluster: Cluster) -> Operator:
    """Install KEDA's CRDs on ``cluster`` and run the operator there (as its administrator:
    KEDA's own least-privilege role is config/rbac/role.yaml in the module); returns once
    it answers its health probe. ``folder`` holds its certificates."""
    kube = cluster.admin
    crds = install_crds(kube)
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    certs = _certificates(folder / "certs")
    # Scalers trust the system's CAs and every file in --ca-dir (pkg/util/certificates.go:49-99).
    (folder / "ca").mkdir(exist_ok=True)
    health, metrics, grpc = free_port(), free_port(), free_port()
    process = sup.start(
        f"{cluster.name}-keda-operator",
        [
            str(binary()),
            f"--kubeconfig={cluster.admin_kubeconfig}",
            "--leader-elect=false",
            "--enable-cert-rotation=false",
            f"--cert-dir={certs}",
            f"--ca-dir={folder / 'ca'}",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            f"--metrics-service-bind-address=127.0.0.1:{grpc}",
            "--zap-log-level=info",
            "--zap-encoder=console",
            "--zap-time-encoding=rfc3339",
        ],
        env={
            "WATCH_NAMESPACE": "",
            "POD_NAMESPACE": NAMESPACE,
            "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE,
        },
    )
    wait_listening(
        process, lambda: _healthy(health), START_TIMEOUT_S, "waiting for KEDA's health probe"
    )
    return Operator(process, health, metrics, grpc, crds)


def _certificates(certs: Path) -> Path:
    """A CA and the serving certificate it signs, as cert rotation would write them."""
    certs.mkdir(parents=True, exist_ok=True)
    ca = pki.ca("keda-operator CA")
    leaf = pki.leaf(ca, "keda-operator", server=True, dns=("keda-operator",), ips=("127.0.0.1",))
    (certs / "ca.crt").write_bytes(ca.cert_pem)
    (certs / "tls.crt").write_bytes(leaf.cert_pem)
    (certs / "tls.key").write_bytes(leaf.key_pem)
    (certs / "tls.key").chmod(0o600)
    return certs


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
