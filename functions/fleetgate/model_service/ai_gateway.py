"""The Envoy AI Gateway objects that route one model name on one fleet gateway.

What a ModelRoute composes onto its gateway's cluster: the AIGatewayRoute,
per backend its Backend, AIServiceBackend and credential. Pure functions: the
typed route in, plain manifests out; every name comes from ``naming``.
"""

from collections.abc import Sequence
from typing import Any, Final

from fleetgate.core import envoypatch
from fleetgate.core.answers import responses
from fleetgate.core.constants import (
    CACHED_INPUT_TOKENS_KEY,
    CALLER_HEADER,
    ENDPOINT_HEADER,
    ENVOY_GATEWAY,
    ENVOY_GATEWAY_API,
    GATEWAY_API,
    GATEWAY_HEADER,
    HTTP_LISTENER,
    INPUT_TOKENS_KEY,
    MODEL_HEADER,
    OUTPUT_TOKENS_KEY,
    SYSTEM_NAMESPACE,
    TIER_HEADER,
    TOTAL_TOKENS_KEY,
)
from fleetgate.core.governance import (
    RATE_LIMIT_FILTER,
    AnswerRead,
    answer_patches,
    answer_reads,
    llm_request_costs,
    rate_limit_rules,
)
from fleetgate.core.kinds.governance import ResolvedLimit
from fleetgate.core.kinds.route import RouteAccess, RouteBackend, RouteGateway
from fleetgate.core.kinds.service import FailoverAlert
from fleetgate.core.models import SecretKeyRef
from fleetgate.core.names import gateway_client_certificate, gateway_cluster_ca
from fleetgate.core.objects import Manifest, remote_object
from fleetgate.core.secrets import secret_patch
from fleetgate.model_service.alerts import prometheus_rule
from fleetgate.model_service.naming import (
    FAILOVER_ALERTS_KEY,
    Service,
    ai_gateway_route_name,
    api_key_name,
    backend_name,
    endpoint_key,
    route_keys,
)

AI_GATEWAY: Final = "aigateway.envoyproxy.io"
AI_GATEWAY_VERSION: Final = f"{AI_GATEWAY}/v1beta1"
# What a third party never receives: which tenant calls (the caller header) and
# from where (Envoy appends the caller's address to X-Forwarded-For,
# useRemoteAddress being on). AI Gateway's header mutation cannot remove its
# own x-ai-eg-* headers (internal/headermutator/header_mutator.go:119-123 at
# v1.1.0): x-ai-eg-model, the caller's model name (<namespace>/<service>),
# still reaches the provider (see SECURITY.md), as do x-fleetgate-tier and
# x-fleetgate-endpoint: a header a backend sets cannot also be removed. Nor can
# it remove Envoy's x-envoy-external-address: Envoy ignores an external
# processor's change to an x-envoy-* header unless its mutation_rules allow it,
# which AI Gateway v1.1.0 never sets. The fleet gateway's route configuration
# removes that one for every backend (inference_gateway/builders.py).
THIRD_PARTY_REMOVED: Final = (CALLER_HEADER, GATEWAY_HEADER, "x-forwarded-for")
# The Secret key Envoy AI Gateway reads an API key from.
API_KEY: Final = "apiKey"

_LLM_REQUEST_COSTS: Final = (
    (INPUT_TOKENS_KEY, "InputToken"),
    (CACHED_INPUT_TOKENS_KEY, "CachedInputToken"),
    (OUTPUT_TOKENS_KEY, "OutputToken"),
    (TOTAL_TOKENS_KEY, "TotalToken"),
)


# Envoy's overprovisioning factor (percent, default 140) lets a priority level
# keep all its traffic only while healthy hosts x factor >= 100% of its hosts:
# at 140 a tier under ~72% healthy already sheds load to the next. At 100000
# a tier keeps every request while one of up to 1000 hosts is healthy.
OVERPROVISIONING_FACTOR: Final = 100_000


# --- manifests -----------------------------------------------------------------


