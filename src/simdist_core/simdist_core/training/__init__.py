"""simdist_core.training."""
