"""What Envoy answers itself on a fleet gateway's model routes, and on a cluster gateway's
route to an engine that sleeps: JSON bodies in OpenAI's error shape, Envoy Gateway
``responseOverride``s of Envoy's own replies only."""

import json
from typing import Any, Final

from fleetgate.core.constants import MODEL_HEADER

# What Envoy's rate-limit filter says of the limit it applied, on its 429
# (Envoy Gateway enables the draft-03 headers, internal/xds/translator/
# ratelimit.go:117-171 at v1.8.3): "<quota>, <quota>;w=<window seconds>".
_LIMIT_APPLIED: Final = "%RESP(X-RATELIMIT-LIMIT)%"
_RESETS_IN: Final = "%RESP(X-RATELIMIT-RESET)%"


def _override(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """A response override for Envoy's own replies of ``status`` only (``source: Local``).

    Never for a backend's: a provider's own 403 or 429, or a cluster gateway's 503,
    reaches the caller as the backend sent it (the local-reply predicate,
    internal/xds/translator/custom_response.go:146-160 at v1.8.3).
    """
    return {
        "match": {"statusCodes": [{"type": "Value", "value": status}]},
        "source": "Local",
        "response": {
            "contentType": "application/json",
            "body": {"type": "Inline", "inline": json.dumps({"error": body}, sort_keys=True)},
        },
    }


# Seconds a caller is asked to wait while a sleeping model wakes: its scaler polls every
# few seconds, and an engine then needs its start-up.
WAKING_RETRY_AFTER: Final = 30

# The model the caller asked for, as Envoy fills it in when it answers.
MODEL_ASKED: Final = f"%REQ({MODEL_HEADER.upper()})%"


def responses(gateway: str) -> list[dict[str, Any]]:
    """JSON bodies, OpenAI's error shape, for what Envoy answers itself on a gateway's model
    routes, naming the model asked for and the rule's owner, never a caller or a key: 403,
    the caller may not call the model; 429, a limit of the model's or of the gateway's is
    used up (the limit and when it resets from Envoy's rate-limit headers); 503, no backend
    answers, as while every endpoint of the model is scaled to zero, with ``Retry-After``.

    One list for the gateway's traffic policy and for every route's, whatever the route:
    Envoy builds a request's filter chain from the route it first matches and keeps it when
    the request is routed again (``FilterConfig.disabled``, envoyproxy/envoy#44739). A
    request arrives without the model header, so it first matches the catch-all rule AI
    Gateway adds to whichever route comes first on the listener; AI Gateway's external
    processor then sets the header and clears the route cache. The override that answers
    is that first route's, with its own configuration: were the lists to differ per route,
    a caller would read another model's body, or Envoy's plain reply (seen on the real
    plane with a 503 only one route carried; reproduced with Envoy 1.38.3 alone).

    So the model is filled in when Envoy answers, from ``x-ai-eg-model``. AI Gateway's
    external processor sets it from the request body (internal/extproc/
    processor_impl.go:282-290 at v1.1.0), holding the request until then (body mode
    BUFFERED, internal/extensionserver/post_translate_modify.go:800), and goes in ahead of
    Envoy Gateway's ext_proc, RBAC and rate-limit filters (post_translate_modify.go:
    1084-1130; Envoy Gateway v1.8.3 orders those 100+, 301, 303, internal/xds/translator/
    httpfilters.go:128-141): the header is set when Envoy refuses. Envoy copies it into the
    body as is (a text format, custom_response.go:466-471, which does not escape), and it
    cannot break the JSON: API key authentication runs on the model routes alone (/healthz
    has its own policy), and a model route is taken only when that header equals its
    ModelService's ``<namespace>/<name>``, Kubernetes names without a quote or a backslash.

    The 503 is Envoy's own (no backend left to try: every tier failed, or every endpoint
    of the model sleeps and the cluster gateways are ejected) and says both. A cluster
    gateway's 503 passes as it came, and must: overridden, the upstream request is reset
    before its body reaches AI Gateway's upstream processor, which counts a request only
    at the end of that body (internal/extproc/processor_impl.go:530-549 at v1.1.0), and
    the requests of a cold start would never count as the demand that wakes the model
    (seen on the real plane). The cluster gateway answers the same JSON itself for an
    engine scaled to zero (``waking``). A response override may add headers
    (``CustomResponse.header``, api/v1alpha1/shared_types.go:886-893 at v1.8.3).
    """
    return [
        _override(
            403,
            {
                "type": "permission_denied",
                "code": "caller_not_allowed",
                "model": MODEL_ASKED,
                "message": f"this caller may not call {MODEL_ASKED} (its ModelService's "
                "spec.access)",
            },
        ),
        _override(
            429,
            {
                "type": "rate_limit_exceeded",
                "code": "caller_limit",
                "limit": _LIMIT_APPLIED,
                "resets_in_seconds": _RESETS_IN,
                "model": MODEL_ASKED,
                "message": f"over a per-caller limit of {MODEL_ASKED} (its ModelService's "
                f"spec.access.limits) or of InferenceGateway {gateway} (spec.auth.limits) "
                "until the window turns",
            },
        ),
        waking(
            MODEL_ASKED,
            f"no backend of {MODEL_ASKED} answers right now: a model scaled to zero when "
            "idle is starting again on requests like this one, or every tier failed",
        ),
    ]


def waking(model: str, why: str) -> dict[str, Any]:
    """Envoy's own 503 for ``model`` as JSON, ``why`` it answered, with ``Retry-After``: on
    a fleet gateway (``responses``) and on a cluster gateway's route to an engine that
    scales to zero (model_deployment/routing.py)."""
    override = _override(
        503,
        {
            "type": "service_unavailable",
            "code": "model_unavailable",
            "model": model,
            "message": f"{why}; retry in {WAKING_RETRY_AFTER} seconds",
        },
    )
    override["response"]["header"] = {
        "set": [{"name": "Retry-After", "value": str(WAKING_RETRY_AFTER)}]
    }
    return override
