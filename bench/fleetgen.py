"""A generated fleet for ``make bench-fleet``: S ModelServices over D ModelDeployments and
E third-party ModelEndpoints, served by G InferenceGateways, on the two InferenceClusters
of ``examples/fleet`` (the workload clusters the real control plane runs).

Every object is the smallest spec its kind accepts that still exercises what grows:

- each gateway selects every service (no ``serviceSelector``), so a size has S x G
  ModelRoutes, each composing its Objects on the gateway's cluster;
- each service routes to one deployment's endpoints at priority 0 and, when there
  are third-party endpoints, to one of them at priority 1 (failover across tiers);
- deployments are CPU-only (no GPUs: capacity is not what is measured) with one
  replica each. Placement spreads one deployment's replicas, ties going to the
  earlier name (functions/fleetgate/model_deployment/placement.py, rule 3), so every
  deployment runs on eu-west, and the drain (bench/fleetscale.py) moves them all.
"""

from dataclasses import dataclass
from typing import Any

from e2e import fleet
from fleetgate.core.constants import API_VERSION, SYSTEM_NAMESPACE

Obj = dict[str, Any]
API = API_VERSION
NAMESPACE = "bench"
CLUSTERS = ("eu-west", "us.east")  # examples/fleet/20-clusters.yaml


@dataclass(frozen=True)
class Size:
    services: int
    deployments: int
    endpoints: int  # third-party
    gateways: int

    @classmethod
    def for_services(cls, services: int, gateways: int) -> "Size":
        """The ratios of a platform's fleet: a deployment per four services, a third-party
        endpoint per ten."""
        return cls(services, max(1, services // 4), max(1, services // 10), gateways)

    def __str__(self) -> str:
        return (
            f"S={self.services} D={self.deployments} E={self.endpoints} "
            f"G={self.gateways} C={len(CLUSTERS)}"
        )


def clusters() -> list[Obj]:
    """The example fleet's InferenceClusters, as applied there."""
    return [d for d in fleet.documents() if d["kind"] == "InferenceCluster"]


def gateway(i: int) -> Obj:
    return {
        "apiVersion": API,
        "kind": "InferenceGateway",
        "metadata": {"name": f"gw-{i}"},
        "spec": {"clusterName": CLUSTERS[i % len(CLUSTERS)]},
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
        *clusters(),
        *(gateway(i) for i in range(size.gateways)),
        *(deployment(i) for i in range(size.deployments)),
        *(endpoint(i) for i in range(size.endpoints)),
        *(service(i, size) for i in range(size.services)),
    ]
