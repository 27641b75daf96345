"""A ModelService routes its model name on every fleet gateway that selects it.

It resolves everything here: which gateways select it and can serve it,
which endpoints are usable (ready, a DNS origin, the cluster CA or the
credential there), their weights and priority levels. Then it composes one
ModelRoute per serving gateway carrying that gateway's finished route
(model_route_manifest.py), and reads each one's RouteAccepted and Ready back: RoutingReady is
True only once every gateway that selects the service has accepted its route
and every ModelRoute is Ready (all it composed on the gateway's cluster is).
"""

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import NamedTuple

from fleetgate.core.constants import API_VERSION, SYSTEM_NAMESPACE
from fleetgate.core.errors import InputError, refuse_duplicates
from fleetgate.core.governance import require_groups
from fleetgate.core.kinds.gateway import InferenceGateway
from fleetgate.core.kinds.service import FailoverAlert, ModelService
from fleetgate.core.names import resource_key
from fleetgate.core.observed import explanation
from fleetgate.core.reconcile import Reconcile, Selector
from fleetgate.core.secrets import SecretKeys
from fleetgate.model_service import access
from fleetgate.model_service.model_route_manifest import (
    ACCEPTED,
    KIND,
    carried_over,
    model_route,
    progress,
    with_access,
)
from fleetgate.model_service.naming import Service, model_route_key
from fleetgate.model_service.selection import (
    Gateways,
    PendingGateway,
    Planned,
    RoutingCluster,
    Screening,
    SelectedEndpoint,
    ServingGateway,
    asleep,
    cap_backends,
    check_credentials,
    check_dialects,
    plan_backends,
    screen_endpoints,
    sort_gateways,
    unhidden,
    wake_if_all_sleep,
    wanted_credentials,
)

CONDITION = "RoutingReady"
COLD_START = "ColdStartUnhidden"
# Its reason while a gateway selecting the service may not serve it as configured.
REFUSED = "GatewayWithoutAuth"
GATEWAYS = "gateways"
CLUSTERS = "clusters"


def endpoints_key(index: int) -> str:
    return resource_key("endpoints-", str(index))


def credential_key(secret: str) -> str:
    return resource_key("credential-", secret)


def compose(rec: Reconcile) -> None:
    xr = rec.composite(ModelService)
    service = Service(_namespace(xr), xr.metadata.name)
    rec.set_status(model=service.model)
    _route(rec, xr, service)
    _withdraw_dropped(rec)


def _route(rec: Reconcile, xr: ModelService, service: Service) -> None:
    inputs = _require_inputs(rec, xr, service)
    if inputs is None:
        return
    allowed = _resolve_access(rec, xr, inputs.groups)
    screening = _screen_endpoints(rec, xr, service, inputs, allowed)
    if screening is None:
        return
    gateways = _sort_gateways(rec, xr, inputs, restricted=allowed is not None)
    if not _anything_to_route(rec, screening, gateways, len(inputs.gateways)):
        return
    routes, pending = _compose_routes(
        rec, service, gateways, screening, allowed, alert=xr.spec.failover_alert
    )
    _report(rec, routes, pending, gateways.refused, screening)


class Unresolved(Enum):
    """``spec.access`` names a group Crossplane has not looked up yet on this call."""

    ACCESS = "access"


# Who may call, as every route must say it now: None, anyone a gateway authenticates.
Allowed = access.Access | None | Unresolved


class Inputs(NamedTuple):
    gateways: list[InferenceGateway]
    clusters: Mapping[str, RoutingCluster]
    matched: list[list[SelectedEndpoint]]
    # The Secrets of the groups spec.access names, found by each name (key names only).
    groups: Mapping[str, list[SecretKeys]]


