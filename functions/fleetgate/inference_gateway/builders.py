"""The front door: what callers reach, as plain manifests for the gateway's cluster.

Pure functions of typed inputs. Each returns the remote object (the composer
wraps it in a provider-kubernetes Object); nothing here reads a request.
"""

from collections.abc import Iterable, Sequence
from typing import Any, Final

from fleetgate.core import envoypatch
from fleetgate.core.answers import responses
from fleetgate.core.constants import (
    AI_GATEWAY_METADATA_NAMESPACE,
    CACHED_INPUT_TOKENS_KEY,
    CALLER_HEADER,
    COST_KEY,
    ENVOY_GATEWAY,
    ENVOY_GATEWAY_API,
    GATEWAY_API,
    GATEWAY_HEADER,
    HTTP_LISTENER,
    HTTPS_LISTENER,
    INPUT_TOKENS_KEY,
    MODEL_HEADER,
    OUTPUT_TOKENS_KEY,
    SYSTEM_NAMESPACE,
    TIER_METADATA_KEY,
    TOTAL_TOKENS_KEY,
)
from fleetgate.core.governance import (
    RATE_LIMIT_FILTER,
    AnswerRead,
    answer_patches,
    rate_limit_rules,
)
from fleetgate.core.kinds.gateway import Failover, Limits
from fleetgate.core.kinds.governance import ResolvedLimit
from fleetgate.core.objects import Manifest
from fleetgate.inference_gateway.naming import GatewayNames

GATEWAY_API_VERSION: Final = f"{GATEWAY_API}/v1"

HTTP_PORT: Final = 80
HTTPS_PORT: Final = 443
HEALTHZ_PATH: Final = "/healthz"
# Envoy AI Gateway's default endpoint prefixes (its chart's endpointConfig).
OPENAI_PREFIX: Final = "/v1"
ANTHROPIC_PREFIX: Final = "/anthropic/v1"

# Anthropic SDKs send their key in x-api-key; OpenAI SDKs as a bearer token.
API_KEY_HEADERS: Final = ("Authorization", "x-api-key")

# Without retriable-status-codes among the triggers Envoy ignores the status
# codes; the others cover a backend that never answered.
RETRY_TRIGGERS: Final = ("connect-failure", "refused-stream", "reset")
RETRY_ON_STATUS: Final = "retriable-status-codes"


def _gateway_ref(names: GatewayNames) -> dict[str, str]:
    return {"group": GATEWAY_API, "kind": "Gateway", "name": names.gateway}


def _gateway_policy(names: GatewayNames, kind: str, name: str, **spec: Any) -> Manifest:
    """An Envoy Gateway policy of ``kind`` on the whole Gateway: every listener and route."""
    return names.remote(
        ENVOY_GATEWAY_API, kind, name, spec={"targetRefs": [_gateway_ref(names)], **spec}
    )


def _metadata(key: str) -> str:
    return f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:{key})%"


# One JSON line per request: who called, which model they asked for, which
# endpoint served it under which name, and what it cost. Caller and tokens
# come from AI Gateway metadata, not headers: the caller header is stripped
# before third-party backends, so a header-based record would lose exactly the
# requests that spend provider money. The caller reaches the metadata through
# the AI Gateway controller's logRequestHeaderAttributes
# (x-fleetgate-caller:caller), set where the serving stack is installed; the
# tier likewise from x-fleetgate-tier.
# The endpoint is AI Gateway's backend_name, emitted as each attempt's request
# headers go upstream (internal/extproc/processor_impl.go:449-459, 782-799 at
# v1.1.0), so a failed request names the endpoint that failed it; the
# ai_service_backend_name and model_name_override it emits with the token
# costs (processor_impl.go:964-979) exist only for answered requests. The
# value is "<namespace>/<AIServiceBackend>/route/<AIGatewayRoute>/…".
USAGE_RECORD: Final[dict[str, str]] = {
    "start_time": "%START_TIME%",
    "request_id": "%REQ(X-REQUEST-ID)%",
    "caller": _metadata("caller"),
    "model": f"%REQ({MODEL_HEADER.upper()})%",
    "endpoint": _metadata("backend_name"),
    # The priority tier (0 the preferred) of that endpoint: each backend sets
    # it on its attempt, so a request that failed over names the fallback.
    "tier": _metadata(TIER_METADATA_KEY),
    "served_model": _metadata("model_name_override"),
    "response_model": _metadata("response_model"),
    "input_tokens": _metadata(INPUT_TOKENS_KEY),
    "cached_input_tokens": _metadata(CACHED_INPUT_TOKENS_KEY),
    "output_tokens": _metadata(OUTPUT_TOKENS_KEY),
    "total_tokens": _metadata(TOTAL_TOKENS_KEY),
    # Millionths of the currency of the endpoints' prices; 0 when unpriced.
    "cost": _metadata(COST_KEY),
    "status": "%RESPONSE_CODE%",
    "response_flags": "%RESPONSE_FLAGS%",
    "duration_ms": "%DURATION%",
}

