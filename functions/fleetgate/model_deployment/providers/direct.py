"""Direct: the engine as a plain Deployment, behind a Service the route targets."""

from collections.abc import Mapping

from pydantic import BaseModel

from fleetgate.core.models import ServingProvider
from fleetgate.core.observed import Observed
from fleetgate.model_deployment.providers import pods
from fleetgate.model_deployment.providers.base import (
    RemotePart,
    Rendered,
    Renderer,
    Workload,
)


class Direct(Renderer):
    name: ServingProvider = "Direct"
    overrides: type[BaseModel] = pods.DeploymentOverrides
    starts_engine: bool = False

    def render(self, workload: Workload) -> Rendered:
        return Rendered(
            parts=(
                RemotePart(pods.ENGINE_PART, pods.engine_deployment(workload), pods.SERVING_QUERY),
                RemotePart("service", pods.engine_service(workload)),
            ),
            backend_ref={
                "group": "",
                "kind": "Service",
                "name": workload.name,
                "port": workload.engine.port,
            },
        )

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        return pods.ready_engine_replicas(observed)
