"""A fleet of any size as the API server would hold it: XRs with the status their functions publish.

The benchmark needs fleets far larger than the example walk (a hundred
clusters, a hundred gateways, thousands of backends). Walking such a fleet
from empty through every function would take longer than the benchmark
itself, so the XRs a function *requires* are built here already settled, with
the status their own functions publish (names derived by ``core.names``, real
PEM certificates from ``sim.pki``). Only the XR under test is reconciled for
real (``bench.settle``); if anything here drifted from what the functions
publish, that XR would not become Ready and the benchmark stops.
"""

import base64
from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.constants import API_VERSION, LABEL_CLUSTER, LABEL_DEPLOYMENT, SYSTEM_NAMESPACE
from fleetgate.core.names import cluster_hostname, label_value
from sim import pipeline
from sim.pki import ca

Obj = dict[str, Any]

NAMESPACE = "team-a"
CREATED = "2025-01-01T00:00:00Z"
# One of each address kind a load balancer hands out; name resolution differs per kind.
ADDRESSES = ("203.0.113.{n}", "2001:db8::{n:x}", "lb-{n}.eu-west.elb.example.net")


def condition(type_: str, status: str = "True", reason: str = "Available") -> Obj:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "lastTransitionTime": CREATED,
    }


def _pem(subject: str) -> str:
    return ca(subject[:64]).cert_pem.decode()


def secret(
    name: str, namespace: str, data: dict[str, str], labels: dict[str, str] | None = None
) -> Obj:
    """A Secret as Crossplane hands it over: values base64 in ``data``."""
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def cluster_name(index: int) -> str:
    return f"cluster-{index:03d}"


def long_name(short: str, width: int) -> str:
    """``short`` stretched to ``width`` characters: a long but plausible name a user picks."""
    return short if len(short) >= width else (short + "-" + "x" * width)[:width].rstrip("-")


def gateway_name(index: int) -> str:
    return f"gateway-{index:03d}"


def published(kind: str, metadata: Obj, spec: Obj, status: Obj, *ready: tuple[str, str]) -> Obj:
    """An XR as the API server holds it once its function settled it.

    ``ready``: the (condition type, reason) pairs its function reported True,
    beside the Ready and Synced conditions Crossplane itself writes.
    """
    conditions = [condition("Ready"), condition("Synced", reason="ReconcileSuccess")]
    conditions += [condition(type_, reason=reason) for type_, reason in ready]
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
        "status": {**status, "conditions": conditions},
    }


def published_cluster(
    index: int, *, name: str = "", gpus: int = 64, providers: tuple[str, ...] = ()
) -> Obj:
    """An InferenceCluster that is registered, trusted and schedulable (``cluster_name``
    unless ``name`` is given)."""
    name = name or cluster_name(index)
    region = ("eu", "us", "ap")[index % 3]
    labels = {"region": region, "tier": "gpu"}
    return published(
        "InferenceCluster",
        {"name": name, "labels": labels, "creationTimestamp": CREATED},
        {
            "credentials": {"providerConfigName": f"{name}-kubernetes"},
            "placement": {"metadata": {"labels": labels}},
            "capacity": {"gpus": gpus, "gpuType": "nvidia-h100"},
            "providers": list(providers or ("Direct", "LLMD")),
        },
        {
            "providerConfigRef": {"name": f"{name}-kubernetes"},
            "gateway": {
                "address": ADDRESSES[index % len(ADDRESSES)].format(n=index % 250 + 1),
                "caCertificate": _pem(f"Fleetgate cluster CA {name}"),
                "hostname": cluster_hostname(name),
            },
        },
        ("Connected", "ClusterReachable"),
        ("GatewayReady", "GatewayProgrammed"),
        ("Schedulable", "MutuallyAuthenticated"),
    )


def published_gateway(
    index: int, *, cluster: str, spec: Obj | None = None, reaches: list[str] | None = None
) -> Obj:
    """An InferenceGateway serving, with its client CA and endpoints published.

    ``reaches``: the clusters it reaches over mutual TLS (``status.reachableClusters``),
    which a ModelService needs before it routes a fleet-hosted endpoint through it.
    """
    name = gateway_name(index)
    hostname = f"{name}.fleet.example.com"
    status: Obj = {
        "address": f"198.51.100.{index % 250 + 1}",
        "clientCACertificate": _pem(f"Fleetgate gateway client CA {name}"),
        "endpoints": {
            "openAI": f"http://{hostname}/v1",
            "anthropic": f"http://{hostname}/anthropic/v1",
        },
    }
    if reaches is not None:
        status["reachableClusters"] = sorted(reaches)
    return published(
        "InferenceGateway",
        {"name": name, "creationTimestamp": CREATED},
        {"clusterName": cluster, "hostname": hostname, **(spec or {})},
        status,
        ("GatewayReady", "GatewayProgrammed"),
    )


def ready_endpoint(name: str, *, labels: dict[str, str], spec: Obj) -> Obj:
    """A ModelEndpoint compose-model-endpoint has judged usable."""
    metadata = {"name": name, "namespace": NAMESPACE, "labels": labels}
    return published("ModelEndpoint", metadata, spec, {}, ("EndpointReady", "CredentialPresent"))


def hosted_endpoint(
    name: str, cluster: str, labels: dict[str, str], deployment: str = "qwen3"
) -> Obj:
    """A fleet-hosted endpoint as compose-model-deployment publishes it (mutual TLS hop)."""
    return ready_endpoint(
        name,
        labels={
            **labels,
            LABEL_CLUSTER: label_value(cluster),
            LABEL_DEPLOYMENT: label_value(deployment),
        },
        spec={
            "origin": f"https://{cluster_hostname(cluster)}",
            "api": {"schema": "OpenAI", "prefix": f"/{NAMESPACE}/{deployment}/v1"},
            "model": f"{NAMESPACE}/{deployment}",
        },
    )


def third_party_endpoint(
    name: str, labels: dict[str, str], credential: str, model: str = "gpt-4o-mini"
) -> Obj:
    """A commercial API reached with an API key from a Secret."""
    return ready_endpoint(
        name,
        labels=labels,
        spec={
            "origin": f"https://{name}.api.example.com",
            "api": {"schema": "OpenAI", "prefix": "/v1"},
            "model": model,
            "credentialRef": {"name": credential},
        },
    )


@dataclass
class Pool:
    """Everything Crossplane could hand a function as a required resource."""

    objects: list[Obj] = field(default_factory=list)

    def add(self, *objs: Obj) -> "Pool":
        self.objects.extend(objs)
        return self

    def select(self, selector: fnv1.ResourceSelector) -> list[Obj]:
        """What Crossplane resolves ``selector`` to, in its order."""
        return pipeline.resolve(selector, self.objects)


def system_secret(name: str, data: dict[str, str], labels: dict[str, str] | None = None) -> Obj:
    return secret(name, SYSTEM_NAMESPACE, data, labels)
