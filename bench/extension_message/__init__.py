"""The extension message benchmark: Envoy Gateway to AI Gateway, by services per gateway."""
