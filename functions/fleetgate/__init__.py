"""Fleetgate: Crossplane composition functions that serve models across a fleet of clusters."""
