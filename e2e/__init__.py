"""The end-to-end walks and drills: the example fleet walked offline through the real
Crossplane CLI (``walk``, ``render``), the facts and drills shared with the real control
plane (``fleetcheck``, ``fleetdrills``, through ``driver``), and the real control plane
itself (``controlplane``)."""
