"""Shared set-up of the diagnostics that time a planner loop: the checkpoint's MPPI planner, warm, on one latent."""

from __future__ import annotations

import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.eval.rollout import ObservationHistory
from simdist_core.planning import MPPIPlanner, PlannerConfig
from simdist_core.sim.base import make_env


def warm_planner(checkpoint: str, task: str, warmup_ticks: int = 20) -> tuple:
    """(model, manifest, planner, latent), the planner warmed up by ``warmup_ticks`` plans.

    The checkpoint's stored MPPI config (else the default) on 1 torch thread, planning from the encoded first
    observation of ``task`` (seed 0).
    """
    torch.set_num_threads(1)
    model, manifest = load_checkpoint(checkpoint)
    planner = MPPIPlanner(model, PlannerConfig(**manifest.planner_config) if manifest.planner_config else None)
    env = make_env(task)
    history = ObservationHistory(env.spec)
    history.reset(env.reset(seed=0))
    with torch.inference_mode():
        latent = model.encode(history.model_input("cpu"))
    for _ in range(warmup_ticks):
        planner.plan_latent(latent, predict_mean=False)
    return model, manifest, planner, latent
