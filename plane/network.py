"""The network between the workload clusters' pods, and the engines behind them, played.

A real cluster gives a pod DNS (Service names under ``cluster.local``, an
ExternalName as a CNAME, public names), Services routed to their endpoints
and a cloud's load balancers in front of each Gateway's Envoy. None of that
exists here: every pod (proxies.py) has a loopback-only network namespace.
This module gives each Envoy what it dials, nothing more:

* **Engines.** vLLM and its peers cannot run here. For each replica of a
  Deployment whose pod runs Fleetgate's engine container (``engine``, the
  name Fleetgate gives it), the OpenAI-compatible engine stand-in
  (engine.py) runs with that container's arguments, $(VAR) filled from its
  environment as the kubelet fills it (so ``--served-model-name`` is what
  Fleetgate injected), in a network namespace of its own. Each replica gets
  a pod address, and each Service selecting the pods an EndpointSlice
  naming them, as the endpoint-slice controller would write it: what
  Envoy Gateway reads to route to a Service.
* **Routes to them.** In each Envoy's namespace, every engine pod's address
  is added to its loopback and relayed to that replica.
* **Load balancers and DNS.** Each Backend an Envoy dials by a cluster-local
  name (``<service>.<namespace>.svc.cluster.local``) is looked up as cluster
  DNS would: an ExternalName Service's target, or a headless Service's
  EndpointSlice addresses. The load balancer with that hostname or address
  (what the load-balancer stand-in wrote on a Gateway's Service, on any
  cluster) leads to that Gateway's Envoy, at the Service port's targetPort.
  The Envoy's hosts file holds the name, at an address on its loopback
  where a relay listens.
* **Third parties.** Any other name a Backend dials is the public internet's:
  the provider stand-in internet.py runs for it, at its pod address.
* **The rate-limit service.** Its Service's name, which Envoy Gateway gives
  every Envoy as the rate-limit cluster, leads to the service's pod
  (ratelimit.py) on the Envoy's own cluster, at its gRPC port.

Relays copy TCP bytes (TLS and mutual TLS stay end to end) in this process's
threads: they add latency a real network does not, so no figure of the data
plane is taken through them.
"""

import ipaddress
import itertools
import sys
import threading
from dataclasses import dataclass, field

from plane import internet, pods, proxies, ratelimit
from plane.clusters import Cluster
from plane.kube import ApiError, Obj
from plane.processes import Namespace, Process, Supervisor

# The name Fleetgate gives the engine's container (model_deployment/providers/pods.py).
ENGINE_CONTAINER = "engine"
CLUSTER_DOMAIN = "svc.cluster.local"
SYNC_INTERVAL_S = 1.0
HTTPS = internet.HTTPS
# Addresses for load balancers known by hostname only, on an Envoy's loopback.
_LB_NAMES = ipaddress.ip_network("198.18.0.0/15")


@dataclass
class Replica:
    deployment: str  # namespace/name
    pod: str
    generation: int
    address: str
    port: int
    labels: dict[str, str]
    netns: Namespace
    process: Process


