"""A ModelRoute composes one gateway's route for one ModelService onto that gateway's cluster.

Everything was resolved by the ModelService that composed it
(model_route_manifest.py), so
this step looks nothing up: it builds the AIGatewayRoute and each backend's
objects from the spec, and reports whether Envoy AI Gateway accepted the
route and Envoy Gateway resolved the HTTPRoute generated from it, for the
ModelService to read back.
"""

from collections.abc import Sequence
from typing import Any

from fleetgate.core.constants import OBJECT_API_VERSION
from fleetgate.core.errors import InputError
from fleetgate.core.governance import (
    ANSWERS_COUNTED,
    answer_reads,
    answers_counted,
    hold_rate_limits,
)
from fleetgate.core.kinds.route import ModelRoute, RouteAccess, RouteBackend
from fleetgate.core.observed import PATCH_PENDING, Observed, explanation, patch_applied
from fleetgate.core.reconcile import Reconcile, Selector
from fleetgate.model_service.ai_gateway import model_route_objects, route_name
from fleetgate.model_service.model_route_manifest import ACCEPTED
from fleetgate.model_service.naming import (
    FAILOVER_ALERTS_KEY,
    RouteKeys,
    Service,
    backend_name,
    endpoint_key,
    is_ai_gateway_route_key,
    is_route_key,
    route_keys,
)
from fleetgate.model_service.origin import OriginError, check_host

# An endpoint's credential: withdrawn only after its AIServiceBackend (_keep_leaving).
CREDENTIAL_ROLES = ("security-policy", "api-key")
# Every Object a ModelRoute composes carries the route's uid. Crossplane stops observing a
# composed resource the moment it deletes it (the XR's resourceRefs become the desired
# ones, internal/controller/apiextensions/composite/composition_functions.go:631-644,
# 1016-1040 at v2.4.0) and first strips only its own labels from it (:997): by this one
# the route still finds an Object being deleted, and the stages of _keep_leaving wait.
ROUTE_LABEL = "fleetgate.dev/model-route-uid"
BEING_DELETED = "objects-being-deleted"


def compose(rec: Reconcile) -> None:
    route = rec.composite(ModelRoute)
    _refuse_addresses(route)
    service = Service(str(route.metadata.namespace), route.service)
    gateway = route.spec.gateway
    if route.spec.withdraw:
        _withdraw(rec, service, gateway.name)
        return
    backends = route.spec.backends
    access = route.spec.access
    routed = [b for b in backends if _on_cluster(rec, b.endpoint)]
    keys = route_keys([b.endpoint for b in routed]) if routed else None
    objects = model_route_objects(
        service,
        gateway,
        backends,
        access,
        route.spec.failover_alert,
        routed=routed,
    )
    leaving = _keep_leaving(rec, service, gateway.name, backends)
    held = None
    if access is not None and keys is not None:
        what = f"the route of {service.model} on InferenceGateway {gateway.name}"
        held = hold_rate_limits(rec, keys.traffic, "spec.access.limits", access.limits, what)
    if held is not None and keys is not None:
        # Its traffic policy kept as composed before; never composed, this
        # route is not composed at all (never without its limits), and the
        # one before, if any, serves on.
        rec.report(ACCEPTED, held.verdict)
        rec.allow_ready(False)
        # The patch counting answers names the kept policy's rules.
        dropped = {keys.traffic, keys.counted} if held.kept else set(keys)
        if held.kept:
            rec.keep(keys.counted)
        objects = {k: v for k, v in objects.items() if k not in dropped}
    _keep_replaced(rec, keys if held is None else None, access is not None, set(objects))
    routes = [key for key in rec.observed_names() if is_ai_gateway_route_key(key)]
    for key, obj in objects.items():
        # Alerts never hold the route back: without the Prometheus Operator's
        # CRD on the cluster the route serves all the same (_report_alerts says so).
        ready = key == FAILOVER_ALERTS_KEY or rec.observed(key).ready
        staged = rec.deleted_after(obj, *_deleted_first(key, routes))
        rec.compose(key, _labelled(rec, staged), ready=ready)
    if routed:
        rec.set_status(route=route_name(service, gateway, routed))
    rec.set_status(backends=len(backends))
    arriving = sorted({b.endpoint for b in backends} - {b.endpoint for b in routed})
    if held is None and (arriving or leaving):
        moving = [f"{e} (arriving)" for e in arriving] + [f"{e} (leaving)" for e in leaving]
        _not_accepted(
            rec,
            "BackendsMoving",
            "the route names a backend only while its Backend and AIServiceBackend are on "
            f"the gateway's cluster; waiting for {', '.join(moving)}",
        )
    elif held is None and keys is not None:
        _report(rec, keys)
    _report_tiers(rec, keys)
    _report_counted(rec, keys, access)
    _report_alerts(rec)


