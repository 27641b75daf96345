"""A ModelRoute composes one gateway's route for one ModelService onto that gateway's cluster.

Everything was resolved by the ModelService that composed it (plan.py), so
this step looks nothing up: it builds the AIGatewayRoute and each backend's
objects from the spec, and reports whether Envoy AI Gateway accepted the
route, for the ModelService to read back.
"""

from fleetgate.core.errors import InputError
from fleetgate.core.function import Reconcile
from fleetgate.core.models import ModelRoute
from fleetgate.core.observed import dig, has_condition, is_ready, remote_manifest
from fleetgate.model_service.builders import ROUTE_KEY, Service, route_name, route_objects
from fleetgate.model_service.origin import OriginError, check_host
from fleetgate.model_service.plan import ACCEPTED


def compose(rec: Reconcile) -> None:
    route = rec.composite(ModelRoute)
    _refuse_addresses(route)
    service = Service(str(route.metadata.namespace), route.service)
    for key, obj in route_objects(service, route.spec.gateway, route.spec.backends).items():
        rec.compose(key, obj, ready=observed_ready(rec, key))
    rec.set_status(
        route=route_name(service, route.spec.gateway.name), backends=len(route.spec.backends)
    )
    _report(rec)


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


def observed_ready(rec: Reconcile, name: str) -> bool:
    """Whether the observed resource is Ready, read straight from the request.

    A route at the API's limits has hundreds of Objects; converting each
    whole observed Object to a dict just to read one condition was most of
    the function's time.
    """
    if name not in rec.req.observed.resources:
        return False
    status = rec.req.observed.resources[name].resource.fields.get("status")
    conditions = status.struct_value.fields.get("conditions") if status else None
    for value in conditions.list_value.values if conditions else ():
        fields = value.struct_value.fields
        if "type" in fields and fields["type"].string_value == "Ready":
            return "status" in fields and fields["status"].string_value == "True"
    return False


def _report(rec: Reconcile) -> None:
    """RouteAccepted, from the AIGatewayRoute's own Accepted condition."""
    observed = rec.observed(ROUTE_KEY)
    if is_ready(observed):
        rec.condition(ACCEPTED, "True", "Accepted", "Envoy AI Gateway accepted the route")
        rec.set_ready(True)
        return
    remote = remote_manifest(observed)
    if has_condition(remote, "Accepted", "False"):
        conditions = dig(remote, "status", "conditions")
        refusal = next(c for c in conditions if isinstance(c, dict) and c.get("type") == "Accepted")
        why = refusal.get("message") or refusal.get("reason")
        rec.condition(ACCEPTED, "False", "Refused", f"route not accepted: {why}")
    else:
        rec.condition(ACCEPTED, "False", "Pending", "route not accepted yet")
    rec.set_ready(False)