@dataclass
class Network:
    sup: Supervisor
    workloads: dict[str, Cluster]
    replicas: dict[str, list[Replica]] = field(default_factory=dict)  # by cluster
    _relays: set[tuple[str, str, int]] = field(default_factory=set)  # netns, address, port
    _names: dict[str, str] = field(default_factory=dict)  # LB hostname -> loopback address
    _next_name: "itertools.count[int]" = field(default_factory=lambda: itertools.count(1))
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        _RUNNING.append(self)
        threading.Thread(target=self._loop, daemon=True, name="network").start()
        self.sup.on_stop.append(self._stop.set)

    def _loop(self) -> None:
        while not self._stop.wait(SYNC_INTERVAL_S):
            for name, workload in self.workloads.items():
                try:
                    self._engines(name, workload)
                    self._routes(name, workload)
                except (OSError, ApiError, LookupError) as err:
                    print(f"{name}: network not synced: {err}", flush=True)

    # --- engines ----------------------------------------------------------------------

    def _engines(self, cluster: str, workload: Cluster) -> None:
        """Run each engine Deployment's replicas and write its Services' EndpointSlices."""
        running = self.replicas.setdefault(cluster, [])
        wanted: dict[str, Obj] = {}
        for deployment in workload.admin.list("apps/v1", "Deployment"):
            spec = deployment["spec"]["template"]["spec"]
            if any(c["name"] == ENGINE_CONTAINER for c in spec["containers"]):
                meta = deployment["metadata"]
                wanted[f"{meta['namespace']}/{meta['name']}"] = deployment
        for replica in list(running):
            now = wanted.get(replica.deployment)
            if now is None or now["metadata"]["generation"] != replica.generation:
                self.sup.stop(replica.process)
                running.remove(replica)
        for key, deployment in wanted.items():
            have = [r for r in running if r.deployment == key]
            for index in range(len(have), int(deployment["spec"].get("replicas", 1))):
                running.append(self._run_engine(cluster, key, deployment, index))
        for service in workload.admin.list("v1", "Service"):
            selector = service["spec"].get("selector") or {}
            namespace = service["metadata"]["namespace"]
            if not selector or not any(
                key.split("/")[0] == namespace and selector.items() <= _pod_labels(d).items()
                for key, d in wanted.items()
            ):
                continue
            # Every replica it selects: none while its engine is scaled to zero, so the
            # cluster gateway has nowhere to send a request, as with no pod running.
            chosen = [
                r
                for r in running
                if r.deployment.split("/")[0] == namespace and selector.items() <= r.labels.items()
            ]
            workload.admin.apply(_endpoint_slice(service, chosen))

    def _run_engine(self, cluster: str, key: str, deployment: Obj, index: int) -> Replica:
        namespace, name = key.split("/")
        template = deployment["spec"]["template"]
        (container,) = (c for c in template["spec"]["containers"] if c["name"] == ENGINE_CONTAINER)
        pod_name = f"{name}-{index}"
        environment = pods.env(container, namespace, pod_name)
        args = pods.expand(container.get("args", []), environment)
        port = next(
            int(p["containerPort"]) for p in container.get("ports", []) if p.get("name") == "http"
        )
        netns = Namespace(self.sup, f"{cluster}-{pod_name}")
        process = self.sup.start(
            f"{cluster}-{pod_name}-engine",
            netns.argv([sys.executable, "-m", "plane.engine", "--port", str(port), *args]),
        )
        return Replica(
            key,
            pod_name,
            deployment["metadata"]["generation"],
            pods.address(),
            port,
            template["metadata"].get("labels") or {},
            netns,
            process,
        )

    # --- routes, load balancers, DNS ----------------------------------------------------

    def _routes(self, cluster: str, workload: Cluster) -> None:
        """Give each Envoy on ``cluster`` the engines' addresses and the Backends' names."""
        try:
            envoys = list(proxies.on(cluster).running.values())
        except LookupError:
            return
        names: dict[str, str] = {}
        dials: list[tuple[str, int, Namespace, int]] = []
        for backend in workload.admin.list("gateway.envoyproxy.io/v1alpha1", "Backend"):
            for endpoint in backend["spec"].get("endpoints") or []:
                fqdn = endpoint.get("fqdn") or {}
                hostname = str(fqdn.get("hostname", ""))
                if hostname and not hostname.endswith(f".{CLUSTER_DOMAIN}"):
                    provider = internet.running().provider(hostname)
                    names[hostname] = provider.address
                    dials.append((provider.address, int(fqdn["port"]), provider.netns, HTTPS))
                    continue
                found = self._resolve(workload, hostname)
                if found is None:
                    continue
                address, balancer = found
                target = self._balanced(balancer, int(fqdn["port"]))
                if target is not None:
                    proxy, target_port = target
                    names[hostname] = address
                    dials.append((address, int(fqdn["port"]), proxy.netns, target_port))
        limiter = ratelimit.on(cluster)
        if limiter is not None:
            names[ratelimit.HOSTNAME] = limiter.address
            port = limiter.grpc_port
            dials.append((limiter.address, port, limiter.netns, port))
        for envoy in envoys:
            for replica in self.replicas.get(cluster, []):
                self._relay(envoy.netns, replica.address, replica.port, replica.netns, replica.port)
            for address, port, to, target_port in dials:
                self._relay(envoy.netns, address, port, to, target_port)
            pods.write_hosts(envoy.root, names)

    def _relay(
        self, netns: Namespace, address: str, port: int, to: Namespace, to_port: int
    ) -> None:
        key = (netns.path, address, port)
        if key not in self._relays:
            netns.listen(address, port, lambda: to.connect(to_port))
            self._relays.add(key)

    def _resolve(self, workload: Cluster, hostname: str) -> tuple[str, str] | None:
        """A cluster-local name as DNS answers it: the address an Envoy dials and the load
        balancer (hostname or address) behind it; None for another name."""
        service_name, _, rest = hostname.partition(".")
        namespace, _, domain = rest.partition(".")
        if domain != CLUSTER_DOMAIN:
            return None
        service = workload.admin.get("v1", "Service", service_name, namespace)
        if service is None:
            return None
        spec = service["spec"]
        if spec.get("type") == "ExternalName":
            target = str(spec["externalName"])
            if target not in self._names:
                self._names[target] = str(_LB_NAMES[next(self._next_name)])
            return self._names[target], target
        for slice_ in workload.admin.list(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            namespace,
            selector=f"kubernetes.io/service-name={service_name}",
        ):
            for endpoint in slice_.get("endpoints") or []:
                for address in endpoint.get("addresses") or []:
                    return str(address), str(address)
        return None

    def _balanced(self, balancer: str, port: int) -> tuple[proxies.Proxy, int] | None:
        """The Envoy behind the load balancer ``balancer`` and the port its Service's
        ``port`` leads to."""
        for cluster, workload in self.workloads.items():
            services = workload.admin.list(
                "v1", "Service", proxies.NAMESPACE, selector=proxies.SELECTOR
            )
            for service in services:
                ingress = (service.get("status") or {}).get("loadBalancer", {}).get("ingress")
                if not any(balancer in (i.get("hostname"), i.get("ip")) for i in ingress or []):
                    continue
                labels = service["metadata"]["labels"]
                gateway = f"{labels[proxies.OWNING_NAMESPACE]}/{labels[proxies.OWNING_NAME]}"
                for p in service["spec"]["ports"]:
                    if int(p["port"]) == port:
                        return proxies.on(cluster).of(gateway), int(p["targetPort"])
        return None


def _pod_labels(deployment: Obj) -> dict[str, str]:
    return deployment["spec"]["template"]["metadata"].get("labels") or {}


def _endpoint_slice(service: Obj, replicas: list[Replica]) -> Obj:
    """The EndpointSlice the endpoint-slice controller writes for ``service``'s pods; with
    none, no endpoints and no ports, as its placeholder slice."""
    meta = service["metadata"]
    ports = [
        {"name": p.get("name", ""), "port": r.port, "protocol": p.get("protocol", "TCP")}
        for p in service["spec"]["ports"]
        for r in replicas[:1]
    ]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{meta['name']}-e2e",
            "namespace": meta["namespace"],
            "labels": {
                "kubernetes.io/service-name": meta["name"],
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": [r.address],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "targetRef": {"kind": "Pod", "namespace": meta["namespace"], "name": r.pod},
            }
            for r in replicas
        ],
        "ports": ports,
    }


_RUNNING: list[Network] = []


def engines(cluster: str) -> list[Replica]:
    """The engine replicas running for ``cluster``."""
    if not _RUNNING:
        raise LookupError("no network runs")
    return _RUNNING[0].replicas.get(cluster, [])
