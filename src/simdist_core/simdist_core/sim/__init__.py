"""simdist_core.sim."""
