"""Envoy Gateway's own controller on each workload cluster, as the stack installs it.

Envoy Gateway v1.8.3 (``cmd/envoy-gateway``, pinned in tools/egctl/go.mod)
runs out of cluster from its Helm chart at the pinned tag, rendered with the
values compose-inference-cluster gives its Release, InferencePool addon
included (functions/fleetgate/inference_cluster/stack.py). The chart's
ServiceAccounts, ClusterRoles, Roles and bindings are applied, and its
Service and Deployment (Envoy Gateway owns what it provisions by them; no
pod of that Deployment runs, the controller runs here); its certgen
Job's container runs once, as the certgen ServiceAccount, and makes the
control plane's certificates; then the Deployment's container runs with the
chart's arguments, as the envoy-gateway ServiceAccount, never as an
administrator. So every status the functions read from Gateways, HTTPRoutes,
GRPCRoutes, Backends, ClientTrafficPolicies, BackendTrafficPolicies,
SecurityPolicies and EnvoyPatchPolicies is Envoy Gateway's own, and the
EnvoyProxy Deployments and LoadBalancer Services it provisions for each
Gateway are on the cluster as it makes them.

Each instance runs where its pod would see the same files and ports:

* in its own loopback-only network namespace, with its API server forwarded
  to the same address (it listens on fixed ports, :18000 for xDS, :8081 for
  probes, :9443 for its webhook, :19001 for metrics, which two instances
  would share);
* under its own root directory (``chroot``) holding what the pod mounts: the
  certgen Secret at ``/certs``, the chart's ConfigMap at ``/config``; it
  reads its certificates from those fixed paths and keeps its Wasm cache
  under ``/var/lib/eg``, in that directory and nowhere else on this machine.

Its extension manager is AI Gateway's controller (aigateway.py), reached at
the hostname the configuration names (the root's hosts file leads it to
loopback, and the port is carried into the controller's network namespace),
so every xDS snapshot Envoy Gateway publishes is the one AI Gateway's hooks
made. Each Gateway's Envoy runs from the Deployment it provisions
(proxies.py). The chart's topology-injector webhook is served but not
registered: certgen runs with ``--disable-topology-injector``, as the chart
passes when the injector is off. The CRDs come from the pinned set (the chart's own, in
its crds subchart). The Deployments it provisions are made available by the
stand-in kubelet and its LoadBalancer Services get an address from the
stand-in load balancer (standins.py); the pod of its rate-limit Deployment,
when its configuration rate-limits, runs for real (ratelimit.py).
"""

import functools
import http.client as http_client
import shutil
import tempfile
from pathlib import Path

from fleetgate.inference_cluster import stack
from fleetgate.inference_cluster.stack import AIGW_EXTENSION_HOST, AIGW_EXTENSION_PORT
from plane import calls, charts
from plane.clusters import Cluster, binary, place_binary
from plane.kube import Obj, mount_secret
from plane.processes import Namespace, Supervisor
from schemas import xrds
from tools import pinned

REPO = Path(__file__).resolve().parents[1]
MODULE = "github.com/envoyproxy/gateway"
PINNED_BY = REPO / "tools" / "egctl"
ENVOY_GATEWAY = next(c for c in stack.CHARTS if c.key == "envoy-gateway")
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
# The chart's own Service and Deployment, applied though nothing runs the Deployment's pod
# (the controller runs here; the stand-in kubelet marks it available): Envoy Gateway reads
# their UIDs, with its ServiceAccount's, to own the rate-limit Deployment it provisions,
# and without them gives that Deployment up at start-up, never to retry
# (internal/infrastructure/kubernetes/ratelimit_infra.go:23-47, runner/runner.go:159-166,
# v1.8.3).
OWNERS = {("Service", "envoy-gateway"), ("Deployment", "envoy-gateway")}
NAMESPACE = ENVOY_GATEWAY.namespace
# What the chart's containers take from the downward API (metadata.namespace).
DOWNWARD = {"ENVOY_GATEWAY_NAMESPACE": NAMESPACE}
CERTGEN_TIMEOUT_S = 120
# Its Prometheus endpoint (api/v1alpha1/envoygateway_types.go:24, v1.8.3) and the message its
# gateway-API runner translates on (``translations``).
METRICS_PORT = 19001
TRANSLATION = "provider-resources"


