"""Reference workloads for compose-model-service, from one canary to the API's maxima.

Nothing here is a test: test_model_service_size.py asserts on these, and
``python -m tests.support.model_service_workloads`` prints the table.

Crossplane talks to a function over gRPC, whose default message limit is
4 MiB each way: the request carries the XR, its required resources and every
composed resource as observed; the response every desired resource. These
builders make the requests Crossplane would send once a service has settled
(every object composed and accepted), for the ModelService and for each
ModelRoute it composes, so their sizes and latency can be measured and
asserted on.

Everything is deterministic (no clock, no randomness): the same workload
gives byte-identical requests, so sizes can be compared between revisions.
Observed objects carry what a real API server adds (server metadata, owner
reference, finalizer, the composed-resource refs of an XR, provider-kubernetes'
copy of the remote object with its last-applied annotation), but no
``managedFields``, which Crossplane may pass along too: real requests can be
somewhat larger (the ModelRoute's lists are atomic, which keeps its own
managedFields to one entry per field).
"""

import functools
import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from e2e import emulation
from fleetgate.core.constants import API_VERSION, LABEL_CLUSTER, LABEL_DEPLOYMENT
from fleetgate.core.names import cluster_hostname, cluster_label, digest, dns_label, label_value
from fleetgate.core.runner import Composer, run_composer
from fleetgate.model_service.composer import compose

Obj = dict[str, Any]

# gRPC's default maximum message size, which Crossplane and the SDK keep.
MESSAGE_LIMIT = 4 * 1024 * 1024
NAMESPACE = "team-a"
SERVICE = "chat"
COMPOSITION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
TIMESTAMP = "2026-01-01T00:00:00Z"
# A PEM of the usual size (an EC P-256 CA certificate); only its length matters here.
_PEM = (
    "-----BEGIN CERTIFICATE-----\n"
    + "\n".join("A" * 64 for _ in range(9))
    + "\n-----END CERTIFICATE-----\n"
)


@dataclass(frozen=True)
class Workload:
    """A ModelService and the fleet around it.

    ``entries`` entries each select ``per_entry`` endpoints; every
    ``hosted_every``-th entry is third-party with a credential (the rest are
    fleet-hosted, one endpoint per hosting cluster), so 1 makes every
    endpoint third-party. ``gateways`` InferenceGateways all serve it.
    ``long_names`` stretches every name a user picks to a long but plausible
    length (names ModelDeployment derives are bounded by it).
    """

    name: str
    entries: int
    per_entry: int
    gateways: int
    third_party_every: int = 2
    long_names: bool = False

    def named(self, short: str, width: int) -> str:
        """``short``, or with ``long_names`` stretched to ``width`` characters."""
        if not self.long_names or len(short) >= width:
            return short
        return (short + "-" + "x" * width)[:width].rstrip("-")

    @property
    def backends(self) -> int:
        return self.entries * self.per_entry

    def third_party(self, entry: int) -> bool:
        return entry % self.third_party_every == self.third_party_every - 1


WORKLOADS = (
    Workload("small", entries=3, per_entry=1, gateways=1),
    Workload("medium", entries=8, per_entry=4, gateways=4),
    Workload("max", entries=32, per_entry=4, gateways=16),
    Workload("max-credentials", entries=32, per_entry=4, gateways=16, third_party_every=1),
    Workload("max-long-names", entries=32, per_entry=4, gateways=16, long_names=True),
)


# --- the resources Crossplane hands the function -------------------------------


def _cluster(name: str) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {"credentials": {"providerConfigName": f"{name}-kubernetes"}},
        "status": {
            "providerConfigRef": {"name": f"{name}-kubernetes"},
            "gateway": {
                "address": "198.51.100.7",
                "caCertificate": _PEM,
                "hostname": cluster_hostname(name),
            },
        },
    }


def _gateway(index: int) -> Obj:
    name = f"gateway-{index:02d}"
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceGateway",
        "metadata": {"name": name},
        "spec": {"clusterName": f"edge-{index:02d}"},
        "status": {
            "address": "203.0.113.10",
            "clientCACertificate": _PEM,
            "endpoints": {
                "openAI": f"https://{name}.fleet.example.com/v1",
                "anthropic": f"https://{name}.fleet.example.com/anthropic/v1",
            },
        },
    }


def _ready_endpoint(name: str, labels: dict[str, str], spec: Obj) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": spec,
        "status": {
            "conditions": [
                {
                    "type": "EndpointReady",
                    "status": "True",
                    "reason": "CredentialPresent",
                    "lastTransitionTime": TIMESTAMP,
                }
            ]
        },
    }


def _deployment(workload: Workload, entry: int) -> str:
    return workload.named(f"model-{entry:02d}", 120)


def _provider(workload: Workload, entry: int) -> str:
    return workload.named(f"provider-{entry:02d}", 60)


