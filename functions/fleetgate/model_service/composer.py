"""compose-model-service serves two kinds: the ModelService and the ModelRoutes it composes.

A ModelService resolves its route for every serving gateway and composes one
ModelRoute per gateway (service.py); a ModelRoute composes that gateway's
objects (model_route.py). One function, because the ModelRoute is the second half
of the ModelService's work, split off only so that neither call outgrows
Crossplane's 4 MiB message limit at the API's maxima.
"""

from fleetgate.core.reconcile import Reconcile, describe_object, wrong_kind
from fleetgate.core.runner import Composer
from fleetgate.model_service import model_route, service

COMPOSERS: dict[str, Composer] = {
    "ModelService": service.compose,
    "ModelRoute": model_route.compose,
}


def compose(rec: Reconcile) -> None:
    # Read straight from the request: a ModelRoute at the maxima is large.
    kind = rec.req.observed.composite.resource.fields.get("kind")
    composer = COMPOSERS.get(kind.string_value) if kind else None
    if composer is None:
        where = describe_object(rec.observed_composite.to_dict(), "composite")
        raise wrong_kind(where, COMPOSERS, kind.string_value if kind else "an XR without a kind")
    composer(rec)
