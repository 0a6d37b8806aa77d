"""simdist_core.planning."""
