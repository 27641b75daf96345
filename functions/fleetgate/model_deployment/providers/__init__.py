"""Serving providers: one renderer module each, behind ``base.Provider``.

Part 1 renders ``Direct`` and ``LLMD``; KAITO, Dynamo and KubeRay slot in
here as modules of their own.
"""

from fleetgate.core.models import ServingProvider
from fleetgate.model_deployment.providers.base import Provider
from fleetgate.model_deployment.providers.direct import Direct
from fleetgate.model_deployment.providers.llmd import LLMD

PROVIDERS: dict[ServingProvider, Provider] = {p.name: p for p in (Direct(), LLMD())}
