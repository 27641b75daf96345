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

from fleetgate.core.governance import (
    TOO_MANY_RULES,
    Problem,
    limit_groups,
    resolve_callers,
    resolve_limits,
    too_many_callers,
    too_many_rules,
)
from fleetgate.core.kinds.governance import RESOLVED_CALLERS_MAX, ResolvedLimit
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
    # Why some of spec.access could not be taken as written, each naming its field.
    problems: list[Problem]


def resolve(access: ServiceAccess, found: Mapping[str, Sequence[SecretKeys]]) -> Access:
    """The allowed callers (those named and every key of each group) and the limits.

    ``found`` holds, per group name, the Secrets Crossplane found by that name
    (none when it does not exist).
    """
    callers, problems = resolve_callers(FIELD, access.callers, access.groups, found)
    if len(callers) > RESOLVED_CALLERS_MAX:
        # A route holds that many; cut, the rest are denied: fail closed.
        outcome = f"only the first {RESOLVED_CALLERS_MAX} by name may call, the rest are denied"
        problems.append(too_many_callers(FIELD, len(callers), outcome))
        callers = callers[:RESOLVED_CALLERS_MAX]
    limits, more = resolve_limits(f"{FIELD}.limits", access.limits, found)
    # Each ModelRoute refuses them too (it composes the policy); said here, where
    # they are written.
    too_many = too_many_rules(f"{FIELD}.limits", limits)
    if too_many is not None:
        outcome = "each gateway's route keeps the limits it had, a new route is not served"
        more.append(Problem(TOO_MANY_RULES, f"{too_many}; {outcome}"))
    return Access(callers, limits, [*problems, *more])
