"""compose-model-deployment: place a model on the fleet, run it behind each cluster gateway."""
