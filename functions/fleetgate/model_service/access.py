"""Who may call a ModelService, and how much: its ``spec.access`` resolved.

A caller's identity is the name of its key in a caller-key Secret: a gateway's
API-key authentication stamps it on the request as ``x-fleetgate-caller``,
and each route's policies allow and count only the identities resolved here.
A group is a caller-key Secret in the system namespace, read as its key names
only (``SecretKeys``), never a value. Anything that cannot be resolved allows
nobody more: a missing group adds no caller, it never opens the model.
"""

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from fleetgate.core.governance import limit_groups, resolve_callers, resolve_limits
from fleetgate.core.kinds.governance import ResolvedLimit
from fleetgate.core.kinds.service import ServiceAccess
from fleetgate.core.secrets import SecretKeys

CONDITION = "AccessResolved"
FIELD = "spec.access"


def groups(access: ServiceAccess | None) -> list[str]:
    """Every group Secret the access names: its own and its limits'."""
    if access is None:
        return []
    return sorted({*access.groups, *limit_groups(access.limits)})


class Access(NamedTuple):
    """What every gateway serving the service enforces, and what could not be read."""

    callers: list[str]
    limits: list[ResolvedLimit]
    # Why some of spec.access could not be resolved, each naming its field.
    problems: list[str]


def resolve(access: ServiceAccess, found: Mapping[str, Sequence[SecretKeys]]) -> Access:
    """The allowed callers (those named and every key of each group) and the limits.

    ``found`` holds, per group name, the Secrets Crossplane found by that name
    (none when it does not exist).
    """
    callers = resolve_callers(FIELD, access.callers, access.groups, found)
    limits, missing = resolve_limits(f"{FIELD}.limits", access.limits, found)
    return Access(callers.callers, limits, [*callers.problems, *missing])
