"""Who routes the service, and to what: gateways and endpoints, sorted into usable or not.

Pure functions of the typed required resources. Every gateway that selects the
service is either serving or pending with a reason, and every selected
endpoint is either routable or left out with a reason: nothing is skipped
without a word.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from pydantic import Field

from fleetgate.core.constants import LABEL_ASLEEP, LABEL_CLUSTER, LABEL_SCALES_TO_ZERO
from fleetgate.core.kinds.cluster_status import ClusterGatewayStatus, ProviderConfigRef
from fleetgate.core.kinds.endpoint import CredentialRef, ModelEndpoint
from fleetgate.core.kinds.gateway import Failover, InferenceGateway
from fleetgate.core.kinds.governance import Pricing
from fleetgate.core.kinds.route import ROUTE_BACKENDS_MAX
from fleetgate.core.kinds.service import ServiceEndpointEntry
from fleetgate.core.models import Composite, Condition, Model
from fleetgate.core.secrets import SecretKeys
from fleetgate.model_service.origin import Origin, OriginError, parse_origin
from fleetgate.model_service.weights import renumber, tier_weights

ENDPOINT_READY = "EndpointReady"


# --- inputs ------------------------------------------------------------------


class EndpointStatus(Model):
    # A plain default, copied per instance by pydantic: default_factory=list would
    # have pydantic read list's signature on the first call, which compiles the
    # tokenizer's regular expressions (several ms of every pod's cold start).
    conditions: list[Condition] = []  # noqa: RUF012


class SelectedEndpoint(ModelEndpoint):
    """A ModelEndpoint as required: the spec, and the status compose-model-endpoint wrote."""

    status: EndpointStatus = Field(default_factory=EndpointStatus)

    @property
    def ready(self) -> Condition | None:
        return next((c for c in self.status.conditions if c.type == ENDPOINT_READY), None)


class RoutingClusterStatus(Model):
    provider_config_ref: ProviderConfigRef = Field(default_factory=ProviderConfigRef)
    gateway: ClusterGatewayStatus = Field(default_factory=ClusterGatewayStatus)


class RoutingCluster(Composite):
    """An InferenceCluster as a route reads it: how to reach it and its gateway.

    Only what routing uses is read (and validated): the ProviderConfig a
    gateway's objects go through and the published CA and hostname of the
    cluster's gateway; not its spec or its conditions, which a ModelService
    would otherwise convert for every cluster it reads on every call.
    """

    status: RoutingClusterStatus = Field(default_factory=RoutingClusterStatus)


# --- gateways ----------------------------------------------------------------


class ServingGateway(NamedTuple):
    name: str
    provider_config: str
    failover: Failover
    open_ai: str | None
    tls: bool = False
    # Clusters the gateway reaches over mutual TLS (its status.reachableClusters).
    reachable: frozenset[str] = frozenset()
    # Its spec.monitoring.prometheusRules: the routes compose failover alerts.
    prometheus_rules: bool = False

    def unreachable(self, routable: Sequence["Routable"]) -> list["Routable"]:
        """The fleet-hosted endpoints whose cluster this gateway cannot reach yet."""
        return [r for r in routable if r.cluster is not None and r.cluster not in self.reachable]


class PendingGateway(NamedTuple):
    name: str
    why: str


def selects(gateway: InferenceGateway, service_labels: Mapping[str, str]) -> bool:
    """Whether the gateway's serviceSelector matches; no selector serves every service."""
    selector = gateway.spec.service_selector
    return selector is None or selector.matches(service_labels)


class Gateways(NamedTuple):
    """The gateways selecting the service, sorted by what can be done with each."""

    serving: list[ServingGateway]
    # Not ready to serve it yet: each keeps the ModelRoute it has.
    pending: list[PendingGateway]
    # Never to serve it as configured: no ModelRoute.
    refused: list[PendingGateway]


# Why a gateway without spec.auth never serves a service that restricts its callers.
NO_AUTH: Final = (
    "it authenticates no caller (no spec.auth) and this service restricts its callers (spec.access)"
)


