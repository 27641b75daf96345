"""Control-plane Secrets projected onto workload clusters, key by key.

provider-kubernetes resolves ``references[].patchesFrom`` on the control plane
when it applies an Object, so a Secret's value reaches the workload cluster
without ever passing through a function, a desired state or a result. A
function only names the source and the keys (key names are not secret; the
values are never read).
"""

from typing import Any

from fleetgate.core.objects import secret_patch


def secret_key_patch(
    *, secret: str, namespace: str, key: str, to_key: str | None = None
) -> dict[str, Any]:
    """A ``references[]`` entry copying ``data[key]`` of a Secret into ``data[to_key]``.

    Keys are addressed in brackets (``data[tls.crt]``): the dotted form
    ``secret_patch`` writes would read ``tls.crt`` as two nested fields and
    copy nothing, so any key that may hold a dot goes through here.
    """
    target = f"data[{key if to_key is None else to_key}]"
    patch = secret_patch(secret=secret, namespace=namespace, key=key, to_path=target)
    patch["patchesFrom"]["fieldPath"] = f"data[{key}]"
    return patch


def secret_keys(secret: dict[str, Any]) -> list[str]:
    """The keys a Secret holds, sorted; its values are never looked at."""
    keys = set((secret.get("data") or {}).keys()) | set((secret.get("stringData") or {}).keys())
    return sorted(str(k) for k in keys)
