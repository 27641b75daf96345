"""The typed models of each XR kind, a module a kind, imported through fleetgate.core.models."""