def _on_cluster(rec: Reconcile, endpoint: str) -> bool:
    """Whether the endpoint's Backend and AIServiceBackend are on the gateway's cluster.

    Envoy AI Gateway v1.1.0 panics, and its controller crash-loops, when the
    AIGatewayRoute names more backends than Envoy Gateway translated into the
    route's cluster, as it does while one of them is not on the cluster yet
    (internal/extensionserver/post_translate_modify.go:374-381, envoyproxy/
    ai-gateway#2610): so a backend joins the route only once both are there.
    """
    return all(
        rec.observed(endpoint_key(endpoint, role)).exists_remotely
        for role in ("backend", "ai-service-backend")
    )


def _keep_replaced(
    rec: Reconcile, serving: RouteKeys | None, with_access: bool, composing: set[str]
) -> None:
    """Keep every route composed before, and all named after it, until ``serving`` serves.

    The new route comes whole, beside the old: Envoy Gateway orders HTTPRoute
    rules of equal match by age, oldest first (a stable sort over HTTPRoutes
    sorted by creation: internal/gatewayapi/resource/resource.go:254-263,
    sort.go:110-116 at v1.8.3), so the old one answers until it is deleted.
    It goes once the new route is accepted, Envoy Gateway resolved all of it
    and, with caller access, its caller policies (and the patch counting its
    answers) are attached: deleted sooner, callers would meet the new route
    without them.
    None: nothing composed this call replaces the old routes. ``composing``: the keys
    this call composes.
    """
    policies = (serving.access, serving.traffic, serving.counted) if serving and with_access else ()
    if (
        serving is not None
        and _verdict(rec, serving) is None
        and all(rec.observed(key).ready for key in policies if key in composing)
    ):
        return
    for key in rec.observed_names():
        if is_route_key(key) and (serving is None or key not in serving):
            rec.keep(key)


def _deleted_first(key: str, routes: Sequence[str]) -> Sequence[str]:
    """What must be gone before ``key`` when the whole ModelRoute is deleted (its ModelService
    deleted, say): the stages of ``_keep_leaving``, kept by Kubernetes' garbage collector
    (``Reconcile.deleted_after``) where no function runs to keep them.

    Deleted with the AIGatewayRoute, an AIServiceBackend makes Envoy AI Gateway v1.1.0
    rewrite the route's status while the route's finalizer is being removed; that update
    fails on the stale object, and as the controller ignores updates that leave the
    generation alone (internal/controller/controller.go:285-292), nothing reconciles the
    route again: it, and its Object, stay Deleting for good (seen on the real plane).
    """
    endpoint, _, role = key.rpartition("/")
    if role in ("backend", "ai-service-backend"):
        return routes
    if role in CREDENTIAL_ROLES:
        return [endpoint_key(endpoint, "ai-service-backend")]
    return ()


def _withdraw(rec: Reconcile, service: Service, gateway: str) -> None:
    """The gateway no longer serves the model: its routes go at once, each backend in stages
    (``_keep_leaving``), and ``status.withdrawn`` says when nothing is left on the cluster:
    no Object observed and none being deleted.

    Deleted outright instead, the ModelRoute's Objects would all be deleted
    together by Kubernetes' garbage collector, envoyproxy/ai-gateway#2565's race.
    """
    leaving = _keep_leaving(rec, service, gateway, ())
    rec.set_status(withdrawn=not rec.observed_names() and _being_deleted(rec) == [])
    waiting = f"; waiting for {', '.join(leaving)} to leave its cluster" if leaving else ""
    _not_accepted(rec, "Withdrawn", f"the gateway no longer serves the model{waiting}")


