"""Envoy's global rate-limit service on each workload cluster, as Envoy Gateway provisions it.

Once the Envoy Gateway configuration names a rate-limit backend (``rateLimit``,
as compose-inference-cluster configures it), Envoy Gateway's controller
creates the ``envoy-ratelimit`` Deployment in its namespace
(internal/infrastructure/kubernetes/ratelimit/resource.go, v1.8.3) and serves
that Deployment its configuration over xDS (its globalratelimit runner,
``:18001``, mutual TLS with certgen's certificates). Here that Deployment's pod
runs as processes:

* the rate-limit service, github.com/envoyproxy/ratelimit at the version
  Envoy Gateway v1.8.3's go.mod requires (pinned in tools/ratelimit/go.mod),
  with the command, environment and security context of the Deployment's
  container *as Envoy Gateway wrote it on the cluster* (read from the API
  server, nothing assumed), under its own root directory (``chroot``) holding
  what the pod mounts: the ``envoy-rate-limit`` Secret certgen filled at
  ``/certs`` and the ``statsd-exporter-config`` ConfigMap, both from the
  cluster, with the volumes' modes. So it dials Envoy Gateway's xDS with its
  client certificate, and the rules it enforces are the ones Envoy Gateway
  translated from the cluster's BackendTrafficPolicies;
* Redis (Debian's ``redis-server``), its backend, standing for the pod of the
  Redis Deployment the stack composes behind the configured URL (that
  Deployment, its Service and NetworkPolicy are on the cluster, envoygateway.py):
  on the URL's port, on loopback, without persistence.

The pod runs in its own loopback-only network namespace, as a pod has its
own: its gRPC port (8081, src/settings/settings.go:28 at the pinned version)
is the port Envoy Gateway's controller serves its probes on
(internal/provider/kubernetes/kubernetes.go:59, v1.8.3). Every hostname its
environment names (Envoy Gateway's xDS service, the Redis URL) resolves to
127.0.0.1 in its root's ``/etc/hosts``, and the xDS port is forwarded to the
same port in Envoy Gateway's namespace, as the Service would carry it.

Each Envoy reaches the service by the name Envoy Gateway gives it (network.py
relays it to this pod's gRPC port), over mutual TLS with the certificates
both mount, and fails closed when it cannot (the stack's ``failClosed``).

Real: the service's binary, its environment and certificates, the xDS
configuration it loads, Redis counting against it and the Envoys calling it.
Not real: DNS (a hosts file), Redis's pod (one process on the URL's port; no
network plugin enforces its NetworkPolicy). Where a drill needs counts no
request could reach in its time (a day's tokens, a month's budget) it calls
the service itself with the descriptors Envoy would send
(``should_rate_limit``, over the service's HTTP ``/json`` endpoint, which
answers with the same ShouldRateLimit as its gRPC API; oracles/ratelimits.py
computes the descriptors from the route's xDS).
"""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from oracles.ratelimits import Descriptor
from plane import envoygateway, pods
from plane.clusters import Cluster, binary, place_binary
from plane.kube import Obj, wait_for
from plane.processes import Namespace, Process, Supervisor, wait_listening

NAMESPACE = envoygateway.NAMESPACE
# The Deployment Envoy Gateway provisions (InfraName, resource.go:96-97, v1.8.3).
DEPLOYMENT = "envoy-ratelimit"
CONFIG_KEY = "envoy-gateway.yaml"  # the chart's ConfigMap (templates/envoy-gateway-config.yaml)
# The service's own defaults, for what the Deployment's environment leaves unset
# (src/settings/settings.go:19-21 at the pinned version): HTTP (/json, /healthcheck)
# and the debug listener (/rlconfig, src/service_cmd/runner/runner.go:172-179).
DEFAULT_PORTS = {"PORT": 8080, "DEBUG_PORT": 6070, "GRPC_PORT": 8081}
# Where each Envoy dials the service: its Service's name and gRPC port (GetServiceURL,
# internal/infrastructure/kubernetes/ratelimit/resource.go:113-115 at v1.8.3).
HOSTNAME = f"{DEPLOYMENT}.{NAMESPACE}.svc.cluster.local"
DEPLOYMENT_TIMEOUT_S = 180.0
START_TIMEOUT_S = 60.0
LOAD_TIMEOUT_S = 120.0
HTTP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Service:
    """One cluster's running rate-limit service: where to reach it."""

    cluster: str
    netns: Namespace
    http_port: int
    debug_port: int
    grpc_port: int
    address: str  # its pod address: where the network relays the Envoys' calls from
    process: Process


