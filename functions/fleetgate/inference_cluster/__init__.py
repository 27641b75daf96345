"""compose-inference-cluster: register a workload cluster with the fleet."""