def _entry_endpoints(workload: Workload, entry: int) -> list[Obj]:
    if workload.third_party(entry):
        provider = _provider(workload, entry)
        return [
            _ready_endpoint(
                workload.named(f"{provider}-region-{i}", 120),
                {"provider": provider},
                {
                    "origin": f"https://region-{i}.{provider}.{workload.named('api', 60)}.com",
                    "api": {"schema": "OpenAI", "prefix": workload.named("/v1", 60)},
                    "model": workload.named("gpt-4o-mini-2024-07-18", 60),
                    "credentialRef": {"name": provider, "key": "apiKey"},
                },
            )
            for i in range(workload.per_entry)
        ]
    deployment = _deployment(workload, entry)
    found = []
    for i in range(workload.per_entry):
        cluster = workload.named(f"gpu-{i:02d}", 60)
        found.append(
            _ready_endpoint(
                # As compose-model-deployment names them.
                dns_label(deployment, cluster_label(cluster)),
                {LABEL_DEPLOYMENT: label_value(deployment), LABEL_CLUSTER: label_value(cluster)},
                {
                    "origin": f"https://{cluster_hostname(cluster)}",
                    "api": {"schema": "OpenAI", "prefix": f"/{NAMESPACE}/{deployment}/v1"},
                    "model": f"{NAMESPACE}/{deployment}",
                },
            )
        )
    return found


def _secret(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"apiKey": "c2std29ya2xvYWQtMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA="},
    }


def service(workload: Workload) -> Obj:
    """The ModelService: entry ``i`` at priority ``i % 4``, weights 1..4."""
    entries = []
    for entry in range(workload.entries):
        labels = (
            {"provider": _provider(workload, entry)}
            if workload.third_party(entry)
            else {LABEL_DEPLOYMENT: label_value(_deployment(workload, entry))}
        )
        entries.append(
            {"selector": {"matchLabels": labels}, "weight": entry % 4 + 1, "priority": entry % 4}
        )
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelService",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE, "uid": _uid(SERVICE)},
        "spec": {"endpoints": entries},
    }


def available(workload: Workload) -> list[Obj]:
    """Every resource the control plane holds that the service's function may require."""
    clusters = [_cluster(f"edge-{i:02d}") for i in range(workload.gateways)]
    clusters += [_cluster(workload.named(f"gpu-{i:02d}", 60)) for i in range(workload.per_entry)]
    found = [*(_gateway(i) for i in range(workload.gateways)), *clusters]
    for entry in range(workload.entries):
        found += _entry_endpoints(workload, entry)
        if workload.third_party(entry):
            found.append(_secret(_provider(workload, entry)))
    return found


# --- observed state, as the API server and the controllers leave it -------------

# The clusters' controllers, as the walk plays them.
CONTROLLERS = emulation.World(load_balancers={})


def _uid(seed: str) -> str:
    raw = digest(seed, 32)
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:32]}"


def _server_metadata(meta: Obj, seed: str) -> Obj:
    return {
        **meta,
        "uid": _uid(seed),
        "resourceVersion": str(int(digest(seed, 6), 16)),
        "generation": 1,
        "creationTimestamp": TIMESTAMP,
    }