_RUNNING: dict[str, Service] = {}


def configured(objects: Iterable[Obj]) -> Obj | None:
    """The ``rateLimit`` of the Envoy Gateway configuration the chart renders, if any."""
    for obj in objects:
        if obj["kind"] == "ConfigMap" and CONFIG_KEY in (obj.get("data") or {}):
            config = yaml.safe_load(obj["data"][CONFIG_KEY]) or {}
            rate_limit = config.get("rateLimit")
            return dict(rate_limit) if rate_limit else None
    return None


def start(sup: Supervisor, workload: Cluster, envoy_gateway: Namespace) -> Service | None:
    """Run the ``envoy-ratelimit`` pod of ``workload`` once Envoy Gateway created it; None
    when its configuration has no rate limiting (then it creates no such Deployment)."""
    if configured(envoygateway.chart()) is None:
        return None
    kube = workload.admin

    def created() -> Obj | None:
        return kube.get("apps/v1", "Deployment", DEPLOYMENT, NAMESPACE)

    deployment = wait_for(
        f"Envoy Gateway to create Deployment {NAMESPACE}/{DEPLOYMENT} on {workload.name}",
        created,
        DEPLOYMENT_TIMEOUT_S,
    )
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = pods.env(container, NAMESPACE, f"{DEPLOYMENT}-e2e")
    netns = Namespace(sup, f"{workload.name}-ratelimit")
    xds_host, xds_port = pods.host_port(env["CONFIG_GRPC_XDS_SERVER_URL"], DEPLOYMENT)
    netns.forward(xds_port, to=envoy_gateway)
    redis_host, redis_port = pods.host_port(env["REDIS_URL"], DEPLOYMENT)
    _start_redis(sup, workload, netns, redis_port)
    root = _root(workload, pod, container, hosts=(xds_host, redis_host))
    # `env -i`: the pod's environment and nothing of this machine's (the service reads
    # dozens of variables, PORT and HOST among them).
    argv = [
        "env",
        "-i",
        *(f"{k}={v}" for k, v in env.items()),
        pods.which("chroot"),
        # As the pod's user (65534, resource.go:520-526), who reads the mounts by their modes.
        pods.user(pod, container),
        str(root),
        *container["command"],
        *(container.get("args") or []),
    ]
    proc = sup.start(f"{workload.name}-ratelimit", netns.argv(argv))
    service = Service(
        workload.name,
        netns,
        int(env.get("PORT", DEFAULT_PORTS["PORT"])),
        int(env.get("DEBUG_PORT", DEFAULT_PORTS["DEBUG_PORT"])),
        int(env.get("GRPC_PORT", DEFAULT_PORTS["GRPC_PORT"])),
        pods.address(),
        proc,
    )

    def healthy() -> bool:
        try:
            return _request(service, "GET", service.http_port, "/healthcheck")[0] == 200
        except OSError:
            return False

    wait_listening(proc, healthy, START_TIMEOUT_S, "waiting for /healthcheck")
    _RUNNING[workload.name] = service
    return service


