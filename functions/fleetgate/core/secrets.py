"""Control-plane Secrets on workload clusters: projected key by key, never read.

provider-kubernetes resolves ``references[].patchesFrom`` on the control plane
when it applies an Object, so a Secret's value reaches the workload cluster
without ever passing through a function, a desired state or a result. A
function only names the source and the keys (key names are not secret; the
values are never read), and scrubs any value provider-kubernetes wrote back
into an Object it observed before carrying that Object over.
"""

from dataclasses import dataclass
from typing import Any

from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core.observed import dig
from fleetgate.core.structs import lookup

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_VALUE_FIELDS = ("data", "stringData")


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


@dataclass(frozen=True)
class SecretKeys:
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
    """Remove Secret values from an Object (or a Secret) in place; True if it carried a Secret.

    provider-kubernetes writes the values it patched in from ``references``
    back into the Object's manifest and last-applied annotation
    (crossplane-contrib/provider-kubernetes#223): carried over verbatim they
    would land in the desired state.
    """
    manifest = dig(obj, "spec", "forProvider", "manifest")
    target = manifest if isinstance(manifest, dict) else obj
    if target.get("kind") != "Secret":
        return False
    for key in _VALUE_FIELDS:
        target.pop(key, None)
    for annotations in (
        dig(obj, "metadata", "annotations"),
        dig(target, "metadata", "annotations"),
    ):
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
    return True
