#!/usr/bin/env python3
r"""Does the planner pick the plans its model is most wrong about? Plans executed open loop in a copy of the sim.

The planner drives the task with one model (episode seeds 60,000+, the ``cpu`` preset). At every ``--stride``-th
step, from the state the planner just planned from, a set of H-step action sequences is scored twice:

* by the model, as the planner scores them: the discounted sum of the reward head along the predicted latents,
  and (Go2) the velocity-tracking term exp(-|v_xy - cmd_xy|^2 / sigma^2) with v read by the probe head off the
  predicted latents, averaged over the H steps;
* by the simulator: the same H actions executed open loop from an exact copy of the current simulator state
  (MuJoCo state copied with ``mj_copyData``; the copy's first step is checked against the real next step), the
  discounted sum of the task's true reward and the same tracking term from the true base velocity (0 after a fall).

The sequences: the plan the planner chose (its MPPI mean), the policy prior's noise-free plan, and
``--candidates`` Gaussian samples around the chosen plan with the planner's own sampling std (``max_std``),
clipped to the action bounds: what its search compares the chosen plan with.

Reported per model (JSON, with the per-state rows' summary):

* ``optimism``: predicted minus actual tracking, for the chosen plan, the prior's plan and the Gaussian samples.
  A chosen plan far more optimistic than the samples around it is the optimiser's curse: the search selects the
  model's errors.
* ``rank_correlation``: Spearman correlation, across the sequences of one state, between the model's and the
  simulator's discounted reward sums (and tracking terms), mean over states: does the model rank plans at all?
* ``chosen_is_best``: how often the chosen plan is the best of the set in the simulator, and the actual
  tracking of the chosen plan, the prior's plan and the set's best.

The same summary is repeated for the checks in the first second of each episode (the robot still upright).

    python scripts/diagnostics/plan_optimism.py --task go2/ptfe_slope --checkpoint bench_results/go2_v6_low_friction \\
        --episodes 10 --json /tmp/plan_optimism.json
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import mujoco
import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.config import parse_overrides
from simdist_core.eval.rollout import run_episode
from simdist_core.models.world_model import Latent
from simdist_core.planning.mppi import MPPIPlanner, planner_preset
from simdist_core.sim.base import make_env

# Python-side state of Go2Env that a step reads or writes (MuJoCo's own state is copied separately).
_ENV_FIELDS = ("_steps", "_prev_action", "_fell", "_falls", "_foot_slip_m", "_start_xy", "_progress_dir", "command")


def sync(shadow, env) -> None:  # noqa: ANN001 (Go2Env)
    """Make ``shadow`` (a deep copy of ``env`` made after the same reset) an exact copy of ``env``'s state now."""
    mujoco.mj_copyData(shadow.data, shadow.model, env.data)
    for name in _ENV_FIELDS:
        setattr(shadow, name, copy.deepcopy(getattr(env, name)))
    shadow._priv = shadow._core = None


def flat(obs: dict[str, np.ndarray]) -> np.ndarray:
    """An observation as one vector (keys in sorted order), for comparing two of them."""
    return np.concatenate([np.ravel(v) for _, v in sorted(obs.items())])


def tracking(velocity_xy: np.ndarray, command: np.ndarray, sigma: float) -> np.ndarray:
    """exp(-|v_xy - cmd_xy|^2 / sigma^2) per row of ``velocity_xy`` (..., 2)."""
    return np.exp(-np.sum((velocity_xy - command[:2]) ** 2, axis=-1) / sigma**2)


