"""Reading the gateway's state back from what Crossplane observed on its cluster."""

from dataclasses import dataclass
from typing import Any

from fleetgate.core.function import Status
from fleetgate.core.observed import dig, has_condition, list_conditions
from fleetgate.inference_gateway.inputs import Blocked

CALLER_AUTH_HINT = (
    "Envoy Gateway rejects the whole policy when two caller keys share a value, "
    "or when a caller Secret it names is missing"
)


@dataclass(frozen=True)
class Verdict:
    status: Status
    reason: str
    message: str


def gateway_address(gateway: dict[str, Any] | None) -> str | None:
    """The first address the Gateway reports (its load balancer's IP or DNS name)."""
    addresses = dig(gateway, "status", "addresses")
    for entry in addresses if isinstance(addresses, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("value"), str) and entry["value"]:
            return str(entry["value"])
    return None


def _condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    conditions = dig(obj, "status", "conditions")
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return {}


def gateway_ready(
    *,
    blocked: Blocked | None,
    gateway: dict[str, Any] | None,
    caller_auth: dict[str, Any] | None,
    auth: bool,
    where: str,
) -> Verdict:
    """GatewayReady: True only once the Gateway is programmed and, with auth, its policy accepted.

    An address alone is not readiness: Envoy Gateway assigns one before the
    listeners are programmed.
    """
    if blocked is not None:
        return Verdict("False", blocked.reason, blocked.message)
    if not has_condition(gateway, "Programmed"):
        programmed = _condition(gateway, "Programmed")
        detail = (
            f" (Programmed={programmed.get('status')}: {programmed.get('reason', '')})"
            if programmed
            else ""
        )
        return Verdict(
            "False", "WaitingForGateway", f"waiting for {where} to be programmed{detail}"
        )
    if auth:
        accepted = list_conditions(caller_auth, "ancestors", "Accepted")
        rejected = [c for c in accepted if c.get("status") == "False"]
        if rejected:
            # Envoy Gateway's reason only: its message is not ours to repeat
            # into a condition (it may describe the keys it rejected).
            return Verdict(
                "False",
                "CallerAuthRejected",
                f"Envoy Gateway rejected the caller SecurityPolicy of {where} "
                f"(reason {rejected[0].get('reason', 'unknown')}): {CALLER_AUTH_HINT}",
            )
        if not any(c.get("status") == "True" for c in accepted):
            return Verdict(
                "False",
                "WaitingForCallerAuth",
                f"waiting for Envoy Gateway to accept the caller SecurityPolicy of {where}",
            )
    return Verdict("True", "GatewayProgrammed", f"{where} is programmed and serving")