def observe(owner: Obj, key: str, desired: Obj, status: Obj | None = None) -> Obj:
    """``desired`` as Crossplane observes it once composed by ``owner`` and reconciled.

    An Object carries the remote object provider-kubernetes read back (with
    its last-applied annotation and an Accepted condition); an XR carries
    ``status`` (what its own function reported) and its composed-resource refs.
    """
    owner_meta = owner["metadata"]
    name = desired["metadata"].get("name") or f"{owner_meta['name']}-{digest(key, 5)}"
    meta = _server_metadata(
        {
            **desired["metadata"],
            "name": name,
            "namespace": owner_meta.get("namespace", ""),
            "labels": {
                **(desired["metadata"].get("labels") or {}),
                "crossplane.io/composite": owner_meta["name"],
            },
            "annotations": {COMPOSITION_RESOURCE_NAME: key},
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner_meta["name"],
                    "uid": owner_meta.get("uid") or _uid(owner_meta["name"]),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        f"{owner_meta['name']}/{key}",
    )
    observed = {**desired, "metadata": meta}
    if desired["kind"] == "Object":
        manifest = desired["spec"]["forProvider"]["manifest"]
        remote_meta = _server_metadata(manifest["metadata"], f"remote/{owner_meta['name']}/{key}")
        remote_meta["annotations"] = {LAST_APPLIED: json.dumps(manifest, sort_keys=True)}
        remote = {**manifest, "metadata": remote_meta}
        # What Envoy Gateway and Envoy AI Gateway report for what they accepted.
        remote = CONTROLLERS.remote(remote, "", set())
        observed["metadata"]["finalizers"] = ["finalizer.managedresource.crossplane.io"]
        observed["spec"] = {
            **desired["spec"],
            "deletionPolicy": "Delete",
            "managementPolicies": ["*"],
            "watch": False,
        }
        observed = emulation.applied(observed, remote=remote, stamp=TIMESTAMP)
    else:
        observed["status"] = status or {}
    return observed


def with_resource_refs(xr: Obj, composed: dict[str, Obj]) -> Obj:
    """An XR as stored once Crossplane recorded what it composed (``spec.crossplane``)."""
    refs = [
        {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"]}
        for _, o in sorted(composed.items())
    ]
    crossplane = {
        "compositionRef": {"name": f"{xr['kind'].lower()}s.fleetgate.dev"},
        "compositionRevisionRef": {"name": f"{xr['kind'].lower()}s.fleetgate.dev-{digest('r', 7)}"},
        "compositionUpdatePolicy": "Automatic",
        "resourceRefs": refs,
    }
    return {**xr, "spec": {**xr["spec"], "crossplane": crossplane}}


# --- requests, as Crossplane sends them ------------------------------------------


def resolve(
    compose: Composer, xr: Obj, pool: list[Obj], observed: dict[str, Obj] | None = None
) -> tuple[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse]:
    """Call ``compose`` the way Crossplane does: again until its requirements settle."""
    answer = functools.partial(run_composer, compose)
    return emulation.reconcile(answer, xr, pool, observed, tag="workload")


def desired(rsp: fnv1.RunFunctionResponse) -> dict[str, Obj]:
    return {k: resource.struct_to_dict(r.resource) for k, r in rsp.desired.resources.items()}


@dataclass(frozen=True)
class Call:
    """One settled RunFunction: the request Crossplane sends and the answer."""

    who: str
    request: fnv1.RunFunctionRequest
    response: fnv1.RunFunctionResponse


def settle(compose: Composer, xr: Obj, pool: list[Obj], who: str) -> Iterator[Call]:
    """The calls of a settled reconcile: ``xr``'s, then (recursively) each XR it composes.

    Two passes each, as Crossplane makes them: one that composes, one that
    observes everything composed and accepted. A composed XR's status in its
    parent's second pass is what its own second pass reported.
    """
    _, first = resolve(compose, xr, pool)
    composed = desired(first)
    observed: dict[str, Obj] = {}
    for key, obj in sorted(composed.items()):
        if obj["kind"] == "Object":
            observed[key] = observe(xr, key, obj)
            continue
        child = observe(xr, key, obj)
        calls = list(settle(compose, child, pool, f"{obj['kind']} {key}"))
        yield from calls
        # As stored: with the refs of what it composed, and the status it reported.
        stored_child = resource.struct_to_dict(calls[-1].request.observed.composite.resource)
        observed[key] = {
            **stored_child,
            "status": emulation.xr_status(calls[-1].response, stamp=TIMESTAMP),
        }
    stored = with_resource_refs(xr, observed) if observed else xr
    req, rsp = resolve(compose, stored, pool, observed)
    yield Call(who, req, rsp)


def calls(compose: Composer, workload: Workload) -> list[Call]:
    """The settled calls of ``workload``: each composed XR's, then the service's."""
    return list(settle(compose, service(workload), available(workload), "ModelService"))


# --- measuring ---------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    who: str
    request: int
    response: int
    milliseconds: float


def timed(compose: Composer, call: Call, repeat: int) -> float:
    """Median milliseconds to decode the request, compose and encode the answer."""
    wire = call.request.SerializeToString()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        req = fnv1.RunFunctionRequest.FromString(wire)
        run_composer(compose, req).SerializeToString()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(compose: Composer, workload: Workload, repeat: int = 3) -> list[Size]:
    """The largest call of each kind (the service, one composed XR) at ``workload``."""
    largest: dict[str, Call] = {}
    for call in calls(compose, workload):
        kind = call.who.split(" ")[0]
        size = call.request.ByteSize() + call.response.ByteSize()
        if kind not in largest or size > (
            largest[kind].request.ByteSize() + largest[kind].response.ByteSize()
        ):
            largest[kind] = call
    return [
        Size(
            c.who.split(" ")[0],
            c.request.ByteSize(),
            c.response.ByteSize(),
            timed(compose, c, repeat),
        )
        for c in largest.values()
    ]


def table(compose: Composer, repeat: int = 3) -> str:
    lines = [
        f"{'workload':<16} {'backends':>8} {'gateways':>8} {'call':<13}"
        f" {'request':>12} {'response':>12} {'ms':>8}"
    ]
    for workload in WORKLOADS:
        for size in measure(compose, workload, repeat):
            lines.append(
                f"{workload.name:<16} {workload.backends:>8} {workload.gateways:>8}"
                f" {size.who:<13} {size.request:>12,} {size.response:>12,}"
                f" {size.milliseconds:>8.1f}"
            )
    lines.append(f"limit: {MESSAGE_LIMIT:,} bytes each way")
    return "\n".join(lines)


def main() -> None:
    print(table(compose))


if __name__ == "__main__":
    main()
