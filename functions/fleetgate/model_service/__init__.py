"""compose-model-service: route a public model name on every fleet gateway that selects it."""