@functools.cache
def chart() -> list[Obj]:
    """What Envoy Gateway's chart renders with those values, under the stack's release name.

    The chart at the tag keeps its values as a template; the release fills in
    the image and pull policy (tools/make/helm.mk:52-57, v1.8.3), as here, in
    a copy (the module cache is read-only).
    """
    source = charts.module_dir(MODULE, PINNED_BY) / "charts" / "gateway-helm"
    version = charts.module_version(MODULE, PINNED_BY)
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "gateway-helm"
        shutil.copytree(source, copy, copy_function=shutil.copyfile)
        copy.chmod(0o755)
        template = (source / "values.tmpl.yaml").read_text()
        (copy / "values.yaml").write_text(
            template.replace("${GatewayImage}", f"docker.io/envoyproxy/gateway:{version}").replace(
                "${GatewayImagePullPolicy}", "IfNotPresent"
            )
        )
        return charts.render(
            copy, ENVOY_GATEWAY.release, NAMESPACE, charts.stack_values(ENVOY_GATEWAY)
        )


def gateway_classes() -> list[Obj]:
    """The GatewayClass the platform's Envoy Gateway serves: the one the clusters' Gateways
    name by default, as the stack would compose it."""
    default = xrds.field("InferenceCluster", "spec.gateway.className")["default"]
    return [stack.gateway_class(str(default))]


def start(sup: Supervisor, workload: Cluster, ai_gateway: Namespace) -> Namespace:
    """Install Envoy Gateway's chart objects on ``workload`` and run its controller, its
    extension hooks carried to AI Gateway's controller in ``ai_gateway``; the network
    namespace it runs in (the rate-limit service reaches its xDS there)."""
    kube = workload.admin
    objects = chart()
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for obj in objects:
        if obj["kind"] in RBAC_KINDS or (obj["kind"], obj["metadata"]["name"]) in OWNERS:
            kube.apply(obj)
    for obj in gateway_classes():
        kube.apply(obj)
    # The stack's own Redis beside it, as compose-inference-cluster composes it with the
    # stack: its Deployment (a redis-server process stands for the pod, ratelimit.py),
    # Service and NetworkPolicy, taken and kept by the real API server.
    for obj in stack.rate_limit_redis():
        kube.apply(obj)
    _certgen(workload, objects)
    root = _root(workload, objects)
    netns = Namespace(sup, f"{workload.name}-envoy-gateway")
    netns.forward(int(workload.server.rsplit(":", 1)[1]))
    # The extension manager's configured host leads to loopback (the root's hosts file),
    # and its port to AI Gateway's controller, as the controller's Service would.
    netns.forward(AIGW_EXTENSION_PORT, to=ai_gateway)
    args, env = charts.container(objects, "Deployment", "envoy-gateway", "envoy-gateway")
    sup.start(
        f"{workload.name}-envoy-gateway",
        netns.argv(["chroot", str(root), "/envoy-gateway", *args]),
        env={**env, **DOWNWARD, "KUBECONFIG": "/kubeconfig", "HOME": "/"},
    )
    return netns


def live(sup: Supervisor, cluster: str) -> bool:
    """Whether Envoy Gateway on ``cluster`` passes its chart's liveness probe, asked as the
    kubelet asks it: an HTTP GET in its pod's network, any status from 200 to 399.

    The probe matters after its API server went away: Envoy Gateway v1.8.3 runs its
    Kubernetes provider in a goroutine that only logs "unable to start provider" when the
    controller manager stops on a lost leader lease (internal/provider/runner/runner.go:
    72-76), so the process stays up, reconciling nothing, and the manager's health server
    (the probe's /healthz) stops with it. The kubelet restarts such a container.
    """
    probe = charts.pod(chart(), "Deployment", "envoy-gateway")["containers"][0]
    http = probe["livenessProbe"]["httpGet"]
    try:
        status, _ = _netns(sup, cluster).request(int(http["port"]), "GET", http["path"], timeout=5)
    except (OSError, http_client.HTTPException):
        return False
    return 200 <= status < 400


