"""End-to-end helpers: the pinned upstream CRD set and schema validation with the Crossplane CLI."""