# Kubernetes gives pods ndots:5; every backend hostname has fewer dots, so each
# lookup walks the search domains first and a slow resolver stalls Envoy into
# 503s. Envoy Gateway has no dnsConfig field: patch the Deployment.
NDOTS_PATCH: Final[dict[str, Any]] = {
    "spec": {"template": {"spec": {"dnsConfig": {"options": [{"name": "ndots", "value": "1"}]}}}}
}


def envoy_proxy(names: GatewayNames) -> Manifest:
    """The Envoy deployment behind this Gateway: ndots:1 and the usage record."""
    return names.remote(
        ENVOY_GATEWAY_API,
        "EnvoyProxy",
        names.envoy_proxy,
        spec={
            "provider": {
                "type": "Kubernetes",
                "kubernetes": {
                    "envoyDeployment": {"patch": {"type": "StrategicMerge", "value": NDOTS_PATCH}}
                },
            },
            "telemetry": {
                "accessLog": {
                    "settings": [
                        {
                            "format": {"type": "JSON", "json": dict(USAGE_RECORD)},
                            "sinks": [{"type": "File", "file": {"path": "/dev/stdout"}}],
                        }
                    ]
                }
            },
        },
    )


def gateway(
    names: GatewayNames,
    *,
    gateway_class: str,
    hostname: str | None,
    tls_secrets: list[str] | None,
) -> Manifest:
    """The Gateway: plain HTTP for health checks by address, HTTPS for ``hostname``.

    The http listener has no hostname (a listener hostname filters on Host and
    would 404 a health check by address). Routes attach from this namespace
    only: anyone who may create an HTTPRoute elsewhere on the cluster must not
    reach the authenticated front door.
    """
    same_namespace = {"namespaces": {"from": "Same"}}
    listeners: list[dict[str, Any]] = [
        {
            "name": HTTP_LISTENER,
            "protocol": "HTTP",
            "port": HTTP_PORT,
            "allowedRoutes": same_namespace,
        }
    ]
    if tls_secrets:
        listeners.append(
            {
                "name": HTTPS_LISTENER,
                "protocol": "HTTPS",
                "port": HTTPS_PORT,
                "hostname": hostname,
                "tls": {
                    "mode": "Terminate",
                    "certificateRefs": [
                        {"group": "", "kind": "Secret", "name": s} for s in tls_secrets
                    ],
                },
                "allowedRoutes": same_namespace,
            }
        )
    return names.remote(
        GATEWAY_API_VERSION,
        "Gateway",
        names.gateway,
        spec={
            "gatewayClassName": gateway_class,
            # Per Gateway, not per class: the class is shared with the cluster
            # gateway and with other fleet gateways on this cluster.
            "infrastructure": {
                "parametersRef": {
                    "group": ENVOY_GATEWAY,
                    "kind": "EnvoyProxy",
                    "name": names.envoy_proxy,
                }
            },
            "listeners": listeners,
        },
    )


# Envoy stamps the caller's address on every request from outside
# (useRemoteAddress, which Envoy Gateway always sets) and forwards it to every
# backend, third parties included. AI Gateway's header mutation cannot remove
# it: Envoy ignores an external processor's change to an x-envoy-* header
# unless the filter's mutation_rules allow it, and AI Gateway v1.1.0 sets none
# (Envoy api/envoy/config/common/mutation_rules/v3/mutation_rules.proto).
# The route configuration's own header rules can (make e2e's failover drill).
CALLER_ADDRESS_HEADER: Final = "x-envoy-external-address"


