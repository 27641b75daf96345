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

from fleetgate.core.errors import InputError
from fleetgate.core.governance import hold_rate_limits
from fleetgate.core.kinds.route import ModelRoute, RouteBackend
from fleetgate.core.observed import explanation
from fleetgate.core.reconcile import Reconcile
from fleetgate.model_service.ai_gateway import model_route_objects
from fleetgate.model_service.model_route_manifest import ACCEPTED
from fleetgate.model_service.naming import (
    AI_GATEWAY_ROUTE_KEY,
    CALLER_TRAFFIC_KEY,
    FAILOVER_ALERTS_KEY,
    GENERATED_ROUTE_KEY,
    TIERS_KEY,
    Service,
    ai_gateway_route_name,
    backend_name,
    endpoint_key,
)
from fleetgate.model_service.origin import OriginError, check_host


def compose(rec: Reconcile) -> None:
    route = rec.composite(ModelRoute)
    _refuse_addresses(route)
    service = Service(str(route.metadata.namespace), route.service)
    backends = route.spec.backends
    routed = [b for b in backends if _on_cluster(rec, b.endpoint)]
    objects = model_route_objects(
        service,
        route.spec.gateway,
        backends,
        route.spec.access,
        route.spec.failover_alert,
        routed=routed,
    )
    leaving = _keep_leaving(rec, service, route.spec.gateway.name, backends)
    if not routed:  # nothing to name yet: the route as it was, if it was
        del objects[AI_GATEWAY_ROUTE_KEY]
        rec.keep(AI_GATEWAY_ROUTE_KEY)
    access = route.spec.access
    held = None
    if access is not None:
        what = f"the route of {service.model} on InferenceGateway {route.spec.gateway.name}"
        held = hold_rate_limits(rec, CALLER_TRAFFIC_KEY, "spec.access.limits", access.limits, what)
    if held is not None:
        # Kept as composed before, or, never composed, the route is not served
        # at all: never without its limits.
        del objects[CALLER_TRAFFIC_KEY]
        rec.report(ACCEPTED, held.verdict)
        rec.allow_ready(False)
        if not held.kept:
            return
    for key, obj in objects.items():
        # Alerts never hold the route back: without the Prometheus Operator's
        # CRD on the cluster the route serves all the same (_report_alerts says so).
        rec.compose(key, obj, ready=key == FAILOVER_ALERTS_KEY or rec.observed(key).ready)
    rec.set_status(
        route=ai_gateway_route_name(service, route.spec.gateway.name),
        backends=len(backends),
    )
    arriving = sorted({b.endpoint for b in backends} - {b.endpoint for b in routed})
    if held is None and (arriving or leaving):
        moving = [f"{e} (arriving)" for e in arriving] + [f"{e} (leaving)" for e in leaving]
        _not_accepted(
            rec,
            "BackendsMoving",
            "the route names a backend only while its Backend and AIServiceBackend are on "
            f"the gateway's cluster; waiting for {', '.join(moving)}",
        )
    elif held is None:
        _report(rec)
    _report_tiers(rec)
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


def _keep_leaving(
    rec: Reconcile, service: Service, gateway: str, backends: Sequence[RouteBackend]
) -> list[str]:
    """Keep the objects of each endpoint the route on the cluster still names but the
    spec no longer does, until the route stops naming it (the panic above, the other
    way round). Returns those endpoints."""
    named = {
        ref.get("name")
        for rule in rec.observed(AI_GATEWAY_ROUTE_KEY).remote.get("spec", "rules") or []
        for ref in rule.get("backendRefs") or []
    }
    wanted = {b.endpoint for b in backends}
    observed = {key.rpartition("/")[0] for key in rec.observed_names() if "/" in key}
    leaving = sorted(e for e in observed - wanted if backend_name(service, gateway, e) in named)
    for endpoint in leaving:
        rec.keep_all(f"{endpoint}/")
    return leaving


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


def _report(rec: Reconcile) -> None:
    """RouteAccepted: Envoy AI Gateway accepted the route and Envoy Gateway resolved all of it.

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
    observed = rec.observed(AI_GATEWAY_ROUTE_KEY)
    remote = observed.remote
    refusal = remote.failing("NotAccepted") or remote.failing("Accepted")
    if refusal is not None:
        why = explanation(refusal)
        _not_accepted(rec, "Refused", f"Envoy AI Gateway refused the route: {why}")
        return
    if not observed.ready:
        _not_accepted(rec, "Pending", "route not accepted yet")
        return
    generated = rec.observed(GENERATED_ROUTE_KEY).remote
    name = str(generated.get("metadata", "name") or "generated by Envoy AI Gateway")
    for type_, reason in (("Accepted", "RefusedByEnvoyGateway"), ("ResolvedRefs", "Unresolved")):
        found = generated.entry_conditions("parents", type_)
        failed = next((c for c in found if c.get("status") != "True"), None)
        if failed is not None:
            why = explanation(failed)
            _not_accepted(rec, reason, f"Envoy Gateway on HTTPRoute {name}: {why}")
            return
        if not found:
            _not_accepted(
                rec, "Pending", f"Envoy Gateway has not reported {type_} on HTTPRoute {name} yet"
            )
            return
    rec.condition(
        ACCEPTED,
        "True",
        "Accepted",
        "Envoy AI Gateway accepted the route, Envoy Gateway resolved it",
    )
    rec.allow_ready(True)


TIERS = "StrictTiers"


def _report_tiers(rec: Reconcile) -> None:
    """StrictTiers: whether Envoy Gateway took, and applied, the patch that makes tiers strict.

    Without it (a platform's own Envoy Gateway without
    ``extensionApis.enableEnvoyPatchPolicy``) the route still serves, but a
    tier under ~72% healthy already sends a share to the next one.

    Accepted alone is not enough: a patch whose target cluster is missing from
    the xDS (Envoy Gateway renames it ``.../rule/0/backend/N`` as soon as one of
    the rule's backends is invalid) stays Accepted and reads ``Programmed=False``
    (``ResourceNotFound``), as does a patch the translator could not apply
    (``Invalid``) (Envoy Gateway v1.8.3 internal/xds/translator/jsonpatch.go:99-106,
    157-169; internal/gatewayapi/status/envoypatchpolicy.go:18-51).
    """
    observed = rec.observed(TIERS_KEY).remote
    accepted = observed.entry_conditions("ancestors", "Accepted")
    programmed = observed.entry_conditions("ancestors", "Programmed")
    refused = next((c for c in accepted if c.get("status") != "True"), None)
    unapplied = next((c for c in programmed if c.get("status") != "True"), None)
    if refused is not None:
        _tiers_not_strict(rec, refused, "did not accept")
    elif unapplied is not None:
        _tiers_not_strict(rec, unapplied, "accepted but did not apply")
    elif accepted and programmed:
        rec.condition(TIERS, "True", "Programmed", "priority tiers are strict")
    else:
        rec.condition(TIERS, "False", "Pending", "Envoy Gateway has not reported on the patch yet")


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


def _tiers_not_strict(rec: Reconcile, found: dict[str, Any], verdict: str) -> None:
    why = explanation(found)
    message = f"Envoy Gateway {verdict} EnvoyPatchPolicy for strict priority tiers: {why}"
    rec.condition(TIERS, "False", str(found.get("reason") or "NotApplied"), message)
    rec.warning(message, "TiersNotStrict")


def _not_accepted(rec: Reconcile, reason: str, message: str) -> None:
    rec.condition(ACCEPTED, "False", reason, message)
    rec.allow_ready(False)
