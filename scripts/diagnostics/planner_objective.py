#!/usr/bin/env python3
"""Does a dynamics-only finetune mislead the planner, or does the planner optimise something else than the metric?

Finetunes ``--checkpoint`` (dynamics only, the benchmark's settings) on the experience an adaptation
run collected (``--experience``: e.g. ``<workdir>/dynamics_only``), then drives the task with the
pretrained and the finetuned model under the same planner and seeds and reports, per model:
forward progress (the task metric), the simulator's true reward per control step (the planner's
objective, measured), the reward head's prediction for each executed step and its bias, and the
predicted return of the chosen plans. A finetuned planner that earns *more* true reward while making
less progress is not misled by its model: the reward ranks another behaviour above the task.

``--finetuned DIR`` drives an already adapted checkpoint instead (e.g. ``<workdir>/dynamics_only/final``, the
model a benchmark run ended with); with neither, the pretrained model is the only one driven. ``--expert``
also drives the privileged expert on the same seeds, scoring each of its steps with the pretrained model's
(frozen) reward head: if the expert walks and earns more true reward per step than the planner while the head
scores its steps lower, the frozen reward misranks behaviour on that task; if the expert itself earns less true
reward per step than a planner that slides, the task's reward does not favour walking there. Along the expert's
episodes each model also scores the expert's next H actions against its planner's own choice, with the planner's
objective and (Go2) with the velocity-tracking term read off the probe head's predicted base velocity.
The true reward's named terms are reported per step, and the return per episode (an early fall ends the
episode, so per-step means alone can hide what falling is worth).

    python scripts/diagnostics/planner_objective.py --task go2/foam --checkpoint checkpoints/go2 \
        --experience /tmp/adapt/foam/dynamics_only --json out.json
    python scripts/diagnostics/planner_objective.py --task go2/ptfe_slope --checkpoint checkpoints/go2_v5 \
        --finetuned /tmp/adapt/ptfe/dynamics_only/final --expert --episodes 10 --json out.json
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
from simdist_core.experts import make_policy
from simdist_core.models.world_model import Latent
from simdist_core.planning.mppi import MPPIPlanner, planner_preset
from simdist_core.sim.base import make_env
from simdist_core.training.adapt import finetune_dynamics


def predicted_reward(model: torch.nn.Module, obs: dict[str, torch.Tensor], action: np.ndarray) -> float:
    """The model's reward for executing ``action`` (A,) from the model input ``obs`` (one step)."""
    with torch.inference_mode():
        latent = model.encode(obs)
        a = torch.as_tensor(action)[None, None]
        return float(model.reward(latent, model.predict(latent, a), a)[0, 0])


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
        self.predicted_reward = predicted_reward(self.planner.model, obs, result.action)
        self.plan_return = result.value
        return result


class RecordingExpert:
    """The privileged expert behind the planner interface; its steps are scored by ``model``'s reward head."""

    def __init__(self, env, model: torch.nn.Module, seed: int) -> None:  # noqa: ANN001 (any RobotEnv)
        self.env, self.model, self.rng = env, model, np.random.default_rng(seed)
        self.predicted_reward, self.plan_return, self.expert = float("nan"), float("nan"), None

    def reset(self) -> None:
        """A fresh expert on the env just reset (``run_episode`` resets the env first)."""
        self.expert = make_policy(self.env, 1.0, self.rng)

    def plan(self, obs: dict[str, torch.Tensor]) -> np.ndarray:
        """The expert's action, scored by the model's reward head like the planner's."""
        action = np.clip(self.expert.act(self.env), -1.0, 1.0).astype(np.float32)
        self.predicted_reward = predicted_reward(self.model, obs, action)
        return action


