"""What the gateway needs from the control plane, read once per call.

Every requirement is declared on every call (Crossplane settles them once
they are stable). A requirement Crossplane has not resolved yet is told apart
from one that resolved to nothing: the first is a wait, the second a finding.
"""

from typing import Final, NamedTuple

from fleetgate.core.constants import API_VERSION, SYSTEM_NAMESPACE
from fleetgate.core.errors import InputError, refuse_duplicates
from fleetgate.core.governance import limit_groups, require_groups, resolve_limits
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.kinds.gateway import InferenceGateway
from fleetgate.core.kinds.governance import ResolvedLimit
from fleetgate.core.reconcile import Reconcile, Selector
from fleetgate.core.verdict import Verdict
from fleetgate.inference_gateway.resolution import Peer

CLUSTER: Final = "cluster"
CLUSTERS: Final = "clusters"
GATEWAYS: Final = "gateways"
CALLERS: Final = "caller-secrets"
TLS_CERT_KEYS: Final = ("tls.crt", "tls.key")


def tls_requirement(secret: str) -> str:
    return f"tls-secret-{secret}"


class Target(NamedTuple):
    """Where the gateway's objects land."""

    cluster: str
    provider_config: str
    gateway_class: str


class CallerKeys(NamedTuple):
    """Every caller identity, each with the Secret its key is copied from."""

    sources: dict[str, str]  # identity -> source Secret name
    # Identities that are a key of more than one selected Secret -> those Secrets.
    # None of them authenticates: which key is the caller's is not ours to guess.
    ambiguous: dict[str, list[str]]
    selector: str  # spec.auth.secretSelector, for messages

    def refusal(self) -> Verdict | None:
        """NoCallerKeys when no caller can authenticate: the gateway is not served."""
        if self.sources:
            return None
        shadowed = (
            f" (every key it holds is in more than one of them: {', '.join(self.ambiguous)})"
            if self.ambiguous
            else ""
        )
        return Verdict.no(
            "NoCallerKeys",
            f"spec.auth.secretSelector ({self.selector}) matches no Secret in {SYSTEM_NAMESPACE} "
            f"holding a key of its own{shadowed}: no caller could authenticate, so the gateway "
            "is not served and every key it had is withdrawn; label a caller-key Secret or "
            "remove spec.auth",
        )


class FrontDoor(NamedTuple):
    """What the Gateway and its policies are built from: caller keys and TLS Secrets."""

    callers: CallerKeys | None  # None: no spec.auth
    tls: list[str] | None  # None: no spec.tls
    limits: list[ResolvedLimit]  # spec.auth.limits, narrowing resolved


def front_door(
    rec: Reconcile, gateway: InferenceGateway, callers: CallerKeys | Verdict | None
) -> FrontDoor | Verdict:
    """The inputs of the front door, or the first gate not passed (callers, TLS, limits).

    ``callers`` is ``caller_keys``: read first and on its own, because the
    keys on the cluster follow it even while another gate is closed.
    """
    tls = tls_secrets(rec, gateway)
    limits = caller_limits(rec, gateway)
    if isinstance(callers, Verdict):
        return callers
    refused = callers.refusal() if callers is not None else None
    if refused is not None:
        return refused
    if isinstance(tls, Verdict):
        return tls
    if isinstance(limits, Verdict):
        return limits
    return FrontDoor(callers, tls, limits)


def caller_limits(rec: Reconcile, gateway: InferenceGateway) -> list[ResolvedLimit] | Verdict:
    """``spec.auth.limits``, each narrowing resolved to callers; a group that is missing
    narrows to nobody, a narrowing to too many callers widens to everyone, and a
    warning says so."""
    limits = gateway.spec.auth.limits if gateway.spec.auth else []
    found = require_groups(rec, limit_groups(limits))
    waiting = sorted(group for group, secrets in found.items() if secrets is None)
    if waiting:
        listed = ", ".join(f"{SYSTEM_NAMESPACE}/{group}" for group in waiting)
        return Verdict.no(
            "WaitingForCallerKeys", f"waiting for Crossplane to look up the Secrets {listed}"
        )
    resolved, problems = resolve_limits(
        "spec.auth.limits", limits, {group: found[group] or [] for group in found}
    )
    for problem in problems:
        rec.warning(problem.message, problem.reason)
    return resolved


