"""Who may call a ModelService: its ``spec.access`` resolved to caller identities.

A caller's identity is the name of its key in a caller-key Secret: a gateway's
API-key authentication stamps it on the request as ``x-fleetgate-caller``,
and each route's policy allows only the identities resolved here. A group is
a caller-key Secret in the system namespace, read as its key names only
(``SecretKeys``), never a value. Anything that cannot be resolved allows
nobody more: a missing group adds no caller, it never opens the model.
"""

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.models import ROUTE_CALLERS_MAX, ServiceAccess
from fleetgate.core.secrets import SecretKeys

CONDITION = "AccessResolved"


def group_key(group: str) -> str:
    """The requirement name of a group's Secret."""
    return f"group-{group}"


class Access(NamedTuple):
    """The callers allowed on every gateway serving the service, and what could not be read."""

    callers: list[str]
    # Why some of spec.access could not be resolved, each naming its field.
    problems: list[str]


def resolve(access: ServiceAccess, groups: Mapping[str, Sequence[SecretKeys]]) -> Access:
    """The allowed callers: those named, and every key of each group's Secret.

    ``groups`` holds, per group name, the Secrets Crossplane found by that
    name (none when it does not exist). Sorted, so the policy never changes
    with the order Crossplane lists Secrets in.
    """
    callers = set(access.callers)
    problems = []
    for i, group in enumerate(access.groups):
        found = groups.get(group) or ()
        if not found:
            problems.append(
                f"spec.access.groups[{i}]: Secret {SYSTEM_NAMESPACE}/{group} not found; "
                "its callers may not call"
            )
        for secret in found:
            callers.update(secret.keys)
    allowed = sorted(callers)
    if len(allowed) > ROUTE_CALLERS_MAX:
        problems.append(
            f"spec.access resolves to {len(allowed)} callers, more than {ROUTE_CALLERS_MAX}: "
            f"only the first {ROUTE_CALLERS_MAX} by name may call"
        )
        allowed = allowed[:ROUTE_CALLERS_MAX]
    return Access(allowed, problems)