def drive(model: torch.nn.Module, task: str, env_overrides: dict, episodes: int, seconds: float,
          expert: bool = False) -> dict:  # fmt: skip
    """Episodes (seeds 50,000+) of the planner on ``model``, or of the expert scored by ``model``.

    Reports what they earned in the simulator and what the model expected.
    """
    env = make_env(task, env_overrides)
    hz = env.spec.control_hz
    driver = RecordingExpert(env, model, 0) if expert else RecordingPlanner(MPPIPlanner(model, planner_preset("cpu")))
    rows, progress, falls, returns, durations, terms = [], [], [], [], [], {}
    for episode in range(episodes):
        def on_step(_obs, _action, result) -> None:  # noqa: ANN001
            rows.append((driver.predicted_reward, result.reward, driver.plan_return))
            for name, value in result.reward_terms.items():
                terms[name] = terms.get(name, 0.0) + float(value)

        stats = run_episode(env, driver, seed=50_000 + episode, max_steps=int(seconds * hz), on_step=on_step)
        progress.append(stats.metrics.get("forward_progress_m", float("nan")))
        falls.append(float(stats.metrics.get("fell", float("nan"))))
        returns.append(stats.total_reward)
        durations.append(stats.steps / hz)
    arr = np.asarray(rows)
    return {"forward_progress_m": float(np.mean(progress)), "falls": float(np.nanmean(falls)) if falls else None,
            "true_reward_per_step": float(arr[:, 1].mean()), "predicted_reward_per_step": float(arr[:, 0].mean()),
            "reward_bias": float((arr[:, 0] - arr[:, 1]).mean()), "plan_return": float(np.nanmean(arr[:, 2])),
            "return_per_episode": float(np.mean(returns)), "duration_s": float(np.mean(durations)),
            "reward_terms_per_step": {k: v / len(rows) for k, v in terms.items()},
            "per_episode_progress_m": [float(x) for x in progress], "steps": len(rows)}  # fmt: skip


def score_parts(planner: MPPIPlanner, latent: Latent, plan: torch.Tensor) -> tuple[float, float]:
    """The planner's objective for one plan (H, A), in two parts: discounted reward sum, discounted V(z_H)."""
    cfg, model = planner.cfg, planner.model
    with torch.inference_mode():
        actions = plan[None]
        zs = model.predict(latent, actions)
        reward = float((model.reward(latent, zs, actions) * planner._discounts).sum())
        value = float(cfg.discount**cfg.horizon * model.value(latent, zs[:, -1:])[0, 0]) if cfg.terminal_value else 0.0
    return reward, value


def probe_tracking(planner: MPPIPlanner, latent: Latent, plan: torch.Tensor, command: np.ndarray,
                   sigma_m_s: float) -> float:  # fmt: skip
    """Mean velocity-tracking term exp(-|v_xy - cmd_xy|^2 / sigma^2) over ``plan``, v read by the probe head.

    v is the frozen probe's reading (Go2: base velocity) of the latents the dynamics predict for the plan: what the
    task's main reward term would be if the probe, rather than the frozen reward head, judged the predicted motion.
    """
    with torch.inference_mode():
        velocity = planner.model.decode_probe(planner.model.predict(latent, plan[None]))[0, :, :2].numpy()
    return float(np.mean(np.exp(-np.sum((velocity - command[:2]) ** 2, axis=-1) / sigma_m_s**2)))


class ExpertWatcher:
    """Drives the expert; at each step every planner plans from the same observation (not executed)."""

    def __init__(self, env, planners: dict[str, MPPIPlanner]) -> None:  # noqa: ANN001 (any RobotEnv)
        self.env, self.planners, self.rng = env, planners, np.random.default_rng(0)

    def reset(self) -> None:
        """New episode: a fresh expert, cold planners, empty records."""
        self.expert = make_policy(self.env, 1.0, self.rng)
        self.latents: dict[str, list] = {name: [] for name in self.planners}
        self.chosen: dict[str, list[torch.Tensor]] = {name: [] for name in self.planners}
        """Each planner's chosen plan (its mean, H x A) at each step."""
        self.actions: list[np.ndarray] = []
        self.commands: list[np.ndarray] = []
        """The task command (vx, vy, yaw rate) at each step."""
        for planner in self.planners.values():
            planner.reset()

    def plan(self, obs: dict[str, torch.Tensor]) -> np.ndarray:
        """Record each planner's choice and latent here; return the expert's action."""
        for name, planner in self.planners.items():
            with torch.inference_mode():
                latent = planner.model.encode(obs)
            result = planner.plan_latent(latent, predict_mean=False)
            self.chosen[name].append(torch.as_tensor(result.mean))
            self.latents[name].append(latent)
        action = np.clip(self.expert.act(self.env), -1.0, 1.0).astype(np.float32)
        self.actions.append(action)
        self.commands.append(np.asarray(self.env.command, dtype=np.float64).copy())
        return action


