"""Envoy AI Gateway's own controller on each workload cluster, as the stack installs it.

Envoy AI Gateway v1.1.0 (``cmd/controller``, pinned in tools/aigateway/go.mod,
built from the tag's source where the module proxy refuses the module) runs
out of cluster from its Helm chart at the tag, rendered by Helm with the
values compose-inference-cluster gives its Release
(functions/fleetgate/inference_cluster/stack.py). Every object the chart
renders is applied but its Deployment, whose container runs here with the
chart's arguments as its user (65532), as the chart's ServiceAccount: the
RBAC, the grant to Envoy Gateway's ServiceAccount, the Service, the Secret
holding the webhook's serving certificate and the MutatingWebhookConfiguration
(the controller refuses to start without it, and writes the CA into it:
cmd/controller/main.go:523-546 at v1.1.0). So what it does on the cluster is
its own:

* its extension server answers Envoy Gateway's xDS hooks, adding the external
  processor, the InferencePool clusters and AI Gateway's filters to every
  Envoy's configuration (Envoy Gateway dials it at the hostname the stack
  configures; the dial is carried into this controller's network namespace);
* its reconcilers turn AIGatewayRoutes into HTTPRoutes and HTTPRouteFilters,
  write the Accepted conditions of AIGatewayRoutes, AIServiceBackends and
  BackendSecurityPolicies and the status of InferencePools, and keep the
  filter configuration Secrets the external processors read;
* its webhook is registered and called by the cluster's API server itself:
  each Envoy pod created on the cluster (proxies.py) is mutated by it, which
  is how the external processor joins each Gateway's Envoy.

The API server reaches the webhook as it reaches any Service's pods: it
routes to the Service's endpoints (``--enable-aggregator-routing``,
clusters.py) and this module writes the EndpointSlice a kubelet and the
endpoint-slice controller would, naming an address the plane gives the pod
(pods.address). The pod's own files are under a root directory: the webhook
Secret at ``/certs`` and the ServiceAccount's token, CA and namespace where a
pod finds them, so the controller uses its in-cluster configuration.
"""

import functools
from pathlib import Path

from fleetgate.inference_cluster import stack
from plane import charts, pods
from plane.clusters import Cluster, place_binary
from plane.kube import Obj
from plane.processes import Namespace, Supervisor

REPO = Path(__file__).resolve().parents[1]
AI_GATEWAY = next(c for c in stack.CHARTS if c.key == "ai-gateway")
NAMESPACE = AI_GATEWAY.namespace
# The tag's source: its chart is at manifests/ (the proxy refuses the module, README there).
SOURCE = REPO.parent / "shared" / "upstream" / f"ai-gateway-{AI_GATEWAY.version}"
CHART = SOURCE / "manifests" / "charts" / "ai-gateway-helm"
# What the controller's pod mounts and where (its container, templates/deployment.yaml).
DEPLOYMENT = "ai-gateway-controller"
CONTAINER = "ai-gateway-helm"
SERVICE_ACCOUNT_DIR = "var/run/secrets/kubernetes.io/serviceaccount"
NOT_APPLIED = {"Deployment", "PodDisruptionBudget"}


@functools.cache
def chart() -> list[Obj]:
    """What AI Gateway's chart renders with the stack's values, under its release name."""
    return charts.render(CHART, AI_GATEWAY.release, NAMESPACE, charts.stack_values(AI_GATEWAY))


def install(workload: Cluster) -> None:
    """The chart's objects on ``workload`` (its controller runs by ``start``)."""
    kube = workload.admin
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for obj in chart():
        if obj["kind"] not in NOT_APPLIED:
            kube.apply(obj)


def start(sup: Supervisor, workload: Cluster) -> Namespace:
    """Run the controller on ``workload``; the network namespace it serves in (Envoy
    Gateway's extension hooks are carried there)."""
    objects = chart()
    pod = charts.pod(objects, "Deployment", DEPLOYMENT)
    container = next(c for c in pod["containers"] if c["name"] == CONTAINER)
    pod_name = f"{DEPLOYMENT}-e2e"
    netns = Namespace(sup, f"{workload.name}-ai-gateway")
    api_port = int(workload.server.rsplit(":", 1)[1])
    netns.forward(api_port)
    root = pods.root(
        workload, NAMESPACE, pod, container, into=workload.dir / "ai-gateway-root", hosts=()
    )
    _service_account(workload, pod, root)
    place_binary("ai-gateway-controller", root / "bin" / "controller")
    environment = {
        **pods.env(container, NAMESPACE, pod_name),
        # What the kubelet tells every container of the API server's Service.
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(api_port),
    }
    args = pods.expand([str(a) for a in container["args"]], environment)
    sup.start(
        f"{workload.name}-ai-gateway-controller",
        netns.argv(
            [
                "chroot",
                pods.user(pod, container),
                str(root),
                "/bin/controller",
                *args,
            ]
        ),
        env=environment,
    )
    _serve(workload, objects, netns)
    return netns


def _service_account(workload: Cluster, pod: Obj, root: Path) -> None:
    """What the kubelet projects into every pod of a ServiceAccount: a token, the cluster's
    CA and the pod's namespace."""
    into = root / SERVICE_ACCOUNT_DIR
    into.mkdir(parents=True, exist_ok=True)
    token = workload.admin.token_for(NAMESPACE, pod["serviceAccountName"])
    files = {"token": token, "ca.crt": workload.ca.cert_pem.decode(), "namespace": NAMESPACE}
    for name, text in files.items():
        (into / name).write_text(text)
        (into / name).chmod(0o644)


def _serve(workload: Cluster, objects: list[Obj], netns: Namespace) -> None:
    """The controller's Service endpoints, at an address of the pod's: the EndpointSlice the
    endpoint-slice controller would write, and the ports carried into its namespace."""
    (service,) = (o for o in objects if o["kind"] == "Service")
    address = pods.address()
    ports = service["spec"]["ports"]
    # The API server dials the EndpointSlice's port, so it names the one the relay took.
    exposed = {p["name"]: netns.expose(address, int(p["targetPort"])) for p in ports}
    name = service["metadata"]["name"]
    workload.admin.apply(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-e2e",
                "namespace": NAMESPACE,
                "labels": {
                    "kubernetes.io/service-name": name,
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                },
            },
            "addressType": "IPv4",
            "endpoints": [
                {
                    "addresses": [address],
                    "conditions": {"ready": True, "serving": True, "terminating": False},
                }
            ],
            "ports": [
                {
                    "name": p["name"],
                    "port": exposed[p["name"]],
                    "protocol": p.get("protocol", "TCP"),
                    **({"appProtocol": p["appProtocol"]} if "appProtocol" in p else {}),
                }
                for p in ports
            ],
        }
    )
