"""compose-inference-gateway: the fleet gateway, everything gateway-scoped on its cluster."""
