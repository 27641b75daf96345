"""Console script ``compose-inference-cluster``."""

from fleetgate.core.startup import fast_imports

with fast_imports():
    from fleetgate.core.runner import command
    from fleetgate.inference_cluster.composer import compose

cli = command("compose-inference-cluster", compose)

if __name__ == "__main__":
    cli()
