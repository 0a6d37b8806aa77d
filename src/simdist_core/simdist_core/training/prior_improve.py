"""Improving the policy prior through the adapted model: beyond the published method, off unless called.

Why: dynamics-only finetuning leaves the policy prior as distilled in simulation. The UR5e planner ranks plans
by the model's return minus ``prior_weight`` times their distance from the prior's plan, so with the tight tie
it deploys (1000) the adapted dynamics can move the executed plan only a little away from what the
unadapted prior asks for; with a loose tie the search exploits the model instead
(``bench_results/UR5E_MILD_SHIFT_PRIOR_TIE.md``). This trains the prior alone to maximise the planner's own
objective on the states the robot lived,

    J(pi) = E_z [ G(pi(z)) - lambda * mean_t ||pi(z)_t - pi0(z)_t||^2 ],

where ``G`` is the adapted model's discounted return (reward and value heads and dynamics frozen), ``pi0`` the
prior before this update and ``lambda`` the planner's ``prior_weight``: what one MPPI tick searches for, learnt
over all the lived states, so the next tick's search starts from it. TD-MPC2 trains its prior to maximise the
model's value in the same way (with an entropy term where this has the tie to ``pi0``). It needs no label a
robot lacks: start states come from the encoder on the lived observations.

A gate, like dynamics finetuning's: the new prior is used only if its held-out objective (on the newest
windows) is higher than the old prior's. The model judges both, so the gate cannot see model exploitation;
only a closed-loop evaluation can.

Measured (``bench_results/UR5E_MILD_SHIFT_PRIOR_IMPROVE.md``): on the UR5e milder stand-in every gate passed and
the closed loop collapsed, 0.65 -> 0.033 success against the dynamics-only checkpoints it started from (0 paired
wins, 37 losses): the prior learnt what the frozen reward and value heads overrate. No command or node uses it;
it stays as the tested record of that result.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.models.world_model import Latent, freeze_except
from simdist_core.planning.mppi import MPPIPlanner, PlannerConfig
from simdist_core.training.adapt import fixed_batches, recent_split
from simdist_core.training.common import OptimConfig, lr_at, make_optimizer

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class PriorImprovementConfig:
    """Gradient ascent on the planner's objective, policy prior only (defaults: the dynamics finetune's budget)."""

    steps: int = 300
    """Optimizer updates."""
    batch_size: int = 32
    """Start states per update."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=2e-4, warmup_steps=30, cosine=False))
    """Optimizer and schedule (the dynamics finetune's)."""
    holdout_fraction: float = 0.2
    """Newest fraction of the stored steps held out for the gate."""
    holdout_windows: int = 256
    """Held-out start states the gate scores."""
    seed: int = 0
    """Seed of start-state sampling."""

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.holdout_windows < 1:
            raise ValueError(f"steps, batch_size and holdout_windows must be >= 1, got {self}")
        if not 0.0 < self.holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction=}")


@dataclass
class PriorImprovementReport:
    """What one call did; ``passed`` says whether the new prior should be used."""

    passed: bool
    old_objective: float
    """Mean planner objective of the old prior's plans on the held-out start states (model's units)."""
    new_objective: float
    """The same for the new prior (its distance from the old prior's plan penalised)."""
    new_distance: float
    """Mean over held-out states of mean_t ||pi_t - pi0_t||^2: how far the prior moved."""
    steps: int
    n_train_windows: int
    n_holdout_windows: int
    wall_s: float
    history: list[float] = field(default_factory=list)
    """Training objective per update."""

    def to_json(self) -> dict:
        """JSON-ready summary (no history)."""
        return {k: v for k, v in self.__dict__.items() if k != "history"}


def _start_latents(model: torch.nn.Module, batch: dict) -> Latent:
    """Encoder latents of each window's first step (no gradient: the encoder is frozen)."""
    with torch.no_grad():
        return model.encode({k: v[:, 0] for k, v in batch["obs"].items()})


