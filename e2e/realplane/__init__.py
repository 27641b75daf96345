"""The fleet on the real local plane (``plane``): ``python -m e2e.realplane e2e`` applies
examples/fleet, waits until it converges and runs every drill on it (``make e2e``);
``up``, ``down`` and ``routes`` leave it running, stop it, print its routes."""
