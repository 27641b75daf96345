"""A generated fleet for ``make bench-fleet``: S ModelServices over D ModelDeployments and
E third-party ModelEndpoints, served by G InferenceGateways, on C InferenceClusters (the
two of ``examples/fleet`` and, past two, more of the same shape), each a workload cluster
the real control plane runs.

Every object is the smallest spec its kind accepts that still exercises what grows:

- each gateway selects every service (no ``serviceSelector``), so a size has S x G
  ModelRoutes, each composing its Objects on the gateway's cluster; gateways go round
  the clusters in order;
- each service routes to one deployment's endpoints at priority 0 and, when there
  are third-party endpoints, to one of them at priority 1 (failover across tiers);
- deployments are CPU-only (no GPUs: capacity is not what is measured) with one
  replica each. Every cluster can take every deployment, so each lands on the cluster
  it ranks first (functions/fleetgate/model_deployment/placement.py, rule 3): about
  1/C of them per cluster, and the drain (bench/fleetscale.py) moves that share.
"""

from dataclasses import dataclass
from typing import Any

from e2e import fleet
from fleetgate.core.constants import API_VERSION, SYSTEM_NAMESPACE

Obj = dict[str, Any]
API = API_VERSION
NAMESPACE = "bench"
CLUSTERS = 2  # examples/fleet/20-clusters.yaml


@dataclass(frozen=True)
class Size:
    services: int
    deployments: int
    endpoints: int  # third-party
    gateways: int
    clusters: int = CLUSTERS

    @classmethod
    def for_services(cls, services: int, gateways: int, clusters: int = CLUSTERS) -> "Size":
        """The ratios of a platform's fleet: a deployment per four services, a third-party
        endpoint per ten."""
        return cls(services, max(1, services // 4), max(1, services // 10), gateways, clusters)

    def __str__(self) -> str:
        return (
            f"S={self.services} D={self.deployments} E={self.endpoints} "
            f"G={self.gateways} C={self.clusters}"
        )


def clusters(count: int) -> list[Obj]:
    """``count`` InferenceClusters: the example fleet's, as applied there, then more like
    its first (every provider the bench uses, a region label of its own)."""
    example = [d for d in fleet.documents() if d["kind"] == "InferenceCluster"]
    more = [
        {
            "apiVersion": API,
            "kind": "InferenceCluster",
            "metadata": {"name": f"region-{i}"},
            "spec": {
                "credentials": {"providerConfigName": f"region-{i}-1"},
                "placement": {"metadata": {"labels": {"region": f"region-{i}"}}},
                "capacity": {"gpus": 8, "gpuType": "nvidia-h100"},
                "providers": ["Direct"],
            },
        }
        for i in range(len(example), count)
    ]
    return [*example, *more][:count]


def workload_clusters(count: int) -> list[str]:
    """The workload clusters ``clusters(count)`` are registered as: each
    ClusterProviderConfig is named after its API server (plane/controlplane.py)."""
    return [c["spec"]["credentials"]["providerConfigName"] for c in clusters(count)]


def gateway(i: int, size: Size) -> Obj:
    hosts = clusters(size.clusters)
    return {
        "apiVersion": API,
        "kind": "InferenceGateway",
        "metadata": {"name": f"gw-{i}"},
        "spec": {"clusterName": hosts[i % len(hosts)]["metadata"]["name"]},
    }


def deployment(i: int) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ModelDeployment",
        "metadata": {"name": f"model-{i}", "namespace": NAMESPACE},
        "spec": {
            "model": {"name": f"bench/model-{i}"},
            "engine": {
                "type": "vllm",
                "args": ["--served-model-name", "$(FLEETGATE_SERVED_MODEL_NAME)"],
            },
            "provider": {"name": "Direct"},
            "replicas": 1,
            "template": {"metadata": {"labels": {"model": f"model-{i}"}}},
        },
    }


def endpoint(i: int) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {
            "name": f"external-{i}",
            "namespace": NAMESPACE,
            "labels": {"model": f"external-{i}"},
        },
        "spec": {"origin": f"https://api-{i}.example.com", "model": f"model-{i}"},
    }


def service(i: int, size: Size) -> Obj:
    entries: list[Obj] = [
        {"selector": {"matchLabels": {"model": f"model-{i % size.deployments}"}}, "priority": 0}
    ]
    if size.endpoints:
        entries.append(
            {
                "selector": {"matchLabels": {"model": f"external-{i % size.endpoints}"}},
                "priority": 1,
            }
        )
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": {"name": f"svc-{i}", "namespace": NAMESPACE},
        "spec": {"endpoints": entries},
    }


def documents(size: Size) -> list[Obj]:
    """The whole fleet of ``size``, in the order a platform applies it: the namespaces
    first (the control plane's system namespace holds every composed Object)."""
    return [
        *(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
            for n in (SYSTEM_NAMESPACE, NAMESPACE)
        ),
        *clusters(size.clusters),
        *(gateway(i, size) for i in range(size.gateways)),
        *(deployment(i) for i in range(size.deployments)),
        *(endpoint(i) for i in range(size.endpoints)),
        *(service(i, size) for i in range(size.services)),
    ]
