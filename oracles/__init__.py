"""What judges the data plane where no request is sent: Envoy Gateway's own translator
(``translate``) and what its xDS says the gateways do (``dataplane``), the descriptors
Envoy sends its rate-limit service (``ratelimits``), Prometheus's rule engine
(``promtool``), AI Gateway's cost evaluation (``llmcostcel``), and the search for Secret
values outside Secrets (``secretsearch``)."""
