"""Names fixed by the API contract (api.md); one place so nothing drifts."""

from typing import Final

API_GROUP: Final = "fleetgate.dev"
API_VERSION: Final = f"{API_GROUP}/v1alpha1"

# Control-plane namespace of cluster-scoped XRs' Secrets, and the namespace of
# every object Fleetgate composes onto a workload cluster.
SYSTEM_NAMESPACE: Final = "fleetgate-system"

CALLER_HEADER: Final = "x-fleetgate-caller"
MODEL_HEADER: Final = "x-ai-eg-model"
SERVED_MODEL_ENV: Final = "FLEETGATE_SERVED_MODEL_NAME"

LABEL_PREFIX: Final = f"{API_GROUP}/"
LABEL_CLUSTER: Final = f"{LABEL_PREFIX}cluster"
LABEL_DEPLOYMENT: Final = f"{LABEL_PREFIX}deployment"

# The fleet gateway's TLS listener. With TLS, model routes attach to it alone: a
# route without a sectionName attaches to every listener, the plain-HTTP one
# included, and API keys and prompts would be accepted in cleartext.
HTTPS_LISTENER: Final = "https"

OBJECT_API_VERSION: Final = "kubernetes.m.crossplane.io/v1alpha1"

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