def address_hidden(names: GatewayNames, listeners: Sequence[str]) -> Manifest:
    """No backend learns the caller's address: Envoy's own stamp removed on every listener.

    A patch, because no Gateway API or Envoy Gateway field reaches the route
    configuration's ``request_headers_to_remove``, and the HTTPRoutes that
    serve models are AI Gateway's to write. Envoy Gateway names each listener's
    route configuration ``<namespace>/<gateway>/<listener>`` (the plain-HTTP
    one too, unless its XDSNameSchemeV2 runtime flag is on) and sets no header
    removal of its own there (internal/xds/translator/listener.go:555-577,
    internal/gatewayapi/listener.go:343 at v1.8.3). The http listener serves
    models when the gateway has no TLS.
    """
    patches = (
        envoypatch.patch(
            envoypatch.ROUTE_CONFIGURATION,
            f"{SYSTEM_NAMESPACE}/{names.gateway}/{listener}",
            op="add",
            path="/request_headers_to_remove",
            value=[CALLER_ADDRESS_HEADER],
        )
        for listener in listeners
    )
    return _patch_policy(names, names.address_hidden, patches)


def answers_counted(names: GatewayNames, listener: str, reads: Sequence[AnswerRead]) -> Manifest:
    """Every answer served on ``listener`` counts against the caller's shared token and cost
    limits, a third party's too (``governance.answer_reads`` says why it would not).

    The gateway's rules are shared, so Envoy Gateway keeps them in a rate-limit
    filter of their own, named after the policy's domain, ``<namespace>/<policy>``
    (internal/xds/translator/ratelimit.go:193-201, 1048-1054 at v1.8.3), on every
    route that forwards (a direct response, /healthz, has none: ratelimit.go:176).
    """
    domain = f"{SYSTEM_NAMESPACE}/{names.failover_policy}"
    patches = answer_patches(
        f"{SYSTEM_NAMESPACE}/{names.gateway}/{listener}", f"{RATE_LIMIT_FILTER}/{domain}", reads
    )
    return _patch_policy(names, names.answers_counted, patches)


def _patch_policy(names: GatewayNames, name: str, patches: Iterable[Manifest]) -> Manifest:
    return names.remote(
        ENVOY_GATEWAY_API, envoypatch.KIND, name, spec=envoypatch.spec(names.gateway, patches)
    )


def projected_secret(name: str, names: GatewayNames, *, type_: str) -> Manifest:
    """A Secret on the cluster whose data provider-kubernetes patches in (no values here)."""
    return names.remote("v1", "Secret", name, type=type_)


def caller_auth(names: GatewayNames, caller_secret: str) -> Manifest:
    """API-key authentication on every route of the Gateway; the caller passed on by name."""
    return _gateway_policy(
        names,
        "SecurityPolicy",
        names.caller_policy,
        apiKeyAuth={
            "credentialRefs": [{"group": "", "kind": "Secret", "name": caller_secret}],
            "extractFrom": [{"headers": list(API_KEY_HEADERS)}],
            "forwardClientIDHeader": CALLER_HEADER,
            # The key stops here: no backend, least of all a provider, sees it.
            "sanitize": True,
        },
    )


def listener_policy(names: GatewayNames, limits: Limits) -> Manifest:
    """What every listener does before anything else: the buffer and the caller header.

    Envoy AI Gateway buffers whole request bodies (and non-streamed responses)
    in Envoy; Envoy Gateway's default connection buffer of 32 KiB answers a
    longer prompt with 413. ``x-fleetgate-gateway`` is set to the gateway's
    name, for the failover metrics. ``x-fleetgate-caller`` is removed as the request
    arrives (early request headers run before any HTTP filter), so only the
    caller authentication, which runs later, ever sets it: without it a
    gateway without auth passes a forged identity to the usage record and the
    clusters.
    """
    return _gateway_policy(
        names,
        "ClientTrafficPolicy",
        names.listener_policy,
        connection={"bufferLimit": limits.buffer_limit},
        headers={
            "earlyRequestHeaders": {
                "remove": [CALLER_HEADER],
                # Names this gateway in AI Gateway's metrics (their label
                # fleetgate_gateway), as several gateways may share a
                # cluster and one Prometheus; set, so no caller forges it.
                "set": [{"name": GATEWAY_HEADER, "value": names.gateway_name}],
            }
        },
    )


