"""How soon Crossplane calls a function again for an XR: the response's TTL.

With realtime compositions, Crossplane v2.2's default, an XR is requeued
after the TTL of its pipeline's answer and not otherwise
(internal/controller/apiextensions/composite/reconciler.go:855-870,
composition_functions.go:389-394, v2.2.0). A change to a composed resource
triggers a reconcile at once, unless the XR's watch circuit breaker is open
(it opens while an XR's Objects are created: burst 100 events, then 1/s),
but a change to a *required* resource (another XR's published status, a
Secret) is seen only when the TTL runs out. So every hop of the fleet's
readiness chain that crosses XRs, or falls in an open breaker, waits for a
TTL.

An XR waiting for something (a condition False, a composed resource not
ready yet, or as its function says) is therefore called again soon, and less soon
the longer it has waited: the TTL is an eighth of the time since its oldest
condition still False turned False, between ``WAITING_MIN`` and ``SETTLED``.
A new fleet's chain of hops converges in seconds; an XR that waits for hours
(a ModelService with no ready endpoint) costs one call every ``SETTLED``. A
settled XR is called every ``SETTLED``, so a drain, a rotated CA or a deleted
credential reaches it within that. A call costs milliseconds
(bench/results/results.md); the SDK's default TTL is 60 s.
"""

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from fleetgate.core.times import parse

WAITING_MIN = datetime.timedelta(seconds=2)
SETTLED = datetime.timedelta(seconds=30)
BACKOFF = 8  # the TTL while waiting: the time waited so far, divided by this


def ttl(
    *,
    waiting: bool,
    false_now: Iterable[str],
    observed_conditions: Iterable[Mapping[str, Any]],
    now: datetime.datetime,
    created: str | None = None,
) -> datetime.timedelta:
    """The TTL for an answer; ``false_now`` the condition types it reports False.

    How long the XR has waited is read from ``observed_conditions`` (the XR's
    as Crossplane stored them): the oldest ``lastTransitionTime`` of a
    condition in ``false_now`` that was False already. One that just turned
    False has waited for nothing yet. An XR waiting with every condition True
    (a gateway serving while a new cluster is still publishing itself) has
    waited since it was ``created`` (its creationTimestamp): a new fleet's
    hops stay quick, and an old XR asks no more often than a settled one.
    """
    if not waiting:
        return SETTLED
    types = set(false_now)
    if types:
        since = [
            parse(c.get("lastTransitionTime"))
            for c in observed_conditions
            if c.get("type") in types and c.get("status") == "False"
        ]
    else:
        since = [parse(created)]
    known = [t for t in since if t is not None]
    waited = now - min(known) if known else datetime.timedelta(0)
    return min(SETTLED, max(WAITING_MIN, waited / BACKOFF))
