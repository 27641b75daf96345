"""The provider-kubernetes Object wrapper: how anything lands on a workload cluster."""

from typing import Any

from fleetgate.core import readiness, secrets
from fleetgate.core.constants import OBJECT_API_VERSION

Manifest = dict[str, Any]


def remote_object(
    *,
    manifest: Manifest,
    provider_config: str,
    namespace: str | None = None,
    readiness_query: str | None = None,
    observe_only: bool = False,
    secret_patches: list[dict[str, Any]] | None = None,
    watch: bool | None = False,
) -> Manifest:
    """Wrap ``manifest`` in a namespaced provider-kubernetes Object.

    ``namespace`` is the Object's own namespace on the control plane: a
    cluster-scoped XR must set it (Crossplane does not default it), a
    namespaced XR's Objects inherit the XR's namespace.

    Readiness follows the remote kind (``readiness.for_manifest``: e.g. a
    Gateway is ready once Programmed); ``readiness_query`` overrides it with a
    CEL query over ``object``. Observed-only objects are ready once they exist.

    ``watch`` asks provider-kubernetes to watch the remote object instead of
    polling it (``spec.watch``, honoured only with the provider's
    ``--enable-watches``: provider-kubernetes v1.2.1
    apis/namespaced/object/v1alpha1/types.go:101-108, cmd/provider/main.go:95,
    198-200). Without it a Ready Object is re-read every poll interval (10
    minutes by default, main.go:85), so a gateway's address, a rotated CA or a
    status a function waits for can take that long to reach the control plane.
    ``None`` watches exactly the objects a function reads back: whose readiness
    is derived from the remote object, or which are only observed.

    ``secret_patches`` (``secrets.secret_patch`` entries) make ``manifest``, a
    Secret, a projection of control-plane Secrets: the Object is its filler,
    which holds each patched key empty, only ever updates the remote Secret
    and is ready once every key holds a value there; ``Reconcile.compose``
    adds its holder and the patches (``core/secrets.py`` says why). It is
    always watched: the provider fills it on an update, after which only a
    watch event observes it again before the next poll. An empty list is a
    projection of nothing: the Secret stays, emptied of every key it held.
    """
    if secret_patches is not None:
        keys = secrets.projected_keys(secret_patches)
        manifest = secrets.with_empty_values(manifest, keys)
        readiness_query = secrets.filled_query(keys)
        watch = True
    spec: dict[str, Any] = {
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": provider_config},
        "forProvider": {"manifest": manifest},
    }
    if observe_only:
        spec["managementPolicies"] = ["Observe"]
        spec["readiness"] = dict(readiness.SUCCESSFUL_CREATE)
    elif readiness_query is not None:
        spec["readiness"] = readiness.query(readiness_query)
    else:
        spec["readiness"] = readiness.for_manifest(manifest)
    if secret_patches is not None:
        spec["managementPolicies"] = list(secrets.FILL_POLICIES)
    if secret_patches:
        spec["references"] = secret_patches
    if watch is None:
        watch = observe_only or spec["readiness"] != readiness.SUCCESSFUL_CREATE
    if watch:
        spec["watch"] = True
    # The Object's own name is left to Crossplane (generated from the XR's):
    # what must be stable and collision-free is the remote object's name.
    metadata: dict[str, Any] = {}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": OBJECT_API_VERSION,
        "kind": "Object",
        "metadata": metadata,
        "spec": spec,
    }
