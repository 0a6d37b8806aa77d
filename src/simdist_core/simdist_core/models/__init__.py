"""simdist_core.models."""