def _require_inputs(rec: Reconcile, xr: ModelService, service: Service) -> Inputs | None:
    """Gateways, clusters and each entry's endpoints; None (and waiting) until all resolve."""
    gateways = rec.require_all(
        GATEWAYS, Selector(API_VERSION, "InferenceGateway"), InferenceGateway
    )
    # Every cluster is listed, but only those of the selecting gateways and of
    # fleet-hosted endpoints are read (see ByName).
    clusters = rec.require_by_name(
        CLUSTERS, Selector(API_VERSION, "InferenceCluster"), RoutingCluster
    )
    matched = [
        rec.require_all(
            endpoints_key(i),
            Selector(
                API_VERSION,
                "ModelEndpoint",
                labels=dict(entry.selector.match_labels),
                namespace=service.namespace,
            ),
            SelectedEndpoint,
        )
        for i, entry in enumerate(xr.spec.endpoints)
    ]
    groups = require_groups(rec, access.groups(xr.spec.access))
    waiting = [] if gateways is not None else ["InferenceGateways"]
    # An endpoint whose own reconcile just failed has its EndpointReady marked Unknown
    # by Crossplane: not "not ready". Routing on it would withdraw a serving endpoint
    # (and with it, when it is the only one, every route) for a function's blip.
    waiting += sorted(
        {
            f"the readiness of ModelEndpoint {e.metadata.namespace}/{e.metadata.name} "
            "(its last reconcile failed)"
            for found in matched
            for e in found or []
            if e.ready is not None and e.ready.undetermined
        }
    )
    waiting += [] if clusters is not None else ["InferenceClusters"]
    entries = [str(i) for i, found in enumerate(matched) if found is None]
    if entries:
        waiting.append(f"the ModelEndpoints of spec.endpoints[{', '.join(entries)}]")
    waiting += [f"Secret {SYSTEM_NAMESPACE}/{g}" for g, found in groups.items() if found is None]
    if gateways is None or clusters is None or waiting:
        resolved = all(found is not None for found in groups.values())
        allowed = (
            _resolve_access(rec, xr, {g: found or [] for g, found in groups.items()})
            if resolved
            else Unresolved.ACCESS
        )
        _wait(rec, waiting, allowed)
        return None
    # Keyed and deduplicated by name below: a name listed twice would make the
    # route depend on the order Crossplane listed them in.
    refuse_duplicates("InferenceGateways", [g.metadata.name for g in gateways])
    for i, found in enumerate(matched):
        refuse_duplicates(
            f"ModelEndpoints of spec.endpoints[{i}]", [e.metadata.name for e in found or []]
        )
    return Inputs(
        gateways,
        clusters,
        [found or [] for found in matched],
        {group: found or [] for group, found in groups.items()},
    )


def _resolve_access(
    rec: Reconcile, xr: ModelService, groups: Mapping[str, Sequence[SecretKeys]]
) -> access.Access | None:
    """What every serving gateway enforces, or None when the service restricts nobody."""
    if xr.spec.access is None:
        rec.condition(
            access.CONDITION,
            "True",
            "Unrestricted",
            "no spec.access: every caller a serving gateway authenticates may call",
        )
        return None
    resolved = access.resolve(xr.spec.access, groups)
    allowed = f"{len(resolved.callers)} callers may call"
    if resolved.limits:
        allowed += f", within {len(resolved.limits)} limits each"
    if resolved.problems:
        # The first problem's reason: the allow-list's before the limits', in order.
        reason = resolved.problems[0].reason
        message = f"{'; '.join(p.message for p in resolved.problems)} ({allowed})"
        rec.condition(access.CONDITION, "False", reason, message)
        rec.warning(message, reason)
    else:
        rec.condition(access.CONDITION, "True", "Resolved", allowed)
    return resolved


def _sort_gateways(
    rec: Reconcile, xr: ModelService, inputs: Inputs, *, restricted: bool
) -> Gateways:
    """Serving, pending or refused (selection.sort_gateways); each refusal also a warning."""
    gateways = sort_gateways(
        inputs.gateways, inputs.clusters, xr.metadata.labels, restricted=restricted
    )
    for gateway in gateways.refused:
        rec.warning(f"not routed on InferenceGateway {gateway.name}: {gateway.why}", REFUSED)
    return gateways


