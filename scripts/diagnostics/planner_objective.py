#!/usr/bin/env python3
"""Does a dynamics-only finetune mislead the planner, or does the planner optimise something else than the metric?

Finetunes ``--checkpoint`` (dynamics only, the benchmark's settings) on the experience an adaptation
run collected (``--experience``: e.g. ``<workdir>/dynamics_only``), then drives the task with the
pretrained and the finetuned model under the same planner and seeds and reports, per model:
forward progress (the task metric), the simulator's true reward per control step (the planner's
objective, measured), the reward head's prediction for each executed step and its bias, and the
predicted return of the chosen plans. A finetuned planner that earns *more* true reward while making
less progress is not misled by its model: the reward ranks another behaviour above the task.

    python scripts/diagnostics/planner_objective.py --task go2/foam --checkpoint checkpoints/go2 \
        --experience /tmp/adapt/foam/dynamics_only --json out.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.config import parse_overrides
from simdist_core.data.dataset import Dataset
from simdist_core.eval.adaptation import AdaptationConfig
from simdist_core.eval.rollout import run_episode
from simdist_core.planning.mppi import MPPIPlanner, planner_preset
from simdist_core.sim.base import make_env
from simdist_core.training.adapt import finetune_dynamics


class RecordingPlanner:
    """Wraps an MPPI planner; remembers the predicted reward of the action it returns and the plan's return."""

    def __init__(self, planner: MPPIPlanner) -> None:
        self.planner, self.predicted_reward, self.plan_return = planner, float("nan"), float("nan")

    def reset(self) -> None:
        """Forget the warm start."""
        self.planner.reset()

    def plan(self, obs: dict[str, torch.Tensor]):  # noqa: ANN201 (PlanResult)
        """Plan, then score the executed first action with the same model."""
        result = self.planner.plan(obs)
        model = self.planner.model
        with torch.inference_mode():
            latent = model.encode(obs)
            action = torch.as_tensor(result.action)[None, None]
            self.predicted_reward = float(model.reward(latent, model.predict(latent, action), action)[0, 0])
        self.plan_return = result.value
        return result


def drive(model: torch.nn.Module, task: str, env_overrides: dict, episodes: int, seconds: float) -> dict:
    """Planner-controlled episodes (seeds 50,000+) and what they earned vs what the model expected."""
    env = make_env(task, env_overrides)
    planner = RecordingPlanner(MPPIPlanner(model, planner_preset("cpu")))
    rows, progress, falls = [], [], []
    for episode in range(episodes):
        def on_step(_obs, _action, result) -> None:  # noqa: ANN001
            rows.append((planner.predicted_reward, result.reward, planner.plan_return))

        stats = run_episode(env, planner, seed=50_000 + episode, max_steps=int(seconds * 50), on_step=on_step)
        progress.append(stats.metrics.get("forward_progress_m", float("nan")))
        falls.append(float(stats.metrics.get("fell", float("nan"))))
    arr = np.asarray(rows)
    return {"forward_progress_m": float(np.mean(progress)), "falls": float(np.nanmean(falls)) if falls else None,
            "true_reward_per_step": float(arr[:, 1].mean()), "predicted_reward_per_step": float(arr[:, 0].mean()),
            "reward_bias": float((arr[:, 0] - arr[:, 1]).mean()), "plan_return": float(arr[:, 2].mean()),
            "steps": len(rows)}  # fmt: skip


def main() -> None:
    """Run the diagnostic and print/write its JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", required=True)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--experience", type=Path, required=True)
    p.add_argument("--steps", type=int, default=1200, help="finetune updates (the benchmark's rounds summed)")
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="task override")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    model, _ = load_checkpoint(args.checkpoint)
    finetuned, report = finetune_dynamics(model, Dataset(args.experience),
                                          replace(AdaptationConfig().finetune, steps=args.steps))  # fmt: skip
    env = parse_overrides(args.env)
    command = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    out = {"gate": report.gate.reason, "command": command}
    for name, m in (("pretrained", model), ("finetuned", finetuned)):
        out[name] = drive(m, args.task, env, args.episodes, args.seconds)
        print(name, out[name], flush=True)
    text = json.dumps(out, indent=1, default=str)
    args.json.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