def sort_gateways(
    gateways: Sequence[InferenceGateway],
    clusters: Mapping[str, RoutingCluster],
    service_labels: Mapping[str, str],
    *,
    restricted: bool = False,
) -> Gateways:
    """The gateways selecting the service, by name: serving, pending or refused, with a reason.

    Fail closed: a service that restricts its callers (``restricted``) is never
    routed where nobody is known. Without ``spec.auth`` a gateway authenticates
    no caller (and removes any caller header a request brings), so an
    allow-list there could only refuse everyone: refused.
    """
    found = Gateways([], [], [])
    for gateway in sorted(gateways, key=lambda g: g.metadata.name):
        if not selects(gateway, service_labels):
            continue
        name, cluster_name = gateway.metadata.name, gateway.spec.cluster_name
        cluster = clusters.get(cluster_name)
        provider_config = cluster.status.provider_config_ref.name if cluster else None
        if restricted and gateway.spec.auth is None:
            found.refused.append(PendingGateway(name, NO_AUTH))
        elif cluster is None:
            found.pending.append(
                PendingGateway(name, f"its InferenceCluster {cluster_name} not found")
            )
        elif not provider_config:
            found.pending.append(
                PendingGateway(name, f"its InferenceCluster {cluster_name} has no ProviderConfig")
            )
        elif not gateway.status.client_ca_certificate:
            # Backends to fleet-hosted endpoints present the gateway's client
            # certificate; until its CA is published that Secret may not
            # exist, and Envoy Gateway fails such a Backend closed.
            found.pending.append(PendingGateway(name, "its client CA is not published yet"))
        else:
            found.serving.append(
                ServingGateway(
                    name,
                    provider_config,
                    gateway.spec.failover,
                    gateway.status.endpoints.open_ai,
                    tls=gateway.spec.tls is not None,
                    reachable=frozenset(gateway.status.reachable_clusters),
                    prometheus_rules=gateway.spec.monitoring.prometheus_rules,
                )
            )
    return found


# --- endpoints ---------------------------------------------------------------


class Routable(NamedTuple):
    """An endpoint going into the route, with what its backend objects need."""

    name: str
    entry: int
    weight: int
    priority: int
    origin: Origin
    schema: str
    prefix: str
    model: str | None
    credential: CredentialRef | None
    cluster: str | None  # set for a fleet-hosted endpoint: mutual TLS to that cluster
    pricing: Pricing | None = None
    scales_to_zero: bool = False  # its deployment may put it to sleep
    # No engine serves it now (scaled to zero, or woken and still starting): parked at a
    # last priority level (``plan_backends``).
    asleep: bool = False


@dataclass
class Screening:
    """The outcome of sorting every selected endpoint."""

    total: int = 0
    # Sleeping ones too (``Routable.asleep``): a route keeps its backends whether they
    # sleep or not, so sleeping and waking change priorities in place (``plan_backends``).
    routable: list[Routable] = field(default_factory=list)
    # Every endpoint sleeps: the route's levels are theirs, so a request reaches them,
    # and its callers are answered 503 with Retry-After meanwhile.
    cold_start: bool = False
    # endpoint name → why it is left out, in selection order
    left_out: dict[str, str] = field(default_factory=dict)
    # cause → how many endpoints it left out, for the condition message
    causes: dict[str, int] = field(default_factory=dict)

    def leave_out(self, name: str, cause: str, detail: str) -> None:
        self.left_out[name] = f"{cause}: {detail}" if detail else cause
        self.causes[cause] = self.causes.get(cause, 0) + 1


NOT_READY = "not ready"
BAD_ORIGIN = "origin refused"
NO_CLUSTER_CA = "no cluster CA"
NO_CREDENTIAL = "credential missing"
ROUTE_FULL = "route full"
DIALECT = "dialect"