def _objective(planner: MPPIPlanner, latent: Latent, anchor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(Planner objective (B,), distance from ``anchor`` (B,)) of the current prior's plans from ``latent``."""
    h = planner.cfg.horizon
    plan = planner.model.pi(latent)[:, :h]
    return planner.objective(latent, plan, anchor), (plan - anchor).pow(2).sum(-1).mean(-1)


def improve_prior(
    model: torch.nn.Module,
    data: Dataset,
    planner_cfg: PlannerConfig,
    cfg: PriorImprovementConfig | None = None,
) -> tuple[torch.nn.Module, PriorImprovementReport]:
    """Train a copy of ``model``'s policy prior on ``planner_cfg``'s objective from ``data``'s start states.

    Args:
        model: a (dynamics-adapted) ``WorldModel``; left unchanged.
        data: the lived experience (a step store with the model's observation layout; no labels needed).
        planner_cfg: the deployed planner's config: its horizon, discount, terminal value and ``prior_weight``.
        cfg: training settings.

    Returns:
        (new model, report): only the ``policy`` part differs from ``model``.

    Raises:
        ValueError: ``planner_cfg.prior_weight`` is 0 (nothing would keep the prior near the data), or too
            little data to split.
    """
    cfg = cfg or PriorImprovementConfig()
    if not planner_cfg.prior_weight > 0:
        raise ValueError("improve_prior needs a planner with prior_weight > 0: the tie keeps the prior near its data")
    start = time.perf_counter()
    sampler = WindowSampler(data, model.spec, batch_size=cfg.batch_size, seed=cfg.seed)
    train, hold = recent_split(sampler, cfg.holdout_fraction)
    holdout = [_start_latents(model, b) for b in fixed_batches(hold, cfg.holdout_windows, cfg.batch_size, cfg.seed)]

    new = copy.deepcopy(model).eval()
    params = freeze_except(new, ("policy",))
    optimizer = make_optimizer(params, cfg.optim)
    planner = MPPIPlanner(new, planner_cfg)
    old_policy = copy.deepcopy(model.policy).eval()

    def anchor(latent: Latent) -> torch.Tensor:
        with torch.no_grad():
            return old_policy(latent.z, latent.context)[:, : planner_cfg.horizon]

    history = []
    for step in range(cfg.steps):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg.steps, cfg.optim)
        latent = _start_latents(new, train.sample())
        objective, _ = _objective(planner, latent, anchor(latent))
        loss = -objective.mean()
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite planner objective at update {step}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.optim.grad_clip if cfg.optim.grad_clip > 0 else math.inf)
        optimizer.step()
        history.append(float(objective.mean().detach()))
    for p in new.parameters():
        p.requires_grad_(False)

    # Only the prior changed, so the new model scores the old prior's plans exactly as the old model does.
    old_values, new_values, distances = [], [], []
    with torch.no_grad():
        for latent in holdout:
            old_plan = anchor(latent)
            old_values.append(planner.objective(latent, old_plan, old_plan))
            objective, distance = _objective(planner, latent, old_plan)
            new_values.append(objective)
            distances.append(distance)
    old_obj, new_obj = float(torch.cat(old_values).mean()), float(torch.cat(new_values).mean())
    distance = float(torch.cat(distances).mean())
    passed = bool(np.isfinite(new_obj) and new_obj > old_obj)
    log.info("prior improvement: held-out planner objective %.3f -> %.3f (prior moved %.2e), gate %s",
             old_obj, new_obj, distance, "passed" if passed else "failed")  # fmt: skip
    report = PriorImprovementReport(
        passed=passed, old_objective=old_obj, new_objective=new_obj, new_distance=distance, steps=cfg.steps,
        n_train_windows=int(train.starts.size), n_holdout_windows=sum(int(lat.z.shape[0]) for lat in holdout),
        wall_s=time.perf_counter() - start, history=history,
    )  # fmt: skip
    return new, report
