"""etcd and one kube-apiserver + kube-controller-manager per cluster, as local processes.

The control plane and each workload cluster are real API servers sharing one
etcd under separate prefixes. Each has its own serving and client CA and its
own ServiceAccount signing key, as separate clusters would; the certificates
are made here. Each cluster's kube-controller-manager runs just the
controllers whose effects Fleetgate relies on: garbage collection of owned
objects, namespace deletion, ClusterRole aggregation (Crossplane's own
ClusterRole is aggregated) and the default ServiceAccount of a namespace.
There are no nodes, no scheduler and no kubelet: nothing runs in a pod.
"""

import base64
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from e2e.functions import free_port
from plane.kube import Kube
from plane.processes import Supervisor, wait_listening
from sim import pki

CONTROLLERS = ",".join(
    [
        "garbage-collector-controller",
        "namespace-controller",
        "clusterrole-aggregation-controller",
        "serviceaccount-controller",
    ]
)
START_TIMEOUT_S = 120.0


def binary(name: str) -> str:
    """A pinned binary's path, handed over by the Makefile (the one place that knows them)
    in the variable of its name: ENVOY_GATEWAY for ``envoy-gateway``, REDIS_SERVER
    (Debian's) for ``redis-server``."""
    variable = name.upper().replace("-", "_")
    path = os.environ.get(variable)
    if not path or not Path(path).is_file():
        raise FileNotFoundError(
            f"{variable} does not name a built binary ({path!r}): run through `make e2e`, "
            "which builds the pinned control-plane binaries into .cache/bin"
        )
    # Absolute, but a symbolic link kept: Debian's redis-server is one to redis-check-rdb,
    # which acts on the name it is run by.
    return str(Path(path).absolute())


def place_binary(name: str, image: Path) -> None:
    """Put the pinned binary ``name`` at ``image`` in a pod's root directory, once: a hard
    link where it can be, else a copy."""
    if image.exists():
        return
    built = binary(name)
    if os.stat(built).st_dev == os.stat(image.parent).st_dev:
        os.link(built, image)
    else:
        shutil.copy2(built, image)


def write_kubeconfig(path: Path, name: str, server: str, ca: Path, **user: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": name, "cluster": {"server": server, "certificate-authority": str(ca)}}
                ],
                "users": [{"name": name, "user": user}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
                "current-context": name,
            }
        )
    )
    path.chmod(0o600)
    return path


@dataclass
class Cluster:
    name: str
    server: str
    dir: Path
    ca: pki.KeyPair
    admin: Kube
    admin_kubeconfig: Path

    def kubeconfig_for_token(self, who: str, token: str) -> Path:
        return write_kubeconfig(
            self.dir / f"{who}.kubeconfig", self.name, self.server, self.dir / "ca.crt", token=token
        )

    def kubeconfig_text_for_token(self, token: str) -> str:
        """A kubeconfig with the CA inline, for a Secret another cluster's controllers read."""
        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": self.name,
                        "cluster": {
                            "server": self.server,
                            "certificate-authority-data": _b64(self.ca.cert_pem),
                        },
                    }
                ],
                "users": [{"name": self.name, "user": {"token": token}}],
                "contexts": [
                    {"name": self.name, "context": {"cluster": self.name, "user": self.name}}
                ],
                "current-context": self.name,
            }
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _write(path: Path, data: bytes, private: bool = False) -> Path:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)
    return path


def start_etcd(sup: Supervisor, state: Path) -> str:
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    proc = sup.start(
        "etcd",
        [
            binary("etcd"),
            "--name=fleetgate",
            f"--data-dir={state / 'etcd'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=fleetgate=http://127.0.0.1:{peer}",
            # A throwaway store: durability costs fsyncs the 2-core machine can spare.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                return b'"true"' in resp.read()
        except OSError:
            return False

    wait_listening(proc, healthy, START_TIMEOUT_S, "waiting for etcd to be healthy")
    return url


def start_cluster(sup: Supervisor, state: Path, name: str, etcd: str) -> Cluster:
    """One API server with its controller manager; returns once it is ready."""
    d = state / name
    d.mkdir(parents=True, exist_ok=True)
    ca = pki.ca(f"{name} cluster CA")
    port = free_port()
    server = f"https://127.0.0.1:{port}"
    serving = pki.leaf(ca, "kube-apiserver", server=True, dns=("localhost",), ips=("127.0.0.1",))
    admin = pki.leaf(ca, "fleetgate-admin", server=False, organization="system:masters")
    # The controller manager acts for every controller with its own identity
    # (--use-service-account-credentials=false), so it needs every permission.
    kcm = pki.leaf(
        ca, "system:kube-controller-manager", server=False, organization="system:masters"
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files = {
        "ca.crt": _write(d / "ca.crt", ca.cert_pem),
        "serving.crt": _write(d / "serving.crt", serving.cert_pem),
        "serving.key": _write(d / "serving.key", serving.key_pem, private=True),
        "admin.crt": _write(d / "admin.crt", admin.cert_pem),
        "admin.key": _write(d / "admin.key", admin.key_pem, private=True),
        "kcm.crt": _write(d / "kcm.crt", kcm.cert_pem),
        "kcm.key": _write(d / "kcm.key", kcm.key_pem, private=True),
        "sa.key": _write(
            d / "sa.key",
            sa_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            private=True,
        ),
        "sa.pub": _write(
            d / "sa.pub",
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        ),
    }
    apiserver = sup.start(
        f"{name}-kube-apiserver",
        [
            binary("kube-apiserver"),
            f"--etcd-servers={etcd}",
            f"--etcd-prefix=/{name}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={d / 'certs'}",
            f"--tls-cert-file={files['serving.crt']}",
            f"--tls-private-key-file={files['serving.key']}",
            f"--client-ca-file={files['ca.crt']}",
            f"--service-account-issuer=https://{name}.clusters.fleetgate.test",
            f"--service-account-key-file={files['sa.pub']}",
            f"--service-account-signing-key-file={files['sa.key']}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--authorization-mode=RBAC",
            # No node serves the `kubernetes` Service: keep the API server from
            # publishing its loopback address as that Service's endpoint.
            "--endpoint-reconciler-type=none",
            # Webhooks are dialled at their Service's endpoints, as aggregated APIs are
            # (cmd/kube-apiserver/app/server.go:283-303, v1.35.4), not at a cluster IP no
            # proxy here carries: AI Gateway's pod mutator (aigateway.py).
            "--enable-aggregator-routing=true",
            "--profiling=false",
        ],
    )
    admin_kube = Kube(server, files["ca.crt"], files["admin.crt"], files["admin.key"])
    wait_listening(apiserver, admin_kube.ready, START_TIMEOUT_S, f"waiting for {name}'s API server")
    kcm_kubeconfig = write_kubeconfig(
        d / "kcm.kubeconfig",
        name,
        server,
        files["ca.crt"],
        **{"client-certificate": str(files["kcm.crt"]), "client-key": str(files["kcm.key"])},
    )
    sup.start(
        f"{name}-kube-controller-manager",
        [
            binary("kube-controller-manager"),
            f"--kubeconfig={kcm_kubeconfig}",
            f"--controllers={CONTROLLERS}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            "--secure-port=0",
            "--profiling=false",
        ],
    )
    admin_kubeconfig = write_kubeconfig(
        d / "admin.kubeconfig",
        name,
        server,
        files["ca.crt"],
        **{"client-certificate": str(files["admin.crt"]), "client-key": str(files["admin.key"])},
    )
    return Cluster(name, server, d, ca, admin_kube, admin_kubeconfig)
