"""Upstream incompatibility: a cluster whose API server refuses a field Fleetgate writes.

A provider's upstream CRD (KAITO, KubeRay, Dynamo, GAIE) on a cluster may be
older than the one Fleetgate renders for. Had it pruned the field silently,
the workload would run without it and the deployment would report healthy
while broken; written strictly, the API server refuses it and
provider-kubernetes reports the refusal on the Object (``Synced`` False, the
server's message). This module recognises that refusal **by its message**,
not its status code, because the code depends on the write path (a create
answers 400, a merge patch 422, a server-side apply of a built-in type 500),
while a refusal no upgrade fixes (a CEL rule, a wrong type, a missing
required field) can share those codes.

The report names the object and, when the server names them
deterministically, the fields; never anything that changes from one
reconcile to the next (server-side apply names one unknown field, chosen
arbitrarily per call), so status does not churn. Nothing needs to be done to
the deployment when the cluster's upstream is upgraded: the next reconcile
finds the Object synced and the report is gone.
"""

import re
from collections.abc import Mapping
from typing import Any, Final

from fleetgate.core.observed import Observed

# The two ways an API server says "I do not know this field".
STRICT_DECODING = "strict decoding error: unknown field"
NOT_IN_SCHEMA = "field not declared in schema"
_UNKNOWN_FIELD = re.compile(r'unknown field "([^"]{1,256})"')
FIELDS_SHOWN = 5
# The built-in API groups of what Fleetgate composes: refused there, it is the
# cluster's Kubernetes that is older, not a CRD.
BUILT_IN_GROUPS = frozenset({"", "apps", "rbac.authorization.k8s.io", "discovery.k8s.io"})


def _synced_false_message(observed: Observed) -> str | None:
    """The message of the Object's Synced=False, if it is about the Object's current spec.

    Crossplane's managed reconciler stamps Synced with the Object's generation
    (crossplane-runtime v2.0.0-rc.1 pkg/conditions/manager.go:63-73): a refusal
    stamped for an older spec is not this one's (``observed.is_current``).
    """
    synced = observed.failing("Synced")
    if synced is None:
        return None
    message = synced.get("message")
    return message if isinstance(message, str) else ""


def refused_fields(observed: Observed) -> tuple[str, ...] | None:
    """The unknown fields the API server refused for this Object (sorted; empty when it
    named none stably), or None when it refused nothing for that reason."""
    message = _synced_false_message(observed)
    if not message:
        return None
    if STRICT_DECODING in message:
        return tuple(sorted(set(_UNKNOWN_FIELD.findall(message))))
    if NOT_IN_SCHEMA in message:
        return ()
    return None


# What ``describe`` reads of a remote object: no need to convert the rest.
IDENTITY: Final = {"apiVersion": None, "kind": None, "metadata": {"name": None}}


def describe(cluster: str, manifest: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    """One stable sentence for one refused object."""
    kind = str(manifest.get("kind", "object"))
    api_version = str(manifest.get("apiVersion", ""))
    name = str((manifest.get("metadata") or {}).get("name", ""))
    shown = ", ".join(fields[:FIELDS_SHOWN]) + (" and more" if len(fields) > FIELDS_SHOWN else "")
    which = f"fields it does not declare ({shown})" if fields else "a field it does not declare"
    group = api_version.rpartition("/")[0]
    api = "Kubernetes" if group in BUILT_IN_GROUPS else f"{group} CRD"
    return (
        f"cluster {cluster}: {kind} {name} ({api_version}) was refused by the API server for "
        f"{which}: the {api} installed there is older than Fleetgate renders for; "
        "upgrade it on that cluster (the ModelDeployment recovers by itself)"
    )
