"""Control-plane Secrets on workload clusters: projected key by key, never read.

provider-kubernetes resolves ``references[].patchesFrom`` on the control plane
when it applies an Object, so a Secret's value reaches the workload cluster
without ever being written into a desired state or a result. Crossplane
does send a required Secret whole, values included, in a function's request;
a function only names the source and the keys (key names are not secret; the
values are never read).

The provider patches the values into its in-memory copy of the Object, and on
the path that *creates* the remote object the managed reconciler saves that
copy whole (crossplane-contrib/provider-kubernetes#223). provider-kubernetes
v1.2.1 internal/controller/namespaced/object/object.go:378 and 713 patch it
(the same in v1.4.1, :390 and 805, whose comment at :541-543 still defers
#223); crossplane-runtime v2.0.0-rc.1 pkg/reconciler/managed/reconciler.go
then ``Update``s the whole Object to add its finalizer (:1272, once:
object.go:820-821 returns early once it is there), and before and after
``Create`` (:1297 ``external-create-pending``; :1331, :1371 critical
annotations). The create path is taken whenever the remote object is missing,
so a remote Secret lost after it was filled (deleted by hand, its namespace
deleted, the cluster behind a ProviderConfig replaced) would put the values
into the Object. A projected Secret is therefore composed as two Objects, and
no Object that holds references ever takes the create path:

1. a *holder*, policies ``Observe, Create, Delete`` and no references: it
   creates the Secret with every key empty, creates it again (empty) if it is
   lost, and deletes it when the copy is no longer composed;
2. the *filler*, policies ``Observe, Update`` (both sets are among those
   crossplane-runtime accepts, policies.go:55-110): without ``Create`` a
   missing remote object goes down the update path (reconciler.go:1287, 1454),
   whose server-side apply creates it if need be (object.go:449-466,
   syncer.go:131-141) and which saves nothing but status. Its references are
   added only once it carries the provider's finalizer, so the one whole-Object
   update that adds it finds no value to save; without ``Delete`` the
   provider leaves the remote Secret to the holder (reconciler.go:972).

The empty values stay in desired state: a ``kubernetes.io/tls`` Secret needs
its keys to validate, and Crossplane applies desired state with forced
ownership (crossplane v2.2.0 composition_functions.go:596), so a value a
provider ever wrote into an Object (an earlier release composed one Object
that could take the create path) is blanked by the next apply. The filler is
Ready only once every key holds a value on the cluster, which is what anything
waiting for the Secret needs to know.
"""

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core import readiness
from fleetgate.core.observed import dig
from fleetgate.core.structs import lookup

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# What provider-kubernetes puts on an Object it manages (v1.2.1 internal/
# controller/namespaced/object/object.go:105).
PROVIDER_FINALIZER = "finalizer.managedresource.crossplane.io"
FILL_POLICIES = ["Observe", "Update"]
HOLDER_POLICIES = ["Observe", "Create", "Delete"]
HOLDER_SUFFIX = "-holder"
# Every stored object has a name: true of the remote Secret once it exists.
EXISTS_QUERY = "has(object.metadata.name)"
_VALUE_FIELDS = ("data", "stringData")
_TO_DATA_KEY = re.compile(r"data\[([-._a-zA-Z0-9]+)\]")


def secret_patch(
    *, secret: str, namespace: str, key: str, to_key: str | None = None
) -> dict[str, Any]:
    """A ``references[]`` entry copying ``data[key]`` of a Secret into ``data[to_key]``.

    Keys are addressed in brackets (``data[tls.crt]``): the dotted form would
    read ``tls.crt`` as two nested fields and copy nothing.
    """
    return {
        "patchesFrom": {
            "apiVersion": "v1",
            "kind": "Secret",
            "name": secret,
            "namespace": namespace,
            "fieldPath": f"data[{key}]",
        },
        "toFieldPath": f"data[{key if to_key is None else to_key}]",
    }


def projected_keys(patches: Sequence[dict[str, Any]]) -> list[str]:
    """The keys of the remote Secret that ``patches`` (from ``secret_patch``) fill, sorted."""
    keys = set()
    for patch in patches:
        found = _TO_DATA_KEY.fullmatch(str(patch.get("toFieldPath", "")))
        if found is None:
            raise ValueError(f"not a Secret key patch: {patch!r}")
        keys.add(found.group(1))
    return sorted(keys)