def _keep_leaving(
    rec: Reconcile, service: Service, gateway: str, backends: Sequence[RouteBackend]
) -> list[str]:
    """Withdraw each endpoint the spec no longer names in stages; returns those still going.

    First every route on the cluster stops naming it (the panic above, the
    other way round), then its Backend and AIServiceBackend go, and only once
    the AIServiceBackend is gone its BackendSecurityPolicy and API key.
    Deleted together, the policy's deletion makes Envoy AI Gateway v1.1.0
    rewrite the AIServiceBackend's status while its finalizer is being
    removed; that update fails on a stale cache, the error is dropped and no
    later event reconciles it (internal/controller/controller.go:578-610,
    287-292; envoyproxy/ai-gateway#2565): the AIServiceBackend, and the
    ModelRoute with it, would wait forever.

    A stage waits until the objects of the one before are gone, not only deleted:
    Objects being deleted are no longer observed, and are asked for
    (``_being_deleted``) whenever something is leaving.
    """
    wanted = {b.endpoint for b in backends}
    observed = {key.rpartition("/")[0] for key in rec.observed_names() if "/" in key}
    if not observed - wanted:
        return []
    deleting = _being_deleted(rec)
    remotes = [rec.observed(key).remote for key in rec.observed_names()]
    routes = [
        *(r.to_dict() for r in remotes if r.get("kind") == "AIGatewayRoute"),
        *(m for m in _manifests(deleting or ()) if m.get("kind") == "AIGatewayRoute"),
    ]
    named = {
        ref.get("name")
        for route in routes
        for rule in (route.get("spec") or {}).get("rules") or []
        for ref in rule.get("backendRefs") or []
    }
    backends_deleting = {
        (m.get("metadata") or {}).get("name")
        for m in _manifests(deleting or ())
        if m.get("kind") == "AIServiceBackend"
    }
    leaving = []
    for endpoint in sorted(observed - wanted):
        name = backend_name(service, gateway, endpoint)
        # Not known yet what is being deleted: nothing more goes until it is.
        if deleting is None or name in named:
            rec.keep_all(f"{endpoint}/")
        elif (
            rec.observed(endpoint_key(endpoint, "ai-service-backend")).exists
            or name in backends_deleting
        ):
            rec.keep_all(*(endpoint_key(endpoint, role) for role in CREDENTIAL_ROLES))
        else:
            continue
        leaving.append(endpoint)
    return leaving


def _being_deleted(rec: Reconcile) -> list[Observed] | None:
    """The route's Objects being deleted, which Crossplane no longer observes; None until
    Crossplane has looked them up (``ROUTE_LABEL``)."""
    meta = rec.observed_composite
    uid = meta.get("metadata", "uid")
    if not uid:
        return []
    selector = Selector(
        OBJECT_API_VERSION,
        "Object",
        labels={ROUTE_LABEL: uid},
        namespace=meta.get("metadata", "namespace"),
    )
    found = rec.require_observed(BEING_DELETED, selector)
    if found is None:
        return None
    return [o for o in found if o.get("metadata", "deletionTimestamp")]


def _manifests(objects: Sequence[Observed]) -> list[dict[str, Any]]:
    """What each Object puts on the cluster, as the function composed it."""
    found = (o.get("spec", "forProvider", "manifest") for o in objects)
    return [m for m in found if isinstance(m, dict)]


