"""compose-model-endpoint: judge whether a ModelEndpoint is usable; compose nothing."""
