"""devcluster."""