def _screen_endpoints(
    rec: Reconcile, xr: ModelService, service: Service, inputs: Inputs, allowed: Allowed
) -> Screening | None:
    """Sort the selected endpoints; None (and waiting) while a credential is unresolved.

    Credentials are required only for endpoints that passed every other
    check, so no Secret is read that would not be routed to.
    """
    screening = screen_endpoints(xr.spec.endpoints, inputs.matched, inputs.clusters)
    anthropic_only = check_dialects(screening)
    if anthropic_only:
        rec.warning(
            "every endpoint of this service speaks the Anthropic API "
            f"({', '.join(anthropic_only)}): OpenAI-dialect requests (/v1) for it fail, Envoy AI "
            "Gateway translates none to"
            " Anthropic; callers must use the Anthropic endpoint (/anthropic/v1)",
            "AnthropicOnly",
        )
    secrets = {
        name: rec.require_secrets(
            credential_key(name), Selector("v1", "Secret", name=name, namespace=service.namespace)
        )
        for name in wanted_credentials(screening.routable)
    }
    unresolved = [f"Secret {service.namespace}/{n}" for n, got in secrets.items() if got is None]
    if unresolved:
        _wait(rec, unresolved, allowed)
        return None
    check_credentials(
        screening,
        {name: found[0] if found else None for name, found in secrets.items()},
        service.namespace,
    )
    wake_if_all_sleep(screening)
    cap_backends(screening)
    for name, why in screening.left_out.items():
        rec.warning(
            f"ModelEndpoint {service.namespace}/{name} left out of the route: {why}",
            "EndpointLeftOut",
        )
    _report_cold_start(rec, screening)
    sleeping = asleep(screening)
    counts = {"total": screening.total, "ready": len(screening.routable) - sleeping}
    rec.set_status(endpoints=counts | ({"asleep": sleeping} if sleeping else {}))
    return screening


def _report_cold_start(rec: Reconcile, screening: Screening) -> None:
    """ColdStartUnhidden: whether a caller can meet a sleeping model, with no tier to answer."""
    if not unhidden(screening):
        rec.condition(
            COLD_START,
            "False",
            "AlwaysAnswered",
            "an endpoint that never sleeps answers while the others wake",
        )
        return
    message = (
        "every endpoint of this service can be scaled to zero: while all sleep, callers are "
        "answered 503 with Retry-After until their requests have woken one. Add a later tier "
        "that never sleeps (a provider, or a deployment with spec.scaling.minReplicas above "
        "0) for callers never to meet a cold start"
    )
    rec.condition(COLD_START, "True", "EveryTierSleeps", message)
    rec.warning(message, COLD_START)


def _anything_to_route(
    rec: Reconcile,
    screening: Screening,
    gateways: Gateways,
    selecting: int,
) -> bool:
    """False (and why) when there is no backend or no gateway: a route needs both."""
    if not screening.routable:
        _not_routed(rec, "NoReadyEndpoints", _no_endpoints_message(screening))
        return False
    if not gateways.serving and not gateways.pending and gateways.refused:
        _not_routed(rec, REFUSED, _refused_message(gateways.refused))
        return False
    if not gateways.serving and not gateways.pending:
        _not_routed(
            rec,
            "NoGatewaySelectsService",
            f"none of the {selecting} InferenceGateways selects this service",
        )
        return False
    return True


