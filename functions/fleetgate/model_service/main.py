"""Console script ``compose-model-service``."""

from fleetgate.core.startup import fast_imports

with fast_imports():
    from fleetgate.core.runner import command
    from fleetgate.model_service.composer import compose

cli = command("compose-model-service", compose)

if __name__ == "__main__":
    cli()