def _manifest(api_version: str, kind: str, name: str, **body: Any) -> Manifest:
    """A remote object in the system namespace of the gateway's cluster."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        **body,
    }


def ai_gateway_route(
    service: Service, gateway: RouteGateway, backends: Sequence[RouteBackend]
) -> Manifest:
    """The AIGatewayRoute: requests naming the model go to its backends by weight and priority."""
    backend_refs = []
    for b in backends:
        ref: dict[str, Any] = {
            "name": backend_name(service, gateway.name, b.endpoint),
            "weight": b.weight,
            "priority": b.priority,
            # Each attempt carries its tier and endpoint into the usage record
            # and the metrics (inference_cluster/stack.py): which one answered.
            "headerMutation": {
                "set": [
                    {"name": TIER_HEADER, "value": str(b.priority)},
                    {"name": ENDPOINT_HEADER, "value": b.endpoint},
                ]
            },
        }
        if b.model_name_override:
            ref["modelNameOverride"] = b.model_name_override
        backend_refs.append(ref)
    parent = {"group": GATEWAY_API, "kind": "Gateway", "name": gateway.gateway_name}
    if gateway.section_name:
        parent["sectionName"] = gateway.section_name
    return _manifest(
        AI_GATEWAY_VERSION,
        "AIGatewayRoute",
        route_name(service, gateway, backends),
        spec={
            "parentRefs": [parent],
            "rules": [
                {
                    # Exact: only exact matches are listed by /v1/models.
                    "matches": [
                        {
                            "headers": [
                                {"type": "Exact", "name": MODEL_HEADER, "value": service.model}
                            ]
                        }
                    ],
                    "backendRefs": backend_refs,
                    "timeouts": {"request": gateway.request_timeout},
                    # Resets a backend that stalls before its first byte, so a
                    # retry can move on to the next priority.
                    "streamIdleTimeout": gateway.stream_idle_timeout,
                }
            ],
            # Declaring the costs is also what makes the gateway ask a
            # streaming backend for usage, so the usage record has tokens;
            # the priced ones give it a cost and count cost limits.
            "llmRequestCosts": [
                *({"metadataKey": key, "type": type_} for key, type_ in _LLM_REQUEST_COSTS),
                *llm_request_costs(
                    [(i, b.pricing) for i, b in enumerate(backends) if b.pricing is not None]
                ),
            ],
        },
    )


def route_name(service: Service, gateway: RouteGateway, backends: Sequence[RouteBackend]) -> str:
    """The name of the AIGatewayRoute naming ``backends`` (``naming.ai_gateway_route_name``)."""
    return ai_gateway_route_name(service, gateway.name, [b.endpoint for b in backends])


def generated_route(route: str) -> Manifest:
    """The HTTPRoute Envoy AI Gateway writes for the AIGatewayRoute (same name), to observe.

    Envoy Gateway reports on that HTTPRoute, not on the AIGatewayRoute: a
    Backend it cannot resolve (a CA ConfigMap or client certificate not on the
    cluster yet) shows only there, as ResolvedRefs False, while the
    AIGatewayRoute and its Backends still read Accepted. Observed only: AI
    Gateway owns it (``spec`` is empty because the schema requires one; an
    Observe Object never applies it).
    """
    return _manifest(f"{GATEWAY_API}/v1", "HTTPRoute", route, spec={})


def xds_cluster_name(route: str) -> str:
    """The Envoy cluster Envoy Gateway makes of the generated HTTPRoute's (first) rule."""
    return f"httproute/{SYSTEM_NAMESPACE}/{route}/rule/0"


def strict_tiers(route: str, gateway: RouteGateway) -> Manifest:
    """An EnvoyPatchPolicy making priority tiers strict on the route's Envoy cluster.

    Envoy Gateway applies JSON patches before it calls AI Gateway's extension
    server, which then sets each locality's priority and metadata but never
    ``load_assignment.policy``: the factor survives. Needs
    ``extensionApis.enableEnvoyPatchPolicy`` in the Envoy Gateway
    configuration; without it the policy reads Accepted False (Disabled).
    """
    factor = envoypatch.patch(
        envoypatch.CLUSTER,
        xds_cluster_name(route),
        op="add",
        path="/load_assignment/policy",
        value={"overprovisioning_factor": OVERPROVISIONING_FACTOR},
    )
    return _patch_policy(route, gateway, [factor])


def _patch_policy(name: str, gateway: RouteGateway, patches: list[Manifest]) -> Manifest:
    return _manifest(
        ENVOY_GATEWAY_API,
        envoypatch.KIND,
        name,
        spec=envoypatch.spec(gateway.gateway_name, patches),
    )


# Envoy Gateway takes at most 256 values per header match of a principal
# (api/v1alpha1/authorization_types.go:184-189, v1.8.3): longer lists are
# split over rules, any of which allows.
PRINCIPAL_VALUES_MAX: Final = 256


def caller_access(route: str, callers: Sequence[str]) -> Manifest:
    """Only the allowed callers reach the model: a policy on the HTTPRoute AI Gateway generates.

    The caller is the identity the gateway's API-key authentication stamps in
    ``x-fleetgate-caller`` (the gateway removes any the request brings).
    ``StrategicMerge`` merges this into the gateway's own policy instead of
    replacing it, so the route keeps its authentication (a route-level policy
    without a merge type takes the Gateway's place: internal/gatewayapi/
    securitypolicy.go:389-398, 440-441, 2579-2588 at v1.8.3). Everyone else is denied,
    and with no caller nobody is allowed.
    """
    rules = [
        {
            "name": f"allowed-callers-{i // PRINCIPAL_VALUES_MAX}",
            "action": "Allow",
            "principal": {
                "headers": [
                    {"name": CALLER_HEADER, "values": list(callers[i : i + PRINCIPAL_VALUES_MAX])}
                ]
            },
        }
        for i in range(0, len(callers), PRINCIPAL_VALUES_MAX)
    ]
    authorization = {"defaultAction": "Deny", **({"rules": rules} if rules else {})}
    return _route_policy(route, "SecurityPolicy", authorization=authorization)


