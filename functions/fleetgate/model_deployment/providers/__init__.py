"""Serving providers: one renderer module each, behind ``base.Provider``.

What a Composition's provider catalog may offer is bounded by what these
render (``Provider.capability``).
"""

from fleetgate.core.models import ServingProvider
from fleetgate.model_deployment.providers.base import Provider
from fleetgate.model_deployment.providers.direct import Direct
from fleetgate.model_deployment.providers.dynamo import Dynamo
from fleetgate.model_deployment.providers.kaito import KAITO
from fleetgate.model_deployment.providers.kuberay import KubeRay
from fleetgate.model_deployment.providers.llmd import LLMD

PROVIDERS: dict[ServingProvider, Provider] = {
    p.name: p for p in (Direct(), LLMD(), KAITO(), Dynamo(), KubeRay())
}
