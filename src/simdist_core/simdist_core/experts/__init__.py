"""simdist_core.experts."""