def expert_plans_scored(models: dict[str, torch.nn.Module], task: str, env_overrides: dict, episodes: int,
                        seconds: float) -> dict:  # fmt: skip
    """Would the planner pick the expert's plan if it were proposed? (search failure vs model failure).

    Along the expert's own episodes (seeds 50,000+), at every step each model's planner plans from the observed
    state (warm-started along the trajectory; its plans are not executed), and the same model scores the H
    actions the expert really executed next, with the planner's objective. If a model scores the expert's plan
    above its planner's own choice at most states, the search does not find what its model prefers; if below,
    the model (dynamics, frozen reward or value) prefers what fails.
    """
    env = make_env(task, env_overrides)
    watcher = ExpertWatcher(env, {name: MPPIPlanner(m, planner_preset("cpu")) for name, m in models.items()})
    horizon = planner_preset("cpu").horizon
    parts = ("reward_sum", "terminal_value")
    rows: dict[str, list[tuple[float, ...]]] = {name: [] for name in models}
    probe_velocity = env.spec.probe == "base_velocity"
    sigma = env.config.rewards.tracking_sigma_m_s if probe_velocity else 0.0
    for episode in range(episodes):
        run_episode(env, watcher, seed=50_000 + episode, max_steps=int(seconds * env.spec.control_hz))
        for t in range(len(watcher.actions) - horizon + 1):
            expert_plan = torch.as_tensor(np.stack(watcher.actions[t : t + horizon]))
            for name, planner in watcher.planners.items():
                latent, chosen = watcher.latents[name][t], watcher.chosen[name][t]
                row = (*score_parts(planner, latent, expert_plan), *score_parts(planner, latent, chosen))
                if probe_velocity:
                    row += (probe_tracking(planner, latent, expert_plan, watcher.commands[t], sigma),
                            probe_tracking(planner, latent, chosen, watcher.commands[t], sigma))  # fmt: skip
                rows[name].append(row)
    out = {}
    for name, table in rows.items():
        arr = np.asarray(table)  # expert reward, expert value, chosen reward, chosen value[, probe tracking x2]
        expert_total, chosen_total = arr[:, 0] + arr[:, 1], arr[:, 2] + arr[:, 3]
        out[name] = {
            "expert_plan": dict(zip(parts, arr[:, :2].mean(0).tolist(), strict=True)),
            "planner_choice": dict(zip(parts, arr[:, 2:4].mean(0).tolist(), strict=True)),
            "states_where_expert_plan_scores_higher": float(np.mean(expert_total > chosen_total)),
            "states_where_expert_plan_has_more_reward": float(np.mean(arr[:, 0] > arr[:, 2])),
            "states": len(table),
        }
        if probe_velocity:
            out[name] |= {
                "probe_tracking": {"expert_plan": float(arr[:, 4].mean()), "planner_choice": float(arr[:, 5].mean())},
                "states_where_expert_plan_tracks_better_by_probe": float(np.mean(arr[:, 4] > arr[:, 5])),
            }
    return out


def main() -> None:
    """Run the diagnostic and print/write its JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", required=True)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--experience", type=Path, default=None, help="finetune on this experience (or --finetuned; "
                   "neither: the pretrained model alone)")  # fmt: skip
    p.add_argument("--finetuned", type=Path, default=None, help="an adapted checkpoint to drive (no finetuning)")
    p.add_argument("--expert", action="store_true", help="also drive the privileged expert on the same seeds")
    p.add_argument("--steps", type=int, default=1200, help="finetune updates (the benchmark's rounds summed)")
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="task override")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    if args.experience is not None and args.finetuned is not None:
        p.error("give at most one of --experience (finetune here) and --finetuned (an adapted checkpoint)")
    torch.set_num_threads(1)
    model, _ = load_checkpoint(args.checkpoint)
    command = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    if args.experience is None and args.finetuned is None:  # the pretrained model alone
        finetuned, out = None, {"gate": "not run: no adapted model", "command": command}
    elif args.finetuned is not None:
        finetuned, _ = load_checkpoint(args.finetuned)
        out = {"gate": f"not run: adapted checkpoint {args.finetuned}", "command": command}
    else:
        finetuned, report = finetune_dynamics(model, Dataset(args.experience),
                                              replace(AdaptationConfig().finetune, steps=args.steps))  # fmt: skip
        out = {"gate": report.gate.reason, "command": command}
    env = parse_overrides(args.env)
    drivers = [("pretrained", model, False)] + ([("finetuned", finetuned, False)] if finetuned is not None else [])
    if args.expert:
        drivers.append(("expert_scored_by_pretrained", model, True))
    for name, m, expert in drivers:
        out[name] = drive(m, args.task, env, args.episodes, args.seconds, expert=expert)
        print(name, out[name], flush=True)
    if args.expert:
        scored = {"pretrained": model} | ({"finetuned": finetuned} if finetuned is not None else {})
        out["expert_plans_scored"] = expert_plans_scored(scored, args.task, env, args.episodes, args.seconds)
        print("expert_plans_scored", out["expert_plans_scored"], flush=True)
    text = json.dumps(out, indent=1, default=str)
    args.json.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