def screen_endpoints(
    entries: Sequence[ServiceEndpointEntry],
    matched: Sequence[Sequence[SelectedEndpoint]],
    clusters: Mapping[str, RoutingCluster],
) -> Screening:
    """Sort the endpoints every entry matched into routable and left out (credentials aside).

    An endpoint matched by two entries belongs to the first, so a canary
    entry and a catch-all never count one backend twice. Within an entry,
    endpoints are taken by name so the result never depends on the order
    Crossplane lists them in.
    """
    screening = Screening()
    seen: set[str] = set()
    for index, (entry, endpoints) in enumerate(zip(entries, matched, strict=True)):
        for endpoint in sorted(endpoints, key=lambda e: e.metadata.name):
            name = endpoint.metadata.name
            if name in seen:
                continue
            seen.add(name)
            screening.total += 1
            _screen(screening, index, entry, endpoint, clusters)
    return screening


def _screen(
    screening: Screening,
    index: int,
    entry: ServiceEndpointEntry,
    endpoint: SelectedEndpoint,
    clusters: Mapping[str, RoutingCluster],
) -> None:
    name = endpoint.metadata.name
    ready = endpoint.ready
    if ready is None or ready.status != "True":
        detail = f"{ENDPOINT_READY} is {ready.status} ({ready.reason})" if ready else ""
        screening.leave_out(name, NOT_READY, detail or f"no {ENDPOINT_READY} condition yet")
        return
    try:
        origin = parse_origin(endpoint.spec.origin)
    except OriginError as err:
        screening.leave_out(name, BAD_ORIGIN, str(err))
        return
    cluster = endpoint.metadata.labels.get(LABEL_CLUSTER)
    if cluster is not None:
        problem = _fleet_hop_problem(origin, cluster, clusters)
        if problem:
            screening.leave_out(name, *problem)
            return
    spec = endpoint.spec
    labels = endpoint.metadata.labels
    screening.routable.append(
        Routable(
            name=name,
            entry=index,
            weight=entry.weight,
            priority=entry.priority,
            origin=origin,
            schema=spec.api.schema_,
            prefix=spec.api.prefix,
            model=spec.model,
            credential=spec.credential_ref,
            cluster=cluster,
            pricing=spec.pricing,
            scales_to_zero=cluster is not None and labels.get(LABEL_SCALES_TO_ZERO) == "true",
            asleep=cluster is not None and labels.get(LABEL_ASLEEP) == "true",
        )
    )


def wake_if_all_sleep(screening: Screening) -> None:
    """With no endpoint awake, route the sleeping ones on their own levels: a request must
    reach them to wake them, and is answered 503 with Retry-After
    (``answers.waking``) until one serves."""
    if screening.routable and all(r.asleep for r in screening.routable):
        screening.routable = [r._replace(asleep=False) for r in screening.routable]
        screening.cold_start = True


def asleep(screening: Screening) -> int:
    """How many usable endpoints sleep, a cold start's included."""
    if screening.cold_start:
        return len(screening.routable)
    return sum(r.asleep for r in screening.routable)


def unhidden(screening: Screening) -> bool:
    """Whether every endpoint the route may use can sleep: a cold start then has no tier to
    hide behind."""
    return bool(screening.routable) and all(r.scales_to_zero for r in screening.routable)


def _fleet_hop_problem(
    origin: Origin, cluster: str, clusters: Mapping[str, RoutingCluster]
) -> tuple[str, str] | None:
    """Why a fleet-hosted endpoint cannot get a mutually authenticated hop (cause, detail)."""
    if not origin.tls:
        # The cluster gateway serves HTTPS with client validation only.
        return BAD_ORIGIN, "a fleet-hosted endpoint must use https"
    found = clusters.get(cluster)
    if found is None:
        return NO_CLUSTER_CA, f"its InferenceCluster {cluster} not found"
    if not found.status.gateway.ca_certificate:
        return NO_CLUSTER_CA, f"its InferenceCluster {cluster} has not published its CA"
    return None


