"""Reference workloads: for each function, one XR and its fleet, from small to the API's maxima.

Each function is measured along its dominant dimension (what its output grows
with), every other dimension held at a realistic value so the fitted growth
exponent is about that dimension alone:

* InferenceCluster: fleet gateways whose client CAs it trusts (with the
  serving stack installed and 16 placement labels: the largest it composes);
* InferenceGateway: published clusters it resolves and copies CAs for (with
  8 TLS Secrets, the API maximum, and caller keys);
* ModelService: backends composed, endpoints x serving gateways, up to 32
  entries x 4 endpoints (128 endpoints: each route full at its 16-backend cap) x 16 gateways;
* ModelDeployment: clusters placed on, up to 100 clusters and 1024 replicas
  (the API maximum); engine and provider are set explicitly;
* ModelEndpoint: keys in its credential Secret (it composes nothing, so its
  cost is the request and the Secret it reads).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import get_args

from bench.world import (
    NAMESPACE,
    Obj,
    Pool,
    cluster_name,
    hosted_endpoint,
    long_name,
    published_cluster,
    published_gateway,
    secret,
    system_secret,
    third_party_endpoint,
)
from fleetgate.core.constants import API_VERSION, SERVED_MODEL_ENV
from fleetgate.core.models import ServingProvider


@dataclass(frozen=True)
class Workload:
    kind: str  # the XR kind, which names the function through its Composition
    size: int  # the dominant dimension
    label: str  # what the size counts, e.g. "fleet gateways"
    shape: str  # the workload in a few words
    xr: Obj
    pool: Pool
    expect: dict[str, str] = field(default_factory=dict)  # condition type → status when settled


# --- InferenceCluster ----------------------------------------------------------


def cluster(gateways: int) -> Workload:
    xr = {
        "apiVersion": API_VERSION,
        "kind": "InferenceCluster",
        "metadata": {"name": cluster_name(0)},
        "spec": {
            "credentials": {"secretRef": {"name": "cluster-000-kubeconfig"}},
            "placement": {"metadata": {"labels": {f"label-{i:02d}": "x" for i in range(16)}}},
            "capacity": {"gpus": 64, "gpuType": "nvidia-h100"},
            "providers": list(get_args(ServingProvider)),  # every one
            "stack": {"install": True},
        },
    }
    pool = Pool().add(
        *(published_gateway(i, cluster=cluster_name(i % 10)) for i in range(gateways))
    )
    return Workload(
        "InferenceCluster",
        gateways,
        "fleet gateways",
        f"stack installed, {gateways} fleet gateway client CAs trusted",
        xr,
        pool,
        {"Connected": "True", "StackReady": "True", "GatewayReady": "True", "Schedulable": "True"},
    )


# --- InferenceGateway ----------------------------------------------------------

TLS_REFS = 8  # the API maximum
CALLER_SECRETS, CALLERS_PER_SECRET = 4, 25


def gateway(clusters: int) -> Workload:
    spec = {
        "tls": {"certificateRefs": [{"name": f"gateway-tls-{i}"} for i in range(TLS_REFS)]},
        "auth": {"secretSelector": {"matchLabels": {"fleetgate.example.com/callers": "public"}}},
        "serviceSelector": {"matchLabels": {"visibility": "public"}},
        "failover": {
            "retries": 2,
            "retryOn": {"httpStatusCodes": [502, 503, 504]},
            "requestTimeout": "120s",
            "streamIdleTimeout": "30s",
        },
    }
    xr = published_gateway(0, cluster=cluster_name(0), spec=spec)
    xr = {k: v for k, v in xr.items() if k != "status"}
    tls = [
        system_secret(f"gateway-tls-{i}", {"tls.crt": "certificate", "tls.key": "key"})
        for i in range(TLS_REFS)
    ]
    callers = [
        system_secret(
            f"callers-{s}",
            {f"team-{s}-{c:02d}": f"sk-{s}-{c:02d}" for c in range(CALLERS_PER_SECRET)},
            {"fleetgate.example.com/callers": "public"},
        )
        for s in range(CALLER_SECRETS)
    ]
    pool = Pool().add(
        *(published_cluster(i) for i in range(max(clusters, 1))),
        xr,
        published_gateway(1, cluster=cluster_name(1)),
        *tls,
        *callers,
    )
    return Workload(
        "InferenceGateway",
        clusters,
        "clusters",
        f"{clusters} published clusters, {TLS_REFS} TLS Secrets, "
        f"{CALLER_SECRETS * CALLERS_PER_SECRET} callers",
        xr,
        pool,
        {"GatewayReady": "True"},
    )


# --- ModelService ----------------------------------------------------------------


def service(
    entries: int,
    per_entry: int,
    gateways: int,
    *,
    third_party_every: int = 2,
    long_names: bool = False,
) -> Workload:
    """``entries`` x ``per_entry`` endpoints x gateways; every ``third_party_every``-th
    endpoint is a third-party API with a credential (1: all of them), the rest fleet-hosted.
    ``long_names`` stretches every name a user picks to a long but plausible length."""

    def named(short: str, width: int) -> str:
        return long_name(short, width) if long_names else short

    xr = {
        "apiVersion": API_VERSION,
        "kind": "ModelService",
        "metadata": {"name": "chat", "namespace": NAMESPACE, "labels": {"visibility": "public"}},
        "spec": {
            "endpoints": [
                {
                    "selector": {"matchLabels": {"entry": f"e{i}"}},
                    "weight": 1 + i,
                    "priority": i % 4,
                }
                for i in range(entries)
            ]
        },
    }
    clusters = [named(cluster_name(i), 60) for i in range(16)]
    endpoints: list[Obj] = []
    secrets: list[Obj] = []
    for i in range(entries):
        for j in range(per_entry):
            name, labels = named(f"ep-{i:02d}-{j}", 120), {"entry": f"e{i}"}
            if (i + j) % third_party_every == third_party_every - 1:
                key = named(f"ep-{i:02d}-{j}-key", 60)
                model = named("gpt-4o-mini", 60)
                endpoints.append(third_party_endpoint(name, labels, credential=key, model=model))
                secrets.append(secret(key, NAMESPACE, {"apiKey": f"sk-{name}"}))
            else:
                cluster = clusters[(i * per_entry + j) % len(clusters)]
                deployment = named("qwen3", 120)
                endpoints.append(hosted_endpoint(name, cluster, labels, deployment))
    # Every gateway reaches every cluster over mutual TLS, as in a settled fleet.
    pool = Pool().add(
        *(published_cluster(i, name=name) for i, name in enumerate(clusters)),
        *(
            published_gateway(i, cluster=clusters[i % len(clusters)], reaches=clusters)
            for i in range(gateways)
        ),
        *endpoints,
        *secrets,
    )
    backends = entries * per_entry
    return Workload(
        "ModelService",
        backends * gateways,
        "backends (endpoints x gateways)",
        f"{entries} entries x {per_entry} endpoints x {gateways} gateways",
        xr,
        pool,
        {"RoutingReady": "True"},
    )


# --- ModelDeployment ---------------------------------------------------------------

PEERS = 8


def deployment(clusters: int, replicas: int) -> Workload:
    def md(name: str, replicas: int) -> Obj:
        return {
            "apiVersion": API_VERSION,
            "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "model": {"name": "Qwen/Qwen3-8B", "source": "hf://Qwen/Qwen3-8B"},
                # Set explicitly: the workload must not depend on auto-selection.
                "engine": {
                    "type": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "args": [
                        "--model",
                        "Qwen/Qwen3-8B",
                        "--served-model-name",
                        f"$({SERVED_MODEL_ENV})",
                    ],
                    "env": [{"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}],
                },
                "provider": {"name": "Direct"},
                "resources": {"gpu": {"count": 1, "type": "nvidia-h100"}},
                "replicas": replicas,
                "placement": {"clusterSelector": {"matchLabels": {"tier": "gpu"}}},
                "template": {"metadata": {"labels": {"model": name}}},
            },
        }

    xr = md("qwen3", replicas)
    peers = []
    for p in range(PEERS):
        peer = md(f"peer-{p}", 2)
        peer["status"] = {
            "placements": [
                {"cluster": cluster_name((p + k) % clusters), "replicas": 1}
                for k in range(min(2, clusters))
            ]
        }
        peers.append(peer)
    pool = Pool().add(*(published_cluster(i, gpus=16) for i in range(clusters)), xr, *peers)
    return Workload(
        "ModelDeployment",
        clusters,
        "clusters placed on",
        f"{replicas} replicas (1 GPU each) over {clusters} clusters, {PEERS} peer deployments",
        xr,
        pool,
        {"Scheduled": "True", "ReplicasReady": "True"},
    )


# --- ModelEndpoint -----------------------------------------------------------------


def endpoint(keys: int) -> Workload:
    xr = third_party_endpoint("openai", {"model": "gpt"}, credential="openai")
    xr = {k: v for k, v in xr.items() if k != "status"}
    data = {"apiKey": "sk-live"} | {f"key-{i:03d}": "x" * 64 for i in range(keys - 1)}
    pool = Pool().add(secret("openai", NAMESPACE, data))
    return Workload(
        "ModelEndpoint",
        keys,
        "keys in the credential Secret",
        f"credential Secret with {keys} keys",
        xr,
        pool,
        {"EndpointReady": "True"},
    )


# --- the suite ----------------------------------------------------------------------

SUITE: dict[str, list[Callable[[], Workload]]] = {
    "InferenceCluster": [partial(cluster, n) for n in (1, 3, 10, 30, 100)],
    "InferenceGateway": [partial(gateway, n) for n in (1, 3, 10, 30, 100)],
    "ModelService": [
        partial(service, 1, 1, 1),
        partial(service, 4, 2, 2),
        partial(service, 8, 4, 4),
        partial(service, 16, 4, 8),
        partial(service, 32, 4, 16),
    ],
    "ModelDeployment": [
        partial(deployment, 1, 1),
        partial(deployment, 3, 8),
        partial(deployment, 10, 64),
        partial(deployment, 30, 256),
        partial(deployment, 100, 1024),
    ],
    "ModelEndpoint": [partial(endpoint, n) for n in (1, 3, 10, 30, 100)],
}
