"""simdist_core.eval."""