def _route_policy(route: str, kind: str, **spec: Any) -> Manifest:
    """An Envoy Gateway policy on the generated HTTPRoute, merged into the gateway's own."""
    return _manifest(
        ENVOY_GATEWAY_API,
        kind,
        route,
        spec={
            "targetRefs": [{"group": GATEWAY_API, "kind": "HTTPRoute", "name": route}],
            "mergeType": "StrategicMerge",
            **spec,
        },
    )


def caller_traffic(route: str, gateway: str, limits: Sequence[ResolvedLimit]) -> Manifest:
    """How much each caller may use of this model here, and what a refused caller reads.

    A traffic policy on the HTTPRoute AI Gateway generates: the limits as
    rate-limit rules (none when none applies to anyone), and the gateway's JSON bodies
    for what Envoy answers itself (``answers.responses``: the same on every route).
    Merged (``StrategicMerge``) into the gateway's traffic policy rather than replacing
    it, so the route
    keeps its retries, outlier detection and the gateway's limits: Envoy
    Gateway merges the two policies' rules by name (internal/gatewayapi/
    backendtrafficpolicy.go:845-885, internal/ir/xds.go:2571-2574 at v1.8.3).
    """
    spec: dict[str, Any] = {"responseOverride": responses(gateway)}
    rules = rate_limit_rules(limits, shared=False)
    if rules:
        spec["rateLimit"] = {"global": {"rules": rules}}
    return _route_policy(route, "BackendTrafficPolicy", **spec)


def answers_counted(route: str, gateway: RouteGateway, reads: Sequence[AnswerRead]) -> Manifest:
    """Every answer on this route counts against the callers' token and cost limits here,
    a third party's too (``governance.answer_reads`` says why it would not).

    A route's own rules are not shared: Envoy Gateway keeps them in the
    listener's own rate-limit filter, counting rules from 0 in each route
    (internal/xds/translator/ratelimit.go:193-201, 801-816 at v1.8.3), so the
    patch reaches only the routes that forward to this route's cluster.
    """
    listener = gateway.section_name or HTTP_LISTENER
    patches = answer_patches(
        f"{SYSTEM_NAMESPACE}/{gateway.gateway_name}/{listener}",
        RATE_LIMIT_FILTER,
        reads,
        routes=f"?(@.route.cluster == '{xds_cluster_name(route)}')",
    )
    return _patch_policy(f"{route}-counted", gateway, patches)


def backend(service: Service, gateway: str, b: RouteBackend) -> Manifest:
    """Where the endpoint is: always by name (``fqdn``), never by address."""
    spec: dict[str, Any] = {"endpoints": [{"fqdn": {"hostname": b.host, "port": b.port}}]}
    if b.tls == "Mutual" and b.cluster is not None:
        # Mutual TLS to the cluster gateway: its CA (a ConfigMap the gateway
        # function keeps on this cluster) and this gateway's client certificate.
        spec["tls"] = {
            "caCertificateRefs": [
                {"group": "", "kind": "ConfigMap", "name": gateway_cluster_ca(gateway, b.cluster)}
            ],
            "sni": b.host,
            "clientCertificateRef": {
                "group": "",
                "kind": "Secret",
                "name": gateway_client_certificate(gateway),
            },
        }
    elif b.tls == "System":
        spec["tls"] = {"wellKnownCACertificates": "System", "sni": b.host}
    return _manifest(
        ENVOY_GATEWAY_API,
        "Backend",
        backend_name(service, gateway, b.endpoint),
        spec=spec,
    )


def ai_service_backend(service: Service, gateway: str, b: RouteBackend) -> Manifest:
    """The API the endpoint speaks, over its Backend."""
    name = backend_name(service, gateway, b.endpoint)
    spec: dict[str, Any] = {
        "schema": {"name": b.schema_, "prefix": b.prefix},
        "backendRef": {"group": ENVOY_GATEWAY, "kind": "Backend", "name": name},
    }
    if b.tls != "Mutual":
        # A third party: never tell it which tenant is calling, nor from where.
        spec["headerMutation"] = {"remove": list(THIRD_PARTY_REMOVED)}
    return _manifest(AI_GATEWAY_VERSION, "AIServiceBackend", name, spec=spec)


