"""Console script ``compose-model-endpoint``."""

from fleetgate.core.startup import fast_imports

with fast_imports():
    from fleetgate.core.runner import command
    from fleetgate.model_endpoint.composer import compose

cli = command("compose-model-endpoint", compose)

if __name__ == "__main__":
    cli()
