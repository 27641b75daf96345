"""Composing resources in dependency order without ever tearing one down again.

A resource that needs another (an Issuer before the Certificates it signs, a
Helm release before the objects of its CRDs) is *first* composed only once its
prerequisites are there. From then on it is composed on every pass whatever
they do: a prerequisite that flickers to not-ready must not delete what was
built on it.
"""

from collections.abc import Iterable
from typing import Any

from fleetgate.core.reconcile import Reconcile


def awaited(rec: Reconcile, *, ready: Iterable[str] = (), exist: Iterable[str] = ()) -> list[str]:
    """The prerequisites not met yet: ``ready`` must be Ready, ``exist`` must exist remotely.

    "Exist" is for an Object whose own readiness depends on what waits for it
    (a policy is accepted only once its target exists): that it was created on
    the cluster is enough.
    """
    missing = [name for name in ready if not rec.observed(name).ready]
    missing += [name for name in exist if not rec.observed(name).exists_remotely]
    return missing


def compose_after(
    rec: Reconcile,
    name: str,
    manifest: dict[str, Any],
    *,
    ready: Iterable[str] = (),
    exist: Iterable[str] = (),
) -> list[str]:
    """Compose ``name`` once its prerequisites are met, and on every pass after that.

    Returns the prerequisites still awaited: empty when ``name`` was composed.
    The desired resource is marked ready when its observed counterpart is.
    """
    observed = rec.observed(name)
    if not observed.exists:
        missing = awaited(rec, ready=ready, exist=exist)
        if missing:
            return missing
    rec.compose(name, manifest, ready=observed.ready)
    return []