def check_dialects(screening: Screening) -> list[str]:
    """Keep Anthropic-API endpoints out of a route that OpenAI chat traffic also takes.

    A route serves both dialects (its rule matches the model, whatever the
    path), and Envoy AI Gateway v1.1.0 translates OpenAI chat completions to
    Anthropic only for its AWS and GCP flavours, never to ``Anthropic``
    (internal/endpointspec/endpointspec.go:164-180): a /v1 request that lands
    on such an endpoint fails. Next to OpenAI endpoints they are left out (a
    ModelService of their own serves Anthropic callers); when every endpoint
    speaks Anthropic the route stays, and the names are returned for a warning
    that /v1 requests for this model fail.
    """
    anthropic = [r for r in screening.routable if r.schema == "Anthropic"]
    if not anthropic:
        return []
    if len(anthropic) == len(screening.routable):
        return [r.name for r in anthropic]
    for r in anthropic:
        screening.leave_out(
            r.name,
            DIALECT,
            "it speaks the Anthropic API, which OpenAI-dialect (/v1) requests of this route "
            "cannot reach (Envoy AI Gateway translates none to it); route it from a "
            "ModelService of Anthropic endpoints only",
        )
    screening.routable = [r for r in screening.routable if r.schema != "Anthropic"]
    return []


def wanted_credentials(routable: Sequence[Routable]) -> list[str]:
    """Names of the Secrets the routable endpoints' credentials live in, sorted."""
    return sorted({r.credential.name for r in routable if r.credential is not None})


def check_credentials(
    screening: Screening, secrets: Mapping[str, SecretKeys | None], namespace: str
) -> None:
    """Leave out endpoints whose Secret or key is missing (``secrets[name]`` None = absent).

    Only the presence of the key is read: its value moves with patchesFrom.
    """
    keep = []
    for routable in screening.routable:
        ref = routable.credential
        if ref is not None:
            secret = secrets.get(ref.name)
            where = f"Secret {namespace}/{ref.name}"
            if secret is None:
                screening.leave_out(routable.name, NO_CREDENTIAL, f"{where} does not exist")
                continue
            if ref.key not in secret.keys:
                screening.leave_out(routable.name, NO_CREDENTIAL, f"{where} has no key {ref.key!r}")
                continue
        keep.append(routable)
    screening.routable = keep


def cap_backends(screening: Screening, limit: int = ROUTE_BACKENDS_MAX) -> None:
    """Keep the most preferred ``limit`` endpoints: a rule holds at most that many backends
    (a sleeping one is the least preferred)."""
    ordered = sorted(screening.routable, key=lambda r: (r.asleep, r.priority, r.entry, r.name))
    for routable in ordered[limit:]:
        screening.leave_out(
            routable.name, ROUTE_FULL, f"a route holds at most {limit} backends (priority first)"
        )
    screening.routable = ordered[:limit]


# --- the route's arithmetic ----------------------------------------------------


class Planned(NamedTuple):
    """One backendRef of the route: the endpoint, its weight and its priority level."""

    endpoint: Routable
    weight: int
    level: int


def plan_backends(routable: Sequence[Routable]) -> list[Planned]:
    """Weights within each tier and gap-free levels; sleeping endpoints parked together on
    one last level, after every awake one.

    Ordered by the endpoints' own priority, entry and name, whatever sleeps: an endpoint
    that falls asleep or wakes changes only its level and weight, so its route is updated
    in place, never replaced (``naming.ai_gateway_route_name``). Envoy only reaches the
    parked level once every awake level failed: a retry, or a request while no awake
    endpoint is healthy, which the sleeping engine's cluster gateway answers 503.
    """
    awake = [r for r in routable if not r.asleep]
    levels = renumber(r.priority for r in awake)
    tiers = [(levels[p], [r for r in awake if r.priority == p]) for p in sorted(levels)]
    parked = [r for r in routable if r.asleep]
    if parked:
        tiers.append((len(levels), parked))
    planned: dict[str, Planned] = {}
    for level, tier in tiers:
        ordered = sorted(tier, key=_backend_order)
        groups = [
            [r for r in ordered if r.entry == entry] for entry in sorted({r.entry for r in tier})
        ]
        weights = tier_weights([(group[0].weight, len(group)) for group in groups])
        members = [r for group in groups for r in group]
        planned |= {r.name: Planned(r, w, level) for r, w in zip(members, weights, strict=True)}
    return [planned[r.name] for r in sorted(routable, key=_backend_order)]


def _backend_order(r: Routable) -> tuple[int, int, str]:
    return (r.priority, r.entry, r.name)
