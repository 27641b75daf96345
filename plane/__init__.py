"""The real local plane: a control plane and workload clusters as local processes (etcd,
API servers, Crossplane, provider-kubernetes, Envoy Gateway, AI Gateway, the rate-limit
service), the pods their controllers make (each Gateway's Envoy with AI Gateway's
external processor), the engines and providers behind them, the network between them,
and the few stand-ins (``standins``, ``runtime``) for what cannot run here. Nothing here
judges: the drills that drive it are in ``e2e/realplane``."""