def security_policy(service: Service, gateway: str, b: RouteBackend) -> Manifest:
    """The endpoint's API key, attached to its AIServiceBackend.

    Anthropic reads the key from ``x-api-key``, everyone else from
    ``Authorization``: the policy type picks the header.
    """
    name = backend_name(service, gateway, b.endpoint)
    secret_ref = {"secretRef": {"name": api_key_name(service, gateway, b.endpoint)}}
    spec: dict[str, Any]
    if b.schema_ == "Anthropic":
        spec = {"type": "AnthropicAPIKey", "anthropicAPIKey": secret_ref}
    else:
        spec = {"type": "APIKey", "apiKey": secret_ref}
    spec["targetRefs"] = [{"group": AI_GATEWAY, "kind": "AIServiceBackend", "name": name}]
    return _manifest(AI_GATEWAY_VERSION, "BackendSecurityPolicy", name, spec=spec)


def api_key_secret(service: Service, gateway: str, b: RouteBackend) -> Manifest:
    """The Secret the policy reads: no value here, provider-kubernetes patches it in."""
    return _manifest("v1", "Secret", api_key_name(service, gateway, b.endpoint), type="Opaque")


# --- everything one ModelRoute composes ----------------------------------------------


def model_route_objects(
    service: Service,
    gateway: RouteGateway,
    backends: Sequence[RouteBackend],
    access: RouteAccess | None = None,
    alert: FailoverAlert | None = None,
    *,
    routed: Sequence[RouteBackend] | None = None,
) -> dict[str, Manifest]:
    """Every Object composed onto the gateway's cluster, by composition resource name.

    ``access``: who may call and how much; None, anyone the gateway
    authenticates, within the gateway's own limits. ``alert``: the failover
    alerts, composed when the route has a tier to fail over to or a priced endpoint.
    ``routed``: the backends the AIGatewayRoute names (all of them if None);
    none, and there is no AIGatewayRoute, nor anything named after it.
    """
    gw = gateway.name

    def remote(manifest: Manifest, *, watch: bool | None = None) -> Manifest:
        # Readiness follows the kind: each of these reports an Accepted
        # condition, which the ModelRoute reads back, so each is watched.
        return remote_object(
            manifest=manifest, provider_config=gateway.provider_config_name, watch=watch
        )

    named = backends if routed is None else routed
    objects: dict[str, Manifest] = {}
    if named:
        keys = route_keys([b.endpoint for b in named])
        route = route_name(service, gateway, named)
        objects[keys.route] = remote(ai_gateway_route(service, gateway, named))
        objects[keys.generated] = remote_object(
            manifest=generated_route(route),
            provider_config=gateway.provider_config_name,
            observe_only=True,
            watch=None,
        )
        # Ready once created (Envoy Gateway may refuse it and the route still
        # serves), but its status is read back for StrictTiers.
        objects[keys.tiers] = remote(strict_tiers(route, gateway), watch=True)
        if access is not None:
            objects[keys.traffic] = remote(caller_traffic(route, gw, access.limits))
            objects[keys.access] = remote(caller_access(route, access.callers))
            reads = answer_reads(access.limits)
            if reads:
                objects[keys.counted] = remote(answers_counted(route, gateway, reads), watch=True)
    rule = None if alert is None else prometheus_rule(service, gw, backends, alert)
    if rule is not None:
        objects[FAILOVER_ALERTS_KEY] = remote(rule)
    for b in backends:
        objects[endpoint_key(b.endpoint, "backend")] = remote(backend(service, gw, b))
        objects[endpoint_key(b.endpoint, "ai-service-backend")] = remote(
            ai_service_backend(service, gw, b)
        )
        if b.credential is not None:
            objects[endpoint_key(b.endpoint, "security-policy")] = remote(
                security_policy(service, gw, b)
            )
            objects[endpoint_key(b.endpoint, "api-key")] = api_key_object(
                service, gateway, b, b.credential
            )
    return objects


def api_key_object(
    service: Service, gateway: RouteGateway, b: RouteBackend, ref: SecretKeyRef
) -> Manifest:
    """The endpoint's credential, copied onto the gateway's cluster by provider-kubernetes.

    ``patchesFrom`` reads the key from the endpoint's Secret on the control
    plane at apply time, into the one key AI Gateway reads, so the value is
    never written into the desired state (this function reads no value).
    """
    # A Secret has no status: the Object is ready once it exists.
    return remote_object(
        manifest=api_key_secret(service, gateway.name, b),
        provider_config=gateway.provider_config_name,
        secret_patches=[
            secret_patch(secret=ref.name, namespace=service.namespace, key=ref.key, to_key=API_KEY)
        ],
    )