def _start_redis(sup: Supervisor, workload: Cluster, netns: Namespace, port: int) -> None:
    """Redis on loopback of the pod's namespace: the composed Redis the URL names."""
    data = workload.dir / "ratelimit-redis"
    data.mkdir(exist_ok=True)
    proc = sup.start(
        f"{workload.name}-ratelimit-redis",
        netns.argv(
            [
                binary("redis-server"),
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                # Counters of a throwaway plane: nothing written to disk.
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(data),
            ]
        ),
    )

    def pong() -> bool:
        try:
            with netns.connect(port, timeout=2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    wait_listening(proc, pong, START_TIMEOUT_S, "waiting for Redis to answer PING")


def _root(workload: Cluster, pod: Obj, container: Obj, hosts: Sequence[str]) -> Path:
    """The directory the service runs in as its root: what its pod mounts, its hosts file
    and its binary at the container's command."""
    root = pods.root(
        workload, NAMESPACE, pod, container, into=workload.dir / "ratelimit-root", hosts=hosts
    )
    place_binary("ratelimit", root / container["command"][0].lstrip("/"))
    return root


# --- a client, for tests --------------------------------------------------------------


def on(cluster: str) -> Service | None:
    """The rate-limit service of ``cluster``, if one runs."""
    return _RUNNING.get(cluster)


def running(cluster: Cluster | str) -> Service:
    name = cluster if isinstance(cluster, str) else cluster.name
    try:
        return _RUNNING[name]
    except KeyError:
        raise LookupError(
            f"no rate-limit service runs for {name}: its Envoy Gateway configuration has no "
            "rateLimit (functions/fleetgate/inference_cluster/stack.py)"
        ) from None


def _request(
    service: Service, method: str, port: int, path: str, body: Any = None
) -> tuple[int, bytes]:
    """One HTTP request to the service, over a connection made inside its namespace."""
    return service.netns.request(port, method, path, body, timeout=HTTP_TIMEOUT_S)


def should_rate_limit(
    cluster: Cluster | str,
    domain: str,
    descriptors: Iterable[Descriptor],
    hits_addend: int = 1,
) -> Obj:
    """ShouldRateLimit, as Envoy's rate-limit filter asks it, through the service's ``/json``
    endpoint (src/server/server_impl.go:83-140, 161-163 at the pinned version): the
    RateLimitResponse as protojson (``overallCode`` OK or OVER_LIMIT, one ``statuses``
    entry per descriptor). The endpoint answers 200 for OK and 429 for OVER_LIMIT; any
    other status (an unknown answer, a refused request) raises."""
    service = running(cluster)
    request = {
        "domain": domain,
        "descriptors": [d.json() for d in descriptors],
        "hitsAddend": hits_addend,
    }
    status, body = _request(service, "POST", service.http_port, "/json", request)
    if status not in (200, 429):
        raise RuntimeError(
            f"{service.cluster}: /json answered {status}: {body.decode(errors='replace')}"
        )
    answer: Obj = json.loads(body)
    return answer


class Limit(NamedTuple):
    """One limit of the loaded configuration, as the service's ``/rlconfig`` prints it
    (src/config/config_impl.go:110-121 at the pinned version)."""

    # The domain, then each descriptor entry as `key_value` (or `key` where the
    # configuration gives no value), joined with dots (config_impl.go:141-147).
    key: str
    unit: str
    requests_per_unit: int
    shadow_mode: bool
    quota_mode: bool

    def in_domain(self, domain: str) -> bool:
        return self.key.startswith(f"{domain}.")


def parse_limit(line: str) -> Limit:
    key, _, rest = line.partition(": unit=")
    unit, _, rest = rest.partition(" requests_per_unit=")
    requests, _, rest = rest.partition(", shadow_mode: ")
    shadow, _, quota = rest.partition(", quota_mode: ")
    return Limit(key, unit, int(requests), shadow == "true", quota.strip() == "true")


def config(cluster: Cluster | str) -> list[Limit]:
    """Every limit the service has loaded, from its debug listener's ``/rlconfig``."""
    service = running(cluster)
    status, body = _request(service, "GET", service.debug_port, "/rlconfig")
    if status != 200:
        raise RuntimeError(f"{service.cluster}: /rlconfig answered {status}")
    return [parse_limit(line) for line in body.decode().splitlines() if line.strip()]


def wait_for_domain(
    cluster: Cluster | str, domain: str, timeout: float = LOAD_TIMEOUT_S, containing: str = ""
) -> list[Limit]:
    """The limits of ``domain`` once the service has loaded any (with ``containing``: one
    whose key contains it), as Envoy Gateway's xDS delivered them."""

    def loaded() -> list[Limit]:
        limits = [limit for limit in config(cluster) if limit.in_domain(domain)]
        return limits if any(containing in limit.key for limit in limits) else []

    found: list[Limit] = wait_for(
        f"the rate-limit service of {cluster if isinstance(cluster, str) else cluster.name} "
        f"to load domain {domain}" + (f" with {containing}" if containing else ""),
        loaded,
        timeout,
        interval=0.5,
    )
    return found


def services() -> list[str]:
    """The workload clusters whose rate-limit service runs."""
    return sorted(_RUNNING)