def _compose_routes(
    rec: Reconcile,
    service: Service,
    gateways: Gateways,
    screening: Screening,
    allowed: access.Access | None,
    *,
    alert: FailoverAlert,
) -> tuple[dict[str, str | None], list[PendingGateway]]:
    """Every serving gateway gets a ModelRoute; a pending one keeps its own.

    The plan is the same on every gateway except for fleet-hosted endpoints a
    gateway cannot reach over mutual TLS yet, which are left out there (and
    named); a gateway left with no endpoint is pending.

    Returns, per serving gateway, why its route is not accepted yet (None once it is).
    """
    routes = {}
    pending = list(gateways.pending)
    plans: dict[frozenset[str], list[Planned]] = {}
    for gateway in gateways.serving:
        unreachable = gateway.unreachable(screening.routable)
        for r in unreachable:
            rec.warning(
                f"ModelEndpoint {service.namespace}/{r.name} left out of the route on "
                f"InferenceGateway {gateway.name}: it does not reach InferenceCluster "
                f"{r.cluster} over mutual TLS yet (its copy of the cluster's CA or its client "
                "certificate is not on its cluster)",
                "EndpointLeftOut",
            )
        left_out = frozenset(r.name for r in unreachable)
        usable = [r for r in screening.routable if r.name not in left_out]
        if not usable:
            why = "none of the usable endpoints is reachable from it yet (mutual TLS)"
            pending.append(PendingGateway(gateway.name, why))
            continue
        if left_out not in plans:
            plans[left_out] = plan_backends(usable)
        key = model_route_key(gateway.name)
        routes[gateway.name] = _route_progress(rec, key)
        route = model_route(service, gateway, plans[left_out], allowed, alert)
        rec.compose(key, route, ready=routes[gateway.name] is None)
    for waiting in pending:
        rec.warning(
            f"InferenceGateway {waiting.name} selects this service but cannot serve it yet: "
            f"{waiting.why}",
            "GatewayPending",
        )
        _carry_over(rec, model_route_key(waiting.name), allowed)
    rec.set_status(gateways=[_gateway_status(g) for g in gateways.serving if g.name in routes])
    return routes, pending


def _withdraw_dropped(rec: Reconcile) -> None:
    """A ModelRoute no longer composed is withdrawn, and deleted once its status says
    nothing of it is left on its gateway's cluster.

    Deleted at once, its Objects would all go together (Kubernetes' garbage
    collector deletes an XR's composed resources at once), and Envoy AI Gateway
    v1.1.0 can then leave an AIServiceBackend Terminating for good
    (envoyproxy/ai-gateway#2565; ``model_route._keep_leaving``). Withdrawn, the
    route stops serving at once all the same. Marked ready: a route on its way
    out holds nothing up.
    """
    for name in rec.observed_names():
        observed = rec.observed(name)
        if rec.composes(name) or observed.get("kind") != KIND:
            continue
        if observed.get("spec", "withdraw") is True and observed.get("status", "withdrawn"):
            continue
        route = carried_over(observed.to_dict())
        rec.compose(name, {**route, "spec": {**route["spec"], "withdraw": True}}, ready=True)


def _namespace(xr: ModelService) -> str:
    if not xr.metadata.namespace:
        raise InputError(f"invalid ModelService {xr.metadata.name}: metadata.namespace: required")
    return xr.metadata.namespace


def _wait(rec: Reconcile, waiting: Sequence[str], allowed: Allowed) -> None:
    """An input is not resolved yet: change nothing but who may call, say what is awaited."""
    for name in sorted(rec.req.observed.resources):
        _carry_over(rec, name, allowed)
    # Status the function wrote before stays until it can be recomputed.
    previous = rec.observed_composite.get("status")
    previous = previous if isinstance(previous, dict) else {}
    rec.set_status(**{k: previous[k] for k in ("gateways", "endpoints") if k in previous})
    rec.condition(
        CONDITION,
        "False",
        "WaitingForResources",
        f"waiting for Crossplane to resolve {', '.join(waiting)}",
    )
    rec.allow_ready(False)


