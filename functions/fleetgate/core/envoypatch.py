"""EnvoyPatchPolicy: JSON patches on what Envoy Gateway translates a Gateway into.

Fleetgate patches where no API field reaches: a route cluster's locality
sharing (strict tiers), the caller's address header, how answers are counted
against limits. Envoy Gateway applies the patches to its xDS, written as
protojson with proto field names, before AI Gateway's extension server sees
it (internal/xds/translator/jsonpatch.go at v1.8.3); it refuses a JSONPath
that selects nothing (internal/utils/jsonpatch/patch.go:37-51), and every
patch when ``extensionApis.enableEnvoyPatchPolicy`` is off. Every policy and
patch Fleetgate writes is shaped here.
"""

from collections.abc import Iterable
from typing import Any, Final

from fleetgate.core.constants import GATEWAY_API

KIND: Final = "EnvoyPatchPolicy"
ROUTE_CONFIGURATION: Final = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
CLUSTER: Final = "type.googleapis.com/envoy.config.cluster.v3.Cluster"


def patch(xds_type: str, name: str, **operation: Any) -> dict[str, Any]:
    """One JSON patch on the xDS resource ``name`` of ``xds_type``: ``operation`` is its
    ``op`` and ``path`` or ``jsonPath``, and ``value``."""
    return {"type": xds_type, "name": name, "operation": operation}


def spec(gateway: str, patches: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A policy's spec: ``patches`` on the xDS of the Gateway ``gateway`` (in the
    policy's namespace)."""
    return {
        "targetRef": {"group": GATEWAY_API, "kind": "Gateway", "name": gateway},
        "type": "JSONPatch",
        "jsonPatches": list(patches),
    }
