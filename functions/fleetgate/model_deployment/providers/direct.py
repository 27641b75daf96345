"""Direct: the engine as a plain Deployment, behind a Service the route targets."""

from fleetgate.core.models import ServingProvider
from fleetgate.model_deployment.providers import pods
from fleetgate.model_deployment.providers.base import Manifest, RemotePart, Workload


class Direct(pods.CommandEngine):
    name: ServingProvider = "Direct"

    def front(self, workload: Workload) -> tuple[tuple[RemotePart, ...], Manifest]:
        service = RemotePart("service", pods.engine_service(workload))
        port = workload.engine.port
        return (service,), {"group": "", "kind": "Service", "name": workload.name, "port": port}
