"""The typed models of each XR kind, a module a kind.

A function imports the modules of the kinds it reads and no others; ``model``
is for code that handles every kind alike (the hardening suite, the checks that
the XRDs and the models agree), and imports a kind's module only when asked.
"""

import importlib
from typing import cast

from fleetgate.core.models import Composite

# The module of each XR kind's top-level model, and the model's name in it.
MODULES = {
    "InferenceCluster": "cluster",
    "InferenceGateway": "gateway",
    "ModelService": "service",
    "ModelEndpoint": "endpoint",
    "ModelDeployment": "deployment",
    "ModelRoute": "route",
}


def model(kind: str) -> type[Composite]:
    """The model an XR of ``kind`` is validated with, e.g. ``InferenceCluster``."""
    module = importlib.import_module(f"fleetgate.core.kinds.{MODULES[kind]}")
    return cast(type[Composite], getattr(module, kind))