def _labelled(rec: Reconcile, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` labelled with the route's uid (``ROUTE_LABEL``)."""
    uid = rec.observed_composite.get("metadata", "uid")
    if not uid:
        return obj
    meta = dict(obj.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), ROUTE_LABEL: uid}
    return {**obj, "metadata": meta}


def _refuse_addresses(route: ModelRoute) -> None:
    """The ModelService never plans an IP backend; a hand-made ModelRoute gets no further.

    Envoy AI Gateway silently drops model rewriting, credentials and
    failover for a whole route once one backend is an address.
    """
    for i, backend in enumerate(route.spec.backends):
        try:
            check_host(backend.host)
        except OriginError as err:
            raise InputError(
                f"invalid ModelRoute {route.metadata.name}: spec.backends[{i}].host: {err}"
            ) from None


def _report(rec: Reconcile, keys: RouteKeys) -> None:
    """RouteAccepted: the route as ``_verdict`` judges it."""
    verdict = _verdict(rec, keys)
    if verdict is None:
        message = "Envoy AI Gateway accepted the route, Envoy Gateway resolved it"
        rec.condition(ACCEPTED, "True", "Accepted", message)
        rec.allow_ready(True)
    else:
        _not_accepted(rec, *verdict)


def _verdict(rec: Reconcile, keys: RouteKeys) -> tuple[str, str] | None:
    """Why the route is not accepted yet (reason, message); None once Envoy AI Gateway
    accepted it and Envoy Gateway resolved all of it.

    Envoy AI Gateway v1.1.0 reports a refusal as condition ``NotAccepted``
    (status False, reason ReconciliationFailed), never as ``Accepted=False``
    (internal/controller/controller.go:551-569); both are read. Accepted is
    not enough: the HTTPRoute it generates can still hold a backend Envoy
    Gateway cannot resolve, which turns the rule into weighted clusters with an
    invalid share answering 500, priorities lost.

    Every condition is read only while it speaks of its object's current
    generation (``observed.is_current``): a refusal or an acceptance of an
    older spec says nothing of this one.
    """
    observed = rec.observed(keys.route)
    remote = observed.remote
    refusal = remote.failing("NotAccepted") or remote.failing("Accepted")
    if refusal is not None:
        return "Refused", f"Envoy AI Gateway refused the route: {explanation(refusal)}"
    if not observed.ready:
        return "Pending", "route not accepted yet"
    generated = rec.observed(keys.generated).remote
    name = str(generated.get("metadata", "name") or "generated by Envoy AI Gateway")
    for type_, reason in (("Accepted", "RefusedByEnvoyGateway"), ("ResolvedRefs", "Unresolved")):
        found = generated.entry_conditions("parents", type_)
        failed = next((c for c in found if c.get("status") != "True"), None)
        if failed is not None:
            return reason, f"Envoy Gateway on HTTPRoute {name}: {explanation(failed)}"
        if not found:
            return "Pending", f"Envoy Gateway has not reported {type_} on HTTPRoute {name} yet"
    return None


TIERS = "StrictTiers"


def _report_tiers(rec: Reconcile, keys: RouteKeys | None) -> None:
    """StrictTiers: whether Envoy Gateway took, and applied, the patch that makes tiers strict.

    Without it (a platform's own Envoy Gateway without
    ``extensionApis.enableEnvoyPatchPolicy``) the route still serves, but a
    tier under ~72% healthy already sends a share to the next one.
    """
    if keys is None:  # no route composed yet, so no patch either
        rec.report(TIERS, PATCH_PENDING)
        return
    policy = rec.observed(keys.tiers).remote
    rec.report(
        TIERS, patch_applied(policy, "for strict priority tiers", "priority tiers are strict")
    )


def _report_counted(rec: Reconcile, keys: RouteKeys | None, access: RouteAccess | None) -> None:
    """AnswersCounted: whether every answer, a third party's too, counts against the
    route's token and cost limits (``ai_gateway.answers_counted``)."""
    counted = access is not None and answer_reads(access.limits)
    if keys is None and counted:
        rec.report(ANSWERS_COUNTED, PATCH_PENDING)
        return
    policy = rec.observed(keys.counted).remote if keys is not None and counted else None
    rec.report(ANSWERS_COUNTED, answers_counted(policy, "spec.access.limits"))


def _report_alerts(rec: Reconcile) -> None:
    """A warning while the cluster refuses the failover alerts' PrometheusRule.

    provider-kubernetes reports the API server's refusal on the Object
    (``Synced`` False); the usual one is a cluster without the Prometheus
    Operator's CRDs ("no matches for kind PrometheusRule").
    """
    synced = rec.observed(FAILOVER_ALERTS_KEY).failing("Synced")
    if synced is not None:
        rec.warning(
            "the failover alerts' PrometheusRule is not on the gateway's cluster (does it have "
            f"the Prometheus Operator's CRDs?): {explanation(synced)}",
            "FailoverAlertsNotApplied",
        )


def _not_accepted(rec: Reconcile, reason: str, message: str) -> None:
    rec.condition(ACCEPTED, "False", reason, message)
    rec.allow_ready(False)
