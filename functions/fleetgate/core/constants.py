"""Names fixed by the API contract (api.md); one place so nothing drifts."""

from typing import Final

API_GROUP: Final = "fleetgate.dev"
API_VERSION: Final = f"{API_GROUP}/v1alpha1"

# Control-plane namespace of cluster-scoped XRs' Secrets, and the namespace of
# every object Fleetgate composes onto a workload cluster.
SYSTEM_NAMESPACE: Final = "fleetgate-system"

CALLER_HEADER: Final = "x-fleetgate-caller"
# Set on each attempt by the backend it goes to (the AIGatewayRoute's backendRef
# header mutation): the priority tier, after renumbering, of the endpoint that
# answered. Set by the gateway's listener, for every request: which fleet
# gateway it came through. AI Gateway turns both into metric labels, and the
# tier (and the caller) into usage-record metadata: see inference_cluster/stack.py.
TIER_HEADER: Final = "x-fleetgate-tier"
# Set likewise by each backend: the ModelEndpoint that answered, so the metrics
# can price its tokens (the failover alerts' cost series).
ENDPOINT_HEADER: Final = "x-fleetgate-endpoint"
GATEWAY_HEADER: Final = "x-fleetgate-gateway"
MODEL_HEADER: Final = "x-ai-eg-model"
SERVED_MODEL_ENV: Final = "FLEETGATE_SERVED_MODEL_NAME"

LABEL_PREFIX: Final = f"{API_GROUP}/"
LABEL_CLUSTER: Final = f"{LABEL_PREFIX}cluster"
LABEL_DEPLOYMENT: Final = f"{LABEL_PREFIX}deployment"
# On a fleet-hosted ModelEndpoint whose engine may scale to zero (its cluster's share of
# spec.scaling.minReplicas is 0), and, while no engine there serves, "asleep": routes
# leave it out unless every endpoint of the service sleeps (then its callers get 503
# with Retry-After while it wakes).
LABEL_SCALES_TO_ZERO: Final = f"{LABEL_PREFIX}scales-to-zero"
LABEL_ASLEEP: Final = f"{LABEL_PREFIX}asleep"

# The fleet gateway's TLS listener. With TLS, model routes attach to it alone: a
# route without a sectionName attaches to every listener, the plain-HTTP one
# included, and API keys and prompts would be accepted in cleartext.
HTTPS_LISTENER: Final = "https"
# Its plain-HTTP listener: /healthz by address, and models on a gateway without TLS.
HTTP_LISTENER: Final = "http"

OBJECT_API_VERSION: Final = "kubernetes.m.crossplane.io/v1alpha1"
GATEWAY_API: Final = "gateway.networking.k8s.io"
ENVOY_GATEWAY: Final = "gateway.envoyproxy.io"
ENVOY_GATEWAY_API: Final = f"{ENVOY_GATEWAY}/v1alpha1"

# Envoy AI Gateway writes per-request token counts into dynamic metadata under
# this namespace, at the keys a route's llmRequestCosts declare. The route
# (compose-model-service) declares them; the usage record (the fleet
# gateway's access log, compose-inference-gateway) reads them back.
AI_GATEWAY_METADATA_NAMESPACE: Final = "io.envoy.ai_gateway"
INPUT_TOKENS_KEY: Final = "llm_input_token"
OUTPUT_TOKENS_KEY: Final = "llm_output_token"
TOTAL_TOKENS_KEY: Final = "llm_total_token"
CACHED_INPUT_TOKENS_KEY: Final = "llm_cached_input_token"
# What a request cost, in millionths of the endpoints' currency (the usage
# record's cost), and in thousandths (the counter of a budget too large for
# millionths): see fleetgate.core.governance.
COST_KEY: Final = "cost"
COST_MILLI_KEY: Final = "cost_milli"
# Where AI Gateway's logRequestHeaderAttributes put the caller and the tier.
CALLER_METADATA_KEY: Final = "caller"
TIER_METADATA_KEY: Final = "tier"
# The metric labels AI Gateway's metricsRequestHeaderAttributes give its GenAI
# series (OpenTelemetry attribute names; the Prometheus exporter turns the dots
# into underscores: fleetgate_tier, fleetgate_gateway, fleetgate_endpoint). The
# caller is not one of them: see inference_cluster/stack.py METRIC_HEADERS.
TIER_ATTRIBUTE: Final = "fleetgate.tier"
GATEWAY_ATTRIBUTE: Final = "fleetgate.gateway"
ENDPOINT_ATTRIBUTE: Final = "fleetgate.endpoint"

# An InferenceCluster's Connected reason once provider-kubernetes said why it cannot
# reach the cluster: compose-inference-cluster reports it, and placement stops waiting
# for the cluster to join (model_deployment/fleet.is_joining).
CLUSTER_CANNOT_CONNECT: Final = "CannotConnect"

# The reason Crossplane gives every condition a function set when the XR's pipeline
# fails (the function could not be called, or answered fatally): status Unknown, "A
# fatal error occurred before the status of this condition could be determined"
# (v2.4.0 internal/controller/apiextensions/composite/reconciler.go:790-802). A peer's
# condition so marked says nothing about the peer: read it as not known yet.
CROSSPLANE_FATAL_ERROR: Final = "FatalError"
