"""simdist_core.planning: batched MPPI over the latent world model."""

from simdist_core.planning.mppi import PRESETS, MPPIPlanner, PlannerConfig, PlanResult, planner_preset

__all__ = ["PRESETS", "MPPIPlanner", "PlanResult", "PlannerConfig", "planner_preset"]