def target(rec: Reconcile, gateway: InferenceGateway) -> Target | Verdict:
    name = gateway.spec.cluster_name
    clusters = rec.require_all(
        CLUSTER, Selector(API_VERSION, "InferenceCluster", name=name), InferenceCluster
    )
    if clusters is None:
        return Verdict.no(
            "WaitingForCluster", f"waiting for Crossplane to look up InferenceCluster {name}"
        )
    if not clusters:
        return Verdict.no(
            "ClusterNotFound",
            f"InferenceCluster {name} (spec.clusterName) does not exist: create it or name another",
        )
    cluster = clusters[0]
    provider_config = cluster.status.provider_config_ref.name
    if not provider_config:
        return Verdict.no(
            "ClusterNotRegistered",
            f"InferenceCluster {name} has not published status.providerConfigRef yet: "
            "it is still being registered (check its conditions)",
        )
    return Target(name, provider_config, cluster.spec.gateway.class_name)


def caller_keys(rec: Reconcile, gateway: InferenceGateway) -> CallerKeys | Verdict | None:
    """The caller keys ``spec.auth`` selects; None without auth, a Verdict until looked up.

    A selector that matches no key is refused (``CallerKeys.refusal``): the
    gateway is not served. A key name found in two Secrets is two callers
    claiming one identity, which allow-lists and budgets are bound to: neither
    authenticates until one is renamed or removed.
    """
    if gateway.spec.auth is None:
        return None
    # Never empty (NonEmptySelector): that would make every Secret in
    # fleetgate-system, kubeconfigs included, a caller key.
    labels = dict(gateway.spec.auth.secret_selector.match_labels)
    secrets = rec.require_secrets(
        CALLERS, Selector("v1", "Secret", labels=labels, namespace=SYSTEM_NAMESPACE)
    )
    selector = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
    if secrets is None:
        return Verdict.no(
            "WaitingForCallerKeys",
            f"waiting for Crossplane to look up caller-key Secrets ({selector})",
        )
    holders: dict[str, list[str]] = {}
    for secret in sorted(secrets, key=lambda s: s.name):
        for key in secret.keys:
            holders.setdefault(key, []).append(secret.name)
    return CallerKeys(
        sources={key: found[0] for key, found in sorted(holders.items()) if len(found) == 1},
        ambiguous={key: found for key, found in sorted(holders.items()) if len(found) > 1},
        selector=selector,
    )


def tls_secrets(rec: Reconcile, gateway: InferenceGateway) -> list[str] | Verdict | None:
    """The TLS Secrets ``spec.tls`` names, once each exists with a certificate and key."""
    if gateway.spec.tls is None:
        return None
    refs = [ref.name for ref in gateway.spec.tls.certificate_refs]
    if len(set(refs)) != len(refs):
        raise InputError("spec.tls.certificateRefs: names must be unique")
    waiting, missing, invalid = [], [], []
    for ref in refs:
        found = rec.require_secrets(
            tls_requirement(ref), Selector("v1", "Secret", name=ref, namespace=SYSTEM_NAMESPACE)
        )
        if found is None:
            waiting.append(ref)
        elif not found:
            missing.append(ref)
        elif not set(TLS_CERT_KEYS) <= found[0].keys:
            invalid.append(ref)
    where = f"in {SYSTEM_NAMESPACE}"
    if missing:
        return Verdict.no(
            "TLSSecretMissing",
            f"TLS Secret(s) {', '.join(missing)} {where} (spec.tls.certificateRefs) do not exist",
        )
    if invalid:
        return Verdict.no(
            "TLSSecretInvalid",
            f"TLS Secret(s) {', '.join(invalid)} {where} lack {' or '.join(TLS_CERT_KEYS)}: "
            "a kubernetes.io/tls Secret is expected",
        )
    if waiting:
        return Verdict.no(
            "WaitingForTLSSecret",
            f"waiting for Crossplane to look up TLS Secret(s) {', '.join(waiting)}",
        )
    return refs


def clusters(rec: Reconcile) -> list[InferenceCluster] | None:
    """Every InferenceCluster (for name resolution and CAs); None until resolved."""
    found = rec.require_all(CLUSTERS, Selector(API_VERSION, "InferenceCluster"), InferenceCluster)
    if found is not None:
        _unique("InferenceCluster", [c.metadata.name for c in found])
    return found


def peers(rec: Reconcile) -> list[Peer] | None:
    """Every InferenceGateway, for the name-resolution ownership rule; None until resolved."""
    found = rec.require_all(GATEWAYS, Selector(API_VERSION, "InferenceGateway"), InferenceGateway)
    if found is None:
        return None
    result = [as_peer(gateway) for gateway in found]
    _unique("InferenceGateway", [p.name for p in result])
    return result


def as_peer(gateway: InferenceGateway) -> Peer:
    """A gateway (this one, or another) as the ownership rule sees it."""
    meta = gateway.metadata
    return Peer(
        name=meta.name,
        cluster=gateway.spec.cluster_name,
        created=meta.creation_timestamp or "",
        deleting=bool(meta.deletion_timestamp),
    )


def _unique(kind: str, names: list[str]) -> None:
    refuse_duplicates(f"{kind}s", names)
