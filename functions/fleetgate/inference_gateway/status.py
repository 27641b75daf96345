"""Reading the gateway's state back from what Crossplane observed on its cluster."""

from typing import Any, Final

from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.observed import Observed
from fleetgate.core.verdict import Verdict
from fleetgate.inference_gateway.inputs import CallerKeys

CALLER_AUTH_HINT = (
    "Envoy Gateway rejects the whole policy when two caller keys share a value, "
    "or when a caller Secret it names is missing"
)
# What Envoy Gateway v1.8.3 says when two callers share one key value
# (internal/gatewayapi/securitypolicy.go:2068-2071, under "APIKeyAuth: " at
# :1148). It then refuses the whole policy and answers every route the policy
# covers with 500 (:1055-1063); /healthz has its own policy and still answers.
DUPLICATED_KEY: Final = "duplicated API key"


def gateway_address(gateway: Observed) -> str | None:
    """The first address the Gateway reports (its load balancer's IP or DNS name)."""
    addresses = gateway.get("status", "addresses")
    for entry in addresses if isinstance(addresses, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("value"), str) and entry["value"]:
            return str(entry["value"])
    return None


def models_routed(gateway: Observed, listener: str) -> bool:
    """Whether a model route is attached to ``listener``: more than /healthz, which is on
    every listener (Gateway API's ``status.listeners[].attachedRoutes``)."""
    listeners = gateway.get("status", "listeners")
    for entry in listeners if isinstance(listeners, list) else []:
        if isinstance(entry, dict) and entry.get("name") == listener:
            attached = entry.get("attachedRoutes")
            return isinstance(attached, int | float) and attached > 1
    return False


def _condition(obj: Observed, type_: str) -> dict[str, Any]:
    """The first condition ``type_`` whatever generation it speaks of: for messages only."""
    conditions = obj.get("status", "conditions")
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return {}


def gateway_ready(
    *,
    blocked: Verdict | None,
    gateway: Observed,
    caller_auth: Observed,
    auth: bool,
    where: str,
    callers: CallerKeys | None = None,
    keys_filled: bool = True,
) -> Verdict:
    """GatewayReady: True only once the Gateway is programmed and, with auth, its policy accepted.

    An address alone is not readiness: Envoy Gateway assigns one before the
    listeners are programmed. ``callers`` (the identities composed into the
    caller policy, with their Secrets) lets a refusal say where to look.
    ``keys_filled``: whether the caller keys' copy on the cluster holds them.
    """
    if blocked is not None:
        return blocked
    if not gateway.has_condition("Programmed"):
        programmed = _condition(gateway, "Programmed")
        detail = (
            f" (Programmed={programmed.get('status')}: {programmed.get('reason', '')})"
            if programmed
            else ""
        )
        return Verdict(
            "False", "WaitingForGateway", f"waiting for {where} to be programmed{detail}"
        )
    refused = _caller_auth(caller_auth, where, callers, keys_filled) if auth else None
    if refused is not None:
        return refused
    return Verdict("True", "GatewayProgrammed", f"{where} is programmed and serving")


def _caller_auth(
    caller_auth: Observed, where: str, callers: CallerKeys | None, keys_filled: bool
) -> Verdict | None:
    """Why the caller SecurityPolicy is not accepted yet, or None once it is."""
    accepted = caller_auth.entry_conditions("ancestors", "Accepted")
    rejected = [c for c in accepted if c.get("status") == "False"]
    if not rejected:
        if any(c.get("status") == "True" for c in accepted):
            return None
        return Verdict.no(
            "WaitingForCallerAuth",
            f"waiting for Envoy Gateway to accept the caller SecurityPolicy of {where}",
        )
    # Envoy Gateway's reason only: its message is not ours to repeat into a
    # condition (it may describe the keys it rejected). It is only matched
    # against the one refusal we can explain better.
    if callers is None or not any(DUPLICATED_KEY in str(c.get("message", "")) for c in rejected):
        return Verdict(
            "False",
            "CallerAuthRejected",
            f"Envoy Gateway rejected the caller SecurityPolicy of {where} "
            f"(reason {rejected[0].get('reason', 'unknown')}): {CALLER_AUTH_HINT}",
            warn=True,
        )
    if not keys_filled:
        # A copy lost and created again holds every key empty until it is
        # filled: equal empty values, not the user's keys.
        return Verdict.no(
            "WaitingForSecrets",
            "waiting for provider-kubernetes to fill the copy of the caller keys that "
            f"{where} serves from: until then Envoy Gateway reads its empty keys as "
            "duplicates and answers model requests with 500",
        )
    return Verdict(
        "False",
        "DuplicateCallerKey",
        f"two caller keys share one value, so Envoy Gateway refused the caller "
        f"SecurityPolicy of {where} and answers every model request with 500: "
        f"give each caller a key of its own in {_caller_secrets(callers)}",
        warn=True,
    )


def _caller_secrets(callers: CallerKeys) -> str:
    """Each caller Secret with the keys the policy took from it: names, never values."""
    by_secret: dict[str, list[str]] = {}
    for identity, secret in sorted(callers.sources.items()):
        by_secret.setdefault(secret, []).append(identity)
    return "; ".join(
        f"Secret {SYSTEM_NAMESPACE}/{secret} (keys {', '.join(identities)})"
        for secret, identities in sorted(by_secret.items())
    )