def _carry_over(rec: Reconcile, name: str, allowed: Allowed) -> None:
    """Keep a composed resource as it is; a ModelRoute without what Crossplane wrote into
    it, and with the access the service has now unless that is not resolved yet."""
    observed = rec.observed(name)
    if observed.get("kind") != KIND:
        rec.keep(name)
        return
    route = carried_over(observed.to_dict())
    if not isinstance(allowed, Unresolved):
        route = with_access(route, allowed)
    rec.compose(name, route, ready=_route_progress(rec, name) is None)


def _route_progress(rec: Reconcile, key: str) -> str | None:
    """Why a composed ModelRoute is not accepted and Ready yet (None once it is both).

    Ready is Crossplane's, stamped with the ModelRoute's generation
    (v2.2.0 internal/controller/apiextensions/composite/reconciler.go:498,
    839-853) in the same status write as RouteAccepted, which carries no stamp
    (composition_functions.go:403-425): only a Ready of the current spec
    vouches for both. Accepted alone is not enough: a ModelRoute whose
    Backends are not accepted is not Ready, and neither is this service.
    At the API's maxima each ModelRoute's spec holds 128 backends; the
    ModelService reads 16 of them for two conditions each.
    """
    observed = rec.observed(key)
    if not observed.exists:
        return "ModelRoute not created yet"
    ready = observed.condition("Ready")  # None also when stamped for an older spec
    if ready is None:
        return "ModelRoute not reconciled yet"
    why = progress(observed.condition(ACCEPTED))
    if why is not None or ready.get("status") == "True":
        return why
    return f"ModelRoute not Ready: {explanation(ready) or 'not yet'}"


def _no_endpoints_message(screening: Screening) -> str:
    if screening.total == 0:
        return "no ModelEndpoint matches any of spec.endpoints[]"
    causes = ", ".join(f"{n} {cause}" for cause, n in screening.causes.items())
    return f"none of the {screening.total} selected ModelEndpoints can be routed ({causes})"


def _not_routed(rec: Reconcile, reason: str, message: str) -> None:
    rec.set_status(gateways=[])
    rec.condition(CONDITION, "False", reason, message)
    rec.warning(f"not routed: {message}", reason)
    rec.allow_ready(False)


def _gateway_status(gateway: ServingGateway) -> dict[str, str]:
    status = {"name": gateway.name}
    if gateway.open_ai:
        status["openAI"] = gateway.open_ai
    return status


def _refused_message(refused: Sequence[PendingGateway]) -> str:
    return "; ".join(f"not routed on {g.name}: {g.why}" for g in refused)


def _report(
    rec: Reconcile,
    routes: dict[str, str | None],
    pending: Sequence[PendingGateway],
    refused: Sequence[PendingGateway],
    screening: Screening,
) -> None:
    waiting = [f"{g.name} ({g.why})" for g in pending]
    waiting += [f"{name} ({why})" for name, why in routes.items() if why]
    routed = f"{len(screening.routable)} of {screening.total} endpoints usable"
    if refused:
        # A choice of the platform's, not a step still to come: named first.
        parts = [_refused_message(refused)]
        parts += [f"pending on {'; '.join(waiting)}"] if waiting else []
        rec.condition(CONDITION, "False", REFUSED, f"{'; '.join(parts)}; {routed}")
        rec.allow_ready(False)
        return
    if not waiting:
        names = ", ".join(routes)
        rec.condition(CONDITION, "True", "RoutesAccepted", f"accepted on {names}; {routed}")
        rec.allow_ready(True)
        # An endpoint not usable yet joins once its ModelEndpoint says so, a
        # required resource seen only on a call: ask again soon (core.pacing).
        rec.set_waiting(len(screening.routable) < screening.total)
        return
    reason = "WaitingForGateways" if pending else "WaitingForRoutes"
    rec.condition(CONDITION, "False", reason, f"pending on {'; '.join(waiting)}; {routed}")
    rec.allow_ready(False)