def translations(sup: Supervisor, cluster: str) -> tuple[float, float]:
    """How many gateway-API translations Envoy Gateway on ``cluster`` has run, and the
    seconds they took, from its own metrics.

    Its gateway-API runner translates every Gateway, route and policy of its
    GatewayClass again on each change it subscribes to (the ``provider-resources``
    message, internal/gatewayapi/runner/runner.go:189-191 at v1.8.3), and the handling of
    each such update is timed as ``watchable_subscribe_duration_seconds``
    (internal/message/watchutil.go:72-74), served on the fixed metrics port.
    """
    status, body = _netns(sup, cluster).request(METRICS_PORT, "GET", "/metrics")
    if status != 200:
        raise OSError(f"Envoy Gateway on {cluster} answered /metrics with {status}")
    text = body.decode()
    series = "watchable_subscribe_duration_seconds"
    found = [
        calls.parse(text, f"{series}_{part}", "message").get(TRANSLATION, 0.0)
        for part in ("count", "sum")
    ]
    return found[0], found[1]


def _netns(sup: Supervisor, cluster: str) -> Namespace:
    return sup.namespaces[f"{cluster}-envoy-gateway"]


def _certgen(workload: Cluster, objects: list[Obj]) -> None:
    """The chart's certgen Job, run once as its ServiceAccount: the control plane's
    certificates, in Secrets of Envoy Gateway's namespace."""
    job = next(o for o in objects if o["kind"] == "Job")["metadata"]["name"]
    args, env = charts.container(objects, "Job", job, "envoy-gateway-certgen")
    if "--disable-topology-injector" not in args:
        args.append("--disable-topology-injector")
    account = charts.pod(objects, "Job", job)["serviceAccountName"]
    token = workload.admin.token_for(NAMESPACE, account)
    kubeconfig = workload.kubeconfig_for_token("envoy-gateway-certgen", token)
    pinned.run(
        [binary("envoy-gateway"), *args],
        what=f"Envoy Gateway's certgen on {workload.name}",
        env={**env, **DOWNWARD, "KUBECONFIG": str(kubeconfig)},
        timeout=CERTGEN_TIMEOUT_S,
    )


def _root(workload: Cluster, objects: list[Obj]) -> Path:
    """The directory the controller runs in as its root: what its pod mounts, where it
    mounts it, its ServiceAccount's kubeconfig and its binary."""
    kube = workload.admin
    root = workload.dir / "envoy-gateway-root"
    pod = charts.pod(objects, "Deployment", "envoy-gateway")
    (container,) = pod["containers"]
    for mount in container["volumeMounts"]:
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        into = root / mount["mountPath"].lstrip("/")
        if "secret" in volume:
            mount_secret(kube, NAMESPACE, volume["secret"]["secretName"], into, "certgen")
            continue
        (config_map,) = (
            o
            for o in objects
            if o["kind"] == "ConfigMap" and o["metadata"]["name"] == volume["configMap"]["name"]
        )
        into.mkdir(parents=True, exist_ok=True)
        for key, text in config_map["data"].items():
            (into / key).write_text(text)
    for folder in ("tmp", "var/lib", "etc"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    # Where the extension manager's configured hostname leads: AI Gateway's controller.
    (root / "etc" / "hosts").write_text(f"127.0.0.1 localhost {AIGW_EXTENSION_HOST}\n")
    token = kube.token_for(NAMESPACE, pod["serviceAccountName"])
    (root / "kubeconfig").write_text(workload.kubeconfig_text_for_token(token))
    image = root / "envoy-gateway"
    place_binary("envoy-gateway", image)
    return root
