"""How soon Crossplane calls a function again for an XR: the response's TTL.

With realtime compositions (Crossplane's default) an XR is requeued after the
TTL of its pipeline's answer, which overrides any poll interval
(internal/controller/apiextensions/composite/reconciler.go:910-927, v2.4.0;
:855-870 at v2.2.0), and at once when a composed resource changes, unless the
XR's watch circuit breaker is open. A change to a *required* resource
(another XR's published status, a Secret) wakes the XR at once from v2.4.0 on,
which watches what each step required (composition_functions.go:263-470,
773); before v2.4 it is seen only when the TTL runs out.

An XR waiting for something (a condition False, a composed resource not ready yet, or as
its function says) is called again soon, and less soon the longer it has waited: the TTL
is an eighth of the time since its oldest condition still False turned False, between
``WAITING_MIN`` and ``WAITING_MAX`` (and never above the settled TTL). A settled XR is
called every settled TTL, an hour by default: on v2.4 every input a function reads
arrives by a watch (its XR, what it composed, what it required; no function reads the
clock once settled), so this TTL is only a backstop, as long as Crossplane's own hourly
resync that every XR gets anyway. `make e2e` with an hour passed every drill and fault,
all but one as fast as with 5 minutes (a service restricted to two callers converged in
57 s in every run since, against 25 s: the withdrawn ModelRoute's deletion, not the TTL;
bench/README.md), and a settled fleet costs no call
between TTLs
(bench/README.md, "The fleet at rest"); at 5 minutes a fleet of 400 services (~1,500
XRs) would cost ~5 calls a second doing nothing. What the backstop still catches is a
change whose watch event Crossplane dropped: its per-XR circuit breaker drops events
while open (install step 0 raises it so a fleet does not trip it). A control plane
before v2.4 sees a drain, a rotated CA or a deleted credential only through this TTL:
set ``FLEETGATE_SETTLED_TTL`` (seconds, 2-3600) on the functions, e.g. ``30`` through a
DeploymentRuntimeConfig, as `make e2e CROSSPLANE_LINE=oldest` does.
``FLEETGATE_WAITING_TTL`` (seconds, 2-3600) sets ``WAITING_MIN``, the least TTL while
waiting: a large fleet on v2.4 may raise it to 20 (bench/README.md, "The least waiting
TTL").
"""

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from fleetgate.core.times import parse

LEAST = datetime.timedelta(seconds=2)  # the least TTL either variable may set
# Crossplane's resync: every XR is reconciled this often whatever its TTL (--sync-interval,
# 1h, the XR informers' SyncPeriod: cmd/crossplane/core/core.go:112,365 at v2.4.0).
SETTLED_MAX = datetime.timedelta(hours=1)
SETTLED_VARIABLE = "FLEETGATE_SETTLED_TTL"
WAITING_VARIABLE = "FLEETGATE_WAITING_TTL"
BACKOFF = 8  # the TTL while waiting: the time waited so far, divided by this
# The most a waiting XR waits for its next call: what it waits for may be something only a
# new pass notices (Envoy Gateway's stale status, bench/README.md "The least waiting TTL").
WAITING_MAX = datetime.timedelta(minutes=5)
# This process's TTLs: the defaults until ``configure`` reads the variables.
SETTLED = SETTLED_MAX
# 2 s: some recoveries still hang on this poll even on Crossplane v2.4 (make e2e: caller
# keys deleted on a cluster back in 6 s, against 81 s with 20 s). A large fleet trades
# that for load: FLEETGATE_WAITING_TTL=20 cut S=40's calls until routed by 28%
# (bench/README.md, "The least waiting TTL").
WAITING_MIN = datetime.timedelta(seconds=2)


def _seconds(environ: Mapping[str, str], name: str, default: datetime.timedelta) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return int(default.total_seconds())
    low, high = int(LEAST.total_seconds()), int(SETTLED_MAX.total_seconds())
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ValueError(f"{name}={raw!r}: give the TTL in whole seconds, {low}-{high}")
    return int(raw)


def configure(environ: Mapping[str, str]) -> None:
    """Take the TTLs from ``FLEETGATE_SETTLED_TTL`` and ``FLEETGATE_WAITING_TTL``, if set.

    Whole seconds each. The waiting one is the least TTL while an XR waits;
    ``ttl`` caps every TTL at the settled one, so a waiting TTL above it means
    the settled TTL. Raises ValueError naming the variable for anything else;
    the console scripts call this before they serve (``runner.command``), so
    a bad value stops the process with that message, not the first call.
    """
    global SETTLED, WAITING_MIN  # one setting per process, read on every answer
    settled = _seconds(environ, SETTLED_VARIABLE, SETTLED)
    waiting = _seconds(environ, WAITING_VARIABLE, WAITING_MIN)
    SETTLED, WAITING_MIN = (datetime.timedelta(seconds=s) for s in (settled, waiting))


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
    return min(SETTLED, max(WAITING_MIN, min(WAITING_MAX, waited / BACKOFF)))
