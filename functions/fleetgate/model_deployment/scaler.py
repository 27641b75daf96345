"""Scaling with demand: one KEDA ScaledObject per placed cluster, and what it reports back.

KEDA v2.20.0 does two things with a ScaledObject (read at that tag):

- From zero to ``minReplicaCount`` (at least one) it scales the target itself,
  as soon as any trigger is active (pkg/scaling/executor/scale_scaledobjects.go);
  above that, the HPA it writes sizes the target by each trigger's value over its
  ``threshold``.
- Back to ``minReplicaCount`` once no trigger has been active for
  ``cooldownPeriod`` seconds after ``status.lastActiveTime`` (:175-223): that is
  ``spec.scaling.idleAfter``.

Both triggers read Envoy AI Gateway's request duration series on the fleet
gateways (``core/metrics.py``) for the ModelServices that route to this
cluster's endpoint, whichever tier answered:

- *demand*: requests finished in the last window. Any wakes the engine
  (activation above 0). Counted as the difference from one window ago rather
  than ``rate()``: a series born with the first request (a new tier or gateway
  label) has no earlier sample, and ``rate()`` would read it as 0 and miss
  exactly the request that should wake a sleeping model.
- *load*: requests in flight, by Little's law the per-second rate of request
  seconds; the HPA adds a replica per ``targetInFlight`` of them. It never
  activates on its own: a trickle of requests is demand's to notice.

Only the scaler writes the target's ``replicas`` once it exists: the manifest
leaves the field out (provider-kubernetes applies a manifest as a merge patch,
so an absent field is left as the scaler set it: internal/controller/
namespaced/object/syncer.go:56-66 at v1.2.1, crossplane-runtime's
APIPatchingApplicator).
"""

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from pydantic import Field

from fleetgate.core import metrics
from fleetgate.core.constants import LABEL_ASLEEP, LABEL_SCALES_TO_ZERO
from fleetgate.core.errors import InputError
from fleetgate.core.kinds.deployment import Scaling
from fleetgate.core.models import Composite, LabelSelector, Model
from fleetgate.core.observed import ABSENT, Observed
from fleetgate.core.reconcile import ByName
from fleetgate.model_deployment.providers.base import Manifest, RemotePart, Workload

API_VERSION: Final = "keda.sh/v1alpha1"
PART: Final = "scaler"
# How often KEDA asks Prometheus, in seconds: a sleeping model wakes within this of the
# request Prometheus scraped.
POLLING_INTERVAL: Final = 5
WINDOW: Final = "1m"
# The HPA's target for demand: so high that demand alone never adds a replica.
DEMAND_THRESHOLD: Final = "1000000"
NO_DEMAND: Final = "vector(0)"


class Bounds(NamedTuple):
    """One cluster's share of the deployment's scaling."""

    low: int  # its share of minReplicas
    high: int  # its placement (its share of maxReplicas)
    start: int  # its share of the starting count


class Scaled(NamedTuple):
    """How one placed cluster's engine scales."""

    bounds: Bounds
    prometheus: str  # the cluster's spec.stack.metrics.prometheusAddress
    services: tuple[str, ...]  # <namespace>/<name> of each ModelService routing there


def shares(total: int, placements: Sequence[tuple[str, int]]) -> dict[str, int]:
    """``total`` spread one at a time over the clusters in placement order, each capped at
    its placement: a minimum of 2 on two clusters keeps one awake on each."""
    given = {cluster: 0 for cluster, _ in placements}
    left = min(total, sum(n for _, n in placements))
    while left > 0:
        for cluster, cap in placements:
            if left > 0 and given[cluster] < cap:
                given[cluster] += 1
                left -= 1
    return given


def bounds(
    scaling: Scaling, replicas: int, placements: Sequence[tuple[str, int]]
) -> dict[str, Bounds]:
    """Each placed cluster's bounds; the starting count is ``replicas`` kept within the
    deployment's bounds."""
    low = shares(scaling.min_replicas, placements)
    start = shares(min(max(replicas, scaling.min_replicas), scaling.max_replicas), placements)
    return {c: Bounds(low[c], n, max(start[c], low[c])) for c, n in placements}


def _model_matcher(services: Sequence[str]) -> str:
    # Prometheus anchors a regex matcher. Kubernetes names hold letters, digits, '-' and
    # '.': only the dot means something in a regex, and its backslash is doubled in a
    # PromQL string, which takes Go's escapes (a lone "\-" there is a parse error).
    alternatives = "|".join(s.replace(".", "\\\\.") for s in sorted(services))
    return f'{metrics.MODEL}=~"{alternatives}"'


def demand_query(services: Sequence[str]) -> str:
    """Requests for the services finished across every fleet gateway in the last window;
    none while no service routes to the deployment."""
    if not services:
        return NO_DEMAND
    series = f"{metrics.REQUESTS}{{{_model_matcher(services)}}}"
    return f"(sum({series}) or vector(0)) - (sum({series} offset {WINDOW}) or vector(0))"


