"""The library every Fleetgate function stands on.

Typed XR models, the remote-Object wrapper, bounded names, conditions and
results, required-resource resolution and the gRPC runner live here so that
each function is only its own composition logic.
"""
