"""Benchmarks of the five Fleetgate composition functions (``python -m bench``; not tests).

Reference workloads from a small fleet to the API's maxima are settled
in-process the way Crossplane would reconcile them, then each function is
measured on the steady-state request: per-call latency in-process and over
gRPC, against the floor of encoding and decoding the same response; response
size against Crossplane's 4 MiB limit; how cost grows; cold start against a
minimal function on the same SDK; 50 concurrent callers; peak memory.
"""
