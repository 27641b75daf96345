"""Whether the workload clusters an XR composes onto answer: a condition a person can act on.

When a cluster's API server stops answering, provider-kubernetes says so on
every Object it manages there: ``Synced`` False, reason ``ReconcileError``,
a message that ends in Go's network error (crossplane-runtime v2.4.0
pkg/reconciler/managed/reconciler.go:64-65 "connect failed" / "observe
failed", provider-kubernetes v1.2.1 internal/controller/namespaced/object/
object.go:403 "cannot get object"). Nothing carries that to the XR:
Crossplane counts a composed resource as synced when its apply on the
control plane succeeded (v2.2.0 internal/controller/apiextensions/composite/
composition_functions.go:586-625), and the Object keeps the ``Ready`` it
last observed. So the XR stays Synced and Ready while none of its changes
reach the cluster. This module turns those Objects into the condition
``ClusterReachable`` on the XR, naming the cluster and what to check.

The XR's readiness is left alone on purpose. The cluster's gateways and
model servers serve without their API server, so routes to them stay: a
caller loses nothing it would not lose to a real data-plane failure, which
retries and the lower priority tiers already handle; withdrawing them would
move traffic off a serving cluster because of its control plane.

Crossplane keeps a condition a function set until the function sets it again
(v2.2.0 internal/controller/apiextensions/composite/reconciler.go:908-922).
So ``ClusterReachable`` is reported False while a cluster does not answer,
True on every later call of an XR that once had it, and not at all on an XR
that never lost a cluster.
"""

from collections.abc import Iterable
from typing import Final

from fleetgate.core.constants import OBJECT_API_VERSION
from fleetgate.core.observed import Observed
from fleetgate.core.verdict import Verdict

CONDITION: Final = "ClusterReachable"
# How Go's net package and client-go say that nobody answered: the end of the
# Synced message for a cluster whose API server is down, unreachable or hung.
UNANSWERED: Final = (
    "connection refused",
    "connection reset by peer",
    "i/o timeout",
    "no route to host",
    "network is unreachable",
    "no such host",
    "TLS handshake timeout",
    "context deadline exceeded",
)
SHOWN_MESSAGE_MAX: Final = 300


def unanswered(observed: Observed) -> str | None:
    """The message of an Object's current ``Synced`` False when it says its cluster did
    not answer; None for any other resource or reason."""
    synced = observed.failing("Synced")
    if observed.get("apiVersion") != OBJECT_API_VERSION or synced is None:
        return None
    message = synced.get("message")
    if isinstance(message, str) and any(text in message for text in UNANSWERED):
        return message
    return None


def verdict(composed: Iterable[tuple[str, Observed]], reported_before: bool) -> Verdict | None:
    """``ClusterReachable`` for an XR whose composed resources are ``composed`` (name and
    observed state); None when there is nothing to say (``reported_before``: the XR carries
    the condition from an earlier call, so it is cleared once every cluster answers)."""
    silent: dict[str, list[tuple[str, str]]] = {}
    for name, observed in composed:
        message = unanswered(observed)
        if message is not None:
            cluster = observed.get("spec", "providerConfigRef", "name")
            silent.setdefault(str(cluster or "?"), []).append((name, message))
    if not silent:
        if not reported_before:
            return None
        return Verdict("True", "Reachable", "every cluster this XR composes onto answers")
    sentences = []
    for cluster, objects in sorted(silent.items()):
        name, message = min(objects)  # the same one on every call while it lasts
        shown = message if len(message) <= SHOWN_MESSAGE_MAX else message[:SHOWN_MESSAGE_MAX] + "…"
        sentences.append(
            f"the API server of cluster {cluster} does not answer provider-kubernetes "
            f"({len(objects)} composed Object{'s' if len(objects) > 1 else ''} cannot sync; "
            f"{name}: {shown}); check it and "
            f"the kubeconfig its ClusterProviderConfig {cluster} names"
        )
    return Verdict(
        "False",
        "ClusterUnreachable",
        "; ".join(sentences) + ". What already runs there keeps serving and routes to it "
        "are kept; this XR's changes reach it once it answers",
        warn=True,
    )