def failover_policy(
    names: GatewayNames,
    failover: Failover,
    limits: Limits,
    caller_limits: Sequence[ResolvedLimit] = (),
) -> Manifest:
    """Retries across priorities, passive outlier detection and the callers' limits.

    For every route of the Gateway. A caller's limits here count across all of
    them (``shared``); a route's own policy (a ModelService's limits) merges
    into this one, keeping it (model_service/ai_gateway.caller_traffic). What Envoy
    answers itself (403, 429, 503) reads as JSON naming the model asked for, the same as
    on every route (``answers.responses``).
    """
    codes = sorted(set(failover.retry_on.http_status_codes))
    rules = rate_limit_rules(caller_limits, shared=True)
    rate_limit = {"rateLimit": {"global": {"rules": rules}}} if rules else {}
    retry_on: dict[str, Any] = {
        "triggers": [*RETRY_TRIGGERS, *([RETRY_ON_STATUS] if codes else [])]
    }
    if codes:
        retry_on["httpStatusCodes"] = codes
    return _gateway_policy(
        names,
        "BackendTrafficPolicy",
        names.failover_policy,
        retry={
            # Priorities apply without it (Envoy spreads load over the
            # tiers by their health). It adds Envoy's previous_priorities
            # retry plugin (Envoy Gateway v1.8.3 internal/xds/translator/
            # route.go:811-824): with 1, each retry leaves out the tiers
            # already tried, so it goes to the next tier rather than back
            # to the one that just failed, which still looks healthy.
            "numAttemptsPerPriority": 1,
            "numRetries": failover.retries,
            "retryOn": retry_on,
        },
        healthCheck={
            "passive": {
                "consecutive5XxErrors": failover.outlier_detection.consecutive5xx_errors,
                "baseEjectionTime": failover.outlier_detection.base_ejection_time,
                # All of a service's endpoints share one Envoy cluster; the
                # default 10% would never eject the only bad one of two.
                "maxEjectionPercent": 100,
            },
            # A sibling of passive, not inside it: nested, the API server
            # prunes it and panic mode keeps sending to ejected hosts.
            "panicThreshold": 0,
        },
        # The backend side of the buffer: a large non-streamed response is
        # buffered whole too.
        connection={"bufferLimit": limits.buffer_limit},
        responseOverride=responses(names.gateway_name),
        **rate_limit,
    )


def healthz_filter(names: GatewayNames) -> Manifest:
    return names.remote(
        ENVOY_GATEWAY_API,
        "HTTPRouteFilter",
        names.healthz,
        spec={
            "directResponse": {
                "statusCode": 200,
                "contentType": "application/json",
                "body": {"type": "Inline", "inline": '{"status":"ok"}'},
            }
        },
    )


def healthz_route(names: GatewayNames) -> Manifest:
    """GET /healthz answers 200 from Envoy itself, on every listener."""
    return names.remote(
        GATEWAY_API_VERSION,
        "HTTPRoute",
        names.healthz,
        spec={
            "parentRefs": [_gateway_ref(names)],
            "rules": [
                {
                    "matches": [{"path": {"type": "Exact", "value": HEALTHZ_PATH}}],
                    "filters": [
                        {
                            "type": "ExtensionRef",
                            "extensionRef": {
                                "group": ENVOY_GATEWAY,
                                "kind": "HTTPRouteFilter",
                                "name": names.healthz,
                            },
                        }
                    ],
                }
            ],
        },
    )


def healthz_open(names: GatewayNames) -> Manifest:
    """With auth on: a route-level policy replaces the Gateway's, so health checks need no key."""
    return names.remote(
        ENVOY_GATEWAY_API,
        "SecurityPolicy",
        names.healthz,
        spec={
            "targetRefs": [{"group": GATEWAY_API, "kind": "HTTPRoute", "name": names.healthz}],
            "authorization": {"defaultAction": "Allow"},
        },
    )


def endpoints(*, hostname: str | None, tls: bool, address: str | None) -> dict[str, str]:
    """The base URLs callers use; empty until there is a name or an address to use."""
    if hostname:
        base = f"{'https' if tls else 'http'}://{hostname}"
    elif address:
        base = f"http://[{address}]" if ":" in address else f"http://{address}"
    else:
        return {}
    return {"openAI": base + OPENAI_PREFIX, "anthropic": base + ANTHROPIC_PREFIX}
