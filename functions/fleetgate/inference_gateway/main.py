"""Console script ``compose-inference-gateway``."""

from fleetgate.core.startup import fast_imports

with fast_imports():
    from fleetgate.core.runner import command
    from fleetgate.inference_gateway.composer import compose

cli = command("compose-inference-gateway", compose)

if __name__ == "__main__":
    cli()
