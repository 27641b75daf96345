"""Console script ``compose-model-deployment``."""

from fleetgate.core.startup import fast_imports

with fast_imports():
    from fleetgate.core.runner import command
    from fleetgate.model_deployment.composer import compose

cli = command("compose-model-deployment", compose)

if __name__ == "__main__":
    cli()
