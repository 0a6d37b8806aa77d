"""simdist_core.data."""