def with_empty_values(secret: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """``secret`` holding every one of ``keys``, each empty (step 1 of the module docstring)."""
    return {**secret, "data": dict.fromkeys(keys, "")}


def filled_query(keys: Sequence[str]) -> str:
    """CEL over the remote Secret (bound as ``object``): it holds exactly ``keys``, each valued.

    Secret keys are ``[-._a-zA-Z0-9]+`` (the API server's rule), so they quote
    safely. An unobserved or still empty key reads as not ready, and so does a
    key no longer projected (a revoked caller's) until the apply removing it
    has run: Ready means the copy is what was asked for, withdrawals included.
    With no key at all, Ready means the copy exists and is empty.
    """
    if not keys:
        return f"{EXISTS_QUERY} && (!has(object.data) || size(object.data) == 0)"
    listed = ", ".join(f"'{key}'" for key in keys)
    return (
        f"has(object.data) && size(object.data) == {len(keys)} && "
        f"[{listed}].all(k, k in object.data && object.data[k] != '')"
    )


def is_filler(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` is the filling Object of a projected Secret (step 2 above)."""
    spec = obj.get("spec")
    return isinstance(spec, dict) and spec.get("managementPolicies") == FILL_POLICIES


def is_holder(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` is the Object holding a projected Secret (step 1 above): what its
    remote Secret holds is the filler's."""
    spec = obj.get("spec")
    return isinstance(spec, dict) and spec.get("managementPolicies") == HOLDER_POLICIES


def holder_name(filler: str) -> str:
    """The composition resource name of the holder of the Secret ``filler`` projects."""
    return f"{filler}{HOLDER_SUFFIX}"


def holder(filler: dict[str, Any]) -> dict[str, Any]:
    """The Object that creates and deletes the Secret ``filler`` fills (step 1 above).

    It is Ready once the Secret exists, by a query rather than the default
    ``SuccessfulCreate``: provider-kubernetes reports that one Ready only
    while the remote object is up to date with the Object (v1.2.1
    internal/controller/namespaced/object/object.go:736-767), which a holder,
    never updating, stops being as soon as its filler writes the values.
    Whether the Secret is filled is the filler's readiness.
    """
    spec = filler["spec"]
    manifest = spec["forProvider"]["manifest"]
    keys = sorted((manifest.get("data") or {}).keys())
    held: dict[str, Any] = {
        "providerConfigRef": dict(spec["providerConfigRef"]),
        "forProvider": {"manifest": with_empty_values(manifest, keys)},
        "managementPolicies": list(HOLDER_POLICIES),
        "readiness": readiness.query(EXISTS_QUERY),
        "watch": True,
    }
    metadata = filler.get("metadata")
    kept = dict(metadata) if isinstance(metadata, dict) else {}
    return {**filler, "metadata": kept, "spec": held}


def withhold_until_finalized(obj: dict[str, Any], finalized: Callable[[], bool]) -> None:
    """Drop a filler's Secret references until it carries the provider's finalizer.

    ``finalized`` is asked only of an Object that has references, so composing
    anything else costs one lookup.
    """
    spec = obj.get("spec")
    if isinstance(spec, dict) and "references" in spec and not finalized():
        del spec["references"]


class SecretKeys(NamedTuple):
    """A Secret as a function sees it: its name and the names of its keys.

    Built straight from the request's Struct, so no value is ever converted,
    copied or held by a function: there is none to leak, and a Secret of many
    large keys costs no more to read than one of a few.
    """

    name: str
    keys: frozenset[str]

    @classmethod
    def of(cls, struct: struct_pb2.Struct) -> "SecretKeys":
        name = lookup(struct, "metadata", "name")
        keys: set[str] = set()
        for field in _VALUE_FIELDS:
            held = lookup(struct, field)
            if held is not None:
                # A Value of another kind reads as an empty Struct. The map
                # itself, not .keys(), which iterates in pure Python.
                keys.update(held.struct_value.fields)
        text = name.string_value if name is not None else ""
        return cls(text, frozenset(keys))


def scrub_secret(obj: dict[str, Any]) -> bool:
    """Blank every Secret value in an Object (or a Secret) in place; True if it carried a Secret.

    What is carried over must be what the function composed: the keys with
    empty values (see the module docstring), never a value provider-kubernetes
    wrote into an Object or its last-applied annotation (#223).
    """
    manifest = dig(obj, "spec", "forProvider", "manifest")
    target = manifest if isinstance(manifest, dict) else obj
    if target.get("kind") != "Secret":
        return False
    keys: set[str] = set()
    for key in _VALUE_FIELDS:
        held = target.pop(key, None)
        if isinstance(held, dict):
            keys.update(held)
    if keys:
        target["data"] = dict.fromkeys(sorted(keys), "")
    for annotations in (
        dig(obj, "metadata", "annotations"),
        dig(target, "metadata", "annotations"),
    ):
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
    return True