def load_query(services: Sequence[str]) -> str:
    """Requests for the services in flight across every fleet gateway (Little's law)."""
    if not services:
        return NO_DEMAND
    series = f"{metrics.REQUEST_SECONDS}{{{_model_matcher(services)}}}"
    return f"sum(rate({series}[{WINDOW}])) or vector(0)"


def scaled_object(
    workload: Workload,
    *,
    target: RemotePart,
    share: Bounds,
    scaling: Scaling,
    prometheus: str,
    services: Sequence[str],
) -> Manifest:
    """The ScaledObject sizing ``target`` (the provider's scaled part) between ``share``'s
    bounds by the services' demand."""
    manifest = target.manifest
    prometheus_trigger: dict[str, Any] = {"type": "prometheus", "metricType": "AverageValue"}
    triggers = [
        prometheus_trigger
        | {
            "name": name,
            "metadata": {
                "serverAddress": prometheus,
                "query": query,
                "threshold": threshold,
                "activationThreshold": activation,
            },
        }
        for name, query, threshold, activation in (
            ("demand", demand_query(services), DEMAND_THRESHOLD, "0"),
            ("load", load_query(services), str(scaling.target_in_flight), DEMAND_THRESHOLD),
        )
    ]
    return {
        "apiVersion": API_VERSION,
        "kind": "ScaledObject",
        "metadata": {
            "name": workload.name,
            "namespace": workload.namespace,
            "labels": dict(workload.labels),
        },
        "spec": {
            "scaleTargetRef": {
                "apiVersion": manifest["apiVersion"],
                "kind": manifest["kind"],
                "name": manifest["metadata"]["name"],
            },
            "minReplicaCount": share.low,
            "maxReplicaCount": share.high,
            "cooldownPeriod": scaling.idle_seconds,
            "pollingInterval": POLLING_INTERVAL,
            "triggers": triggers,
        },
    }


class ServiceEntry(Model):
    selector: LabelSelector = Field(default_factory=LabelSelector)


class RoutingSpec(Model):
    endpoints: list[ServiceEntry] = Field(default_factory=list)


class RoutingService(Composite):
    """A ModelService as a scaler reads it: only which endpoints its entries select."""

    spec: RoutingSpec = Field(default_factory=RoutingSpec)


def routing_to(services: ByName[RoutingService], labels: Mapping[str, str]) -> tuple[str, ...]:
    """The models (``<namespace>/<name>``) of the ModelServices one of whose entries selects
    an endpoint labelled ``labels``. A service whose entries cannot be read is its own
    function's to report (it keeps its routes as they were), and counts as not routing
    here."""
    found = []
    for name in services:
        try:
            service = services[name]
        except InputError:
            continue
        if any(e.selector.matches(labels) for e in service.spec.endpoints):
            found.append(f"{service.metadata.namespace}/{name}")
    return tuple(found)


def target(parts: Sequence[RemotePart]) -> RemotePart:
    """The part a scaler sizes (a provider that ``scales`` marks exactly one)."""
    return next(p for p in parts if p.scaled)


def part(
    workload: Workload, parts: Sequence[RemotePart], scaling: Scaling, scaled: Scaled
) -> RemotePart:
    """The ScaledObject for the workload ``parts`` render on one cluster."""
    manifest = scaled_object(
        workload,
        target=target(parts),
        share=scaled.bounds,
        scaling=scaling,
        prometheus=scaled.prometheus,
        services=scaled.services,
    )
    return RemotePart(PART, manifest)


def leave_replicas(
    parts: Sequence[RemotePart], observed: Mapping[str, Observed]
) -> tuple[RemotePart, ...]:
    """``parts`` with the scaled part's ``replicas`` left to the scaler once it exists (the
    starting count is written only when it is created)."""
    return tuple(
        _without_replicas(p) if p.scaled and observed.get(p.part, ABSENT).exists else p
        for p in parts
    )


def _without_replicas(scaled: RemotePart) -> RemotePart:
    spec = {k: v for k, v in scaled.manifest["spec"].items() if k != "replicas"}
    return scaled._replace(manifest={**scaled.manifest, "spec": spec})


def running(parts: Sequence[RemotePart], observed: Mapping[str, Observed], share: Bounds) -> int:
    """Replicas the scaled part asks for now (what the scaler set), as the cluster last
    reported it; the starting count until it does."""
    found = observed.get(target(parts).part, ABSENT).remote.get("spec", "replicas")
    # Numbers arrive as floats: a protobuf Struct has no integers.
    if isinstance(found, bool) or not isinstance(found, int | float) or found < 0:
        return share.start
    return int(found)


def last_request(observed: Mapping[str, Observed]) -> str | None:
    """When the cluster's scaler last saw demand (KEDA's ``status.lastActiveTime``)."""
    found = observed.get(PART, ABSENT).remote.get("status", "lastActiveTime")
    return found if isinstance(found, str) else None


def endpoint_labels(share: Bounds, *, asleep: bool) -> dict[str, str]:
    """What a cluster's ModelEndpoint says of its scaling: that it may sleep, that it does."""
    labels = {LABEL_SCALES_TO_ZERO: "true"} if share.low == 0 else {}
    return labels | ({LABEL_ASLEEP: "true"} if asleep else {})
