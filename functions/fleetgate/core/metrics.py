"""The Prometheus series Fleetgate's alerts and dashboard read, as Envoy AI Gateway emits them.

Envoy AI Gateway v1.1.0's external processor (a container in each fleet
gateway's Envoy pod) records OpenTelemetry GenAI metrics and serves them
through the OpenTelemetry Prometheus exporter v0.66.0 with its default
translation (cmd/extproc/mainlib/main.go:292-303): dots in names and labels
become underscores, the unit ``s`` a ``_seconds`` suffix, a histogram's count
``_count`` (the shapes were read off that exporter, run in a scratch module).

- ``gen_ai.server.request.duration`` (internal/metrics/genai.go): recorded once
  per request, through the router filter, with the request headers of the
  attempt that answered; ``error.type`` is added when that answer was not a
  2xx (internal/extproc/processor_impl.go:169-187, 538-551;
  internal/metrics/metrics_impl.go:131-145).
- ``gen_ai.client.token.usage``: tokens per request by ``gen_ai.token.type``
  (metrics_impl.go:148-180).

Both carry ``gen_ai.original.model``, the model name the client sent (the
ModelService's ``<namespace>/<name>``; ``gen_ai.request.model`` is the served
name after a rewrite, processor_impl.go:704-709), and the labels the stack maps
from Fleetgate's request headers (inference_cluster/stack.py METRIC_HEADERS):
the tier, the endpoint and the gateway, never the caller. Per-caller figures
are the usage record's (each fleet gateway's access log names the caller).
"""

from typing import Final

REQUESTS: Final = "gen_ai_server_request_duration_seconds_count"
# Seconds spent answering, summed: its rate is the requests in flight (Little's law).
REQUEST_SECONDS: Final = "gen_ai_server_request_duration_seconds_sum"
TOKENS: Final = "gen_ai_client_token_usage_sum"

MODEL: Final = "gen_ai_original_model"
TOKEN_TYPE: Final = "gen_ai_token_type"
# gen_ai.token.type values (internal/metrics/genai.go); input includes cached input.
INPUT, CACHED_INPUT, OUTPUT = "input", "cached_input", "output"
ERROR_TYPE: Final = "error_type"
# OpenTelemetry attribute names as Prometheus labels (constants.TIER_ATTRIBUTE...).
TIER: Final = "fleetgate_tier"
GATEWAY: Final = "fleetgate_gateway"
ENDPOINT: Final = "fleetgate_endpoint"

# Recorded by the PrometheusRules the ModelRoutes compose (model_service/alerts.py):
# a service's spend per second on a gateway, in the currency of the endpoints'
# prices, one series per priced endpoint and token type (labels namespace,
# modelservice, gateway, fleetgate_endpoint, gen_ai_token_type).
COST_RATE: Final = "fleetgate:modelservice_cost:rate5m"