class OpenLoopChecker:
    """The planner behind ``run_episode``'s interface; every ``stride`` steps it scores plans in model and sim."""

    def __init__(self, env, planner: MPPIPlanner, stride: int, candidates: int, seed: int) -> None:  # noqa: ANN001
        self.env, self.planner, self.stride, self.candidates = env, planner, stride, candidates
        self.rng = torch.Generator().manual_seed(seed)
        self.sigma = env.config.rewards.tracking_sigma_m_s
        self.discounts = planner.cfg.discount ** np.arange(planner.cfg.horizon)
        self.rows: list[dict] = []
        self.sync_diffs: list[float] = []
        self.shadow = None
        self._expected_next: np.ndarray | None = None

    def reset(self) -> None:
        """New episode (the env was just reset): a fresh copy of it and a cold planner."""
        self.planner.reset()
        self.shadow, self.t = copy.deepcopy(self.env), 0

    def plan(self, obs: dict[str, torch.Tensor]):  # noqa: ANN201 (PlanResult)
        """Plan as the planner does; at every ``stride``-th step also score the plan set in model and sim."""
        with torch.inference_mode():
            latent = self.planner.model.encode(obs)
        result = self.planner.plan_latent(latent, predict_mean=False)
        if self.t % self.stride == 0:
            self._check(latent, torch.as_tensor(result.mean), result.action)
        self.t += 1
        return result

    def on_step(self, _obs, _action, result) -> None:  # noqa: ANN001
        """Compare the real next state with the copy's first step of the chosen plan (the sync check)."""
        if self._expected_next is not None:
            real = flat(result.obs)
            self.sync_diffs.append(float(np.max(np.abs(real - self._expected_next))))
            self._expected_next = None

    def _sequences(self, latent: Latent, chosen: torch.Tensor) -> tuple[torch.Tensor, list[str]]:
        cfg = self.planner.cfg
        with torch.inference_mode():
            prior = self.planner.model.pi(latent)[0, : cfg.horizon]
        noise = torch.randn(self.candidates, *chosen.shape, generator=self.rng)
        samples = (chosen + cfg.max_std * noise).clamp(-1.0, 1.0)
        return torch.cat([chosen[None], prior[None], samples]), ["chosen", "prior"] + ["sample"] * self.candidates

    def _check(self, latent: Latent, chosen: torch.Tensor, action: np.ndarray) -> None:
        model, command = self.planner.model, np.asarray(self.env.command, np.float64).copy()
        plans, kinds = self._sequences(latent, chosen)
        with torch.inference_mode():
            lat = Latent(latent.z.expand(len(plans), -1), latent.context.expand(len(plans), -1, -1))
            zs = model.predict(lat, plans)
            model_reward = (model.reward(lat, zs, plans).numpy() * self.discounts).sum(1)
            model_velocity = model.decode_probe(zs)[..., :2].numpy()
        model_tracking = tracking(model_velocity, command, self.sigma).mean(1)
        sim_reward, sim_tracking, fell = [], [], []
        for i, plan in enumerate(plans.numpy()):
            sync(self.shadow, self.env)
            rewards, tracks, down = np.zeros(len(plan)), np.zeros(len(plan)), False
            for k, a in enumerate(plan):
                step = self.shadow.step(a)
                if i == 0 and k == 0 and np.allclose(a, action):
                    self._expected_next = flat(step.obs)
                rewards[k] = step.reward
                tracks[k] = tracking(self.shadow.privileged_state()["probe"][:2], command, self.sigma)
                if step.terminated:
                    down = True
                    break
            sim_reward.append(float((rewards * self.discounts).sum()))
            sim_tracking.append(float(tracks.mean()))
            fell.append(down)
        self.rows.append({"t": self.t, "kinds": kinds, "model_reward": model_reward.tolist(), "sim_reward": sim_reward,
                          "model_tracking": model_tracking.tolist(), "sim_tracking": sim_tracking, "fell": fell})


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rank correlation (no ties expected in continuous returns; ties get arbitrary order)."""
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def summarise(rows: list[dict]) -> dict:
    """Optimism by kind, rank correlations, how often the chosen plan is the simulator's best."""
    out: dict = {"states": len(rows)}
    for kind in ("chosen", "prior", "sample"):
        pred = [m for r in rows for m, k in zip(r["model_tracking"], r["kinds"], strict=True) if k == kind]
        real = [s for r in rows for s, k in zip(r["sim_tracking"], r["kinds"], strict=True) if k == kind]
        falls = [f for r in rows for f, k in zip(r["fell"], r["kinds"], strict=True) if k == kind]
        out[kind] = {"predicted_tracking": float(np.mean(pred)), "actual_tracking": float(np.mean(real)),
                     "optimism": float(np.mean(np.subtract(pred, real))), "fell_within_horizon": float(np.mean(falls))}
    pairs = {"reward": ("model_reward", "sim_reward"), "tracking": ("model_tracking", "sim_tracking")}
    for name, (a, b) in pairs.items():
        rhos = [spearman(r[a], r[b]) for r in rows if np.ptp(r[b]) > 0 and np.ptp(r[a]) > 0]
        out[f"rank_correlation_{name}"] = {"mean": float(np.mean(rhos)) if rhos else None, "states": len(rhos)}
    out["chosen_is_best_by_sim_reward"] = float(np.mean([int(np.argmax(r["sim_reward"]) == 0) for r in rows]))
    out["best_in_set_actual_tracking"] = float(np.mean([max(r["sim_tracking"]) for r in rows]))
    out["chance_of_best"] = float(np.mean([1.0 / len(r["kinds"]) for r in rows]))
    return out


def main() -> None:
    """Run the check for each checkpoint and write one JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", default="go2/ptfe_slope")
    p.add_argument("--checkpoint", type=Path, nargs="+", required=True, help="one or more models to drive")
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--stride", type=int, default=5, help="check every this many steps")
    p.add_argument("--candidates", type=int, default=8, help="Gaussian samples around the chosen plan per check")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="task override")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    out = {"command": {k: [str(x) for x in v] if isinstance(v, list) else str(v) for k, v in vars(args).items()},
           "models": {}}  # fmt: skip
    for path in args.checkpoint:
        model, _ = load_checkpoint(path)
        model.eval().requires_grad_(False)
        env = make_env(args.task, parse_overrides(args.env))
        if env.spec.probe != "base_velocity":
            p.error(f"{args.task}: this check reads the base velocity off the probe (Go2 tasks only)")
        checker = OpenLoopChecker(env, MPPIPlanner(model, planner_preset("cpu")), args.stride, args.candidates, 0)
        progress = []
        for episode in range(args.episodes):
            stats = run_episode(env, checker, seed=60_000 + episode, max_steps=int(args.seconds * env.spec.control_hz),
                                on_step=checker.on_step)  # fmt: skip
            progress.append(float(stats.metrics["forward_progress_m"]))
        first = [r for r in checker.rows if r["t"] < env.spec.control_hz]
        summary = summarise(checker.rows) | {
            "first_second_of_episodes": summarise(first) if first else None,
            "closed_loop_forward_progress_m": float(np.mean(progress)),
            "sync_check": {"checks": len(checker.sync_diffs),
                           "max_abs_diff": max(checker.sync_diffs) if checker.sync_diffs else None},
        }  # fmt: skip
        out["models"][str(path)] = summary
        print(path, json.dumps(summary, indent=1), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
