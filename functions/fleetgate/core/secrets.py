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
then ``Update``s the whole Object to add its finalizer (:1272, once), and
before and after ``Create`` (:1297 ``external-create-pending``; :1331, :1371
critical annotations). A reconcile that finds the remote object (and the
finalizer) in place writes only the status subresource. So a projected
Secret is composed in two steps:

1. until the remote Secret exists, the Object carries every key with an empty
   value and no references: the provider creates it holding nothing;
2. once Crossplane observed it on the cluster, the references are added and
   the provider patches the values in on its update path, which saves nothing
   but status.

The empty values stay in desired state: a ``kubernetes.io/tls`` Secret needs
its keys to validate, and Crossplane applies desired state with forced
ownership (crossplane v2.2.0 composition_functions.go:596), so a value a
provider ever wrote into an Object (an earlier release, or the remote Secret
deleted by hand and created again) is blanked by the next apply. The Object is
Ready only once every key holds a value on the cluster, which is what anything
waiting for the Secret needs to know.
"""

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core.observed import dig
from fleetgate.core.structs import lookup

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
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
    """CEL over the remote Secret (bound as ``object``): every one of ``keys`` has a value.

    Secret keys are ``[-._a-zA-Z0-9]+`` (the API server's rule), so they quote
    safely. An unobserved or still empty key reads as not ready.
    """
    listed = ", ".join(f"'{key}'" for key in keys)
    return f"has(object.data) && [{listed}].all(k, k in object.data && object.data[k] != '')"


def withhold_until_created(obj: dict[str, Any], created: Callable[[], bool]) -> None:
    """Drop a composed Object's Secret references until its remote Secret exists (step 1).

    ``created`` is asked only of an Object that has references, so composing
    anything else costs one lookup.
    """
    spec = obj.get("spec")
    if isinstance(spec, dict) and "references" in spec and not created():
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
