"""crds."""
