#!/usr/bin/env python3
r"""Does the planner pick the plans its model is most wrong about? Plans executed open loop in a copy of the sim.

The planner drives the task with one model (episode seeds from ``--seed``, 60,000 by default; the ``cpu`` preset).
At every ``--stride``-th step, from the state the planner just planned from, a set of H-step action sequences is
scored twice:

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

With ``--expert`` the set also holds the privileged expert's plan: the expert (true friction, contacts and
velocity) walks H steps closed loop in the copy, and its actions are the sequence. It is a plan known to walk
from that state. Then, per state, the planner's own score (discounted reward plus terminal value, as MPPI ranks
candidates; ``model_return``) of the expert's plan against the chosen plan, beside the simulator's verdict
(``expert_vs_chosen``): if the simulator prefers the expert's plan and the model does not, the frozen reward and
value heads (or the dynamics under them) misjudge walking on this floor, and no search can fix that; if the model
prefers it too, the search never proposed it. From the states a sliding planner visits the expert may not walk
either (it starts its trot afresh there); ``--drive expert`` lets the expert drive the episodes instead (the
planner still plans every step from the same observations, so its chosen plan is what it would do there) and
its plan is its own continuing gait: the model's verdict on walking where walking is known to work.
``--handover-s S`` (with ``--drive expert``) hands the robot to the planner after S seconds of the expert's
walking: does the planner keep a gait it did not have to start? ``--stride 0`` skips the open-loop checks.
``--command-ramp-s R`` has the operator ramp the velocity command linearly from 0 to the episode's command over
R seconds (``Go2Env.set_command`` every step, as a velocity smoother in front of ``cmd_vel`` would), the way the
expert ramps its own reference velocity from rest. (The episode's first observation, made at reset, still
carries the full command; the ramp reaches the observations from the second step on.) This is the exploratory
ramp of the committed ``plan_ramp_*`` runs, kept as it was so they reproduce; the controller feature that came out
of it is ``simdist_core.planning.command_ramp`` (``simdist eval --command-ramp-s``, the encoder's
``command_ramp_s``), which starts the first observation at rest and leaves the simulator's command alone.

    python scripts/diagnostics/plan_optimism.py --task go2/ptfe_slope --checkpoint bench_results/go2_v6_low_friction \\
        --episodes 10 --json /tmp/plan_optimism.json
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from pathlib import Path

import mujoco
import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.config import apply_overrides, parse_overrides
from simdist_core.eval.rollout import run_episode
from simdist_core.experts.go2_expert import make_go2_expert
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

    def __init__(self, env, planner: MPPIPlanner, stride: int, candidates: int, seed: int,  # noqa: ANN001
                 expert: bool = False, drive: str = "planner", handover_steps: int | None = None,
                 ramp_steps: int = 0) -> None:
        self.env, self.planner, self.stride, self.candidates = env, planner, stride, candidates
        self.expert, self.drive, self.handover_steps = expert or drive == "expert", drive, handover_steps
        self.at_handover: dict[int, dict] = {}  # episode index -> env metrics when the planner took over
        self.ramp_steps, self.target_command = ramp_steps, None
        self.driver = None  # the expert driving the episode (``drive == "expert"``)
        self.episodes = 0
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
        if self.ramp_steps:
            self.target_command = np.array(self.env.command, np.float64)
            self.env.set_command(np.zeros_like(self.target_command))  # before the first plan: rest asks for 0
        self.shadow, self.t = copy.deepcopy(self.env), 0
        if self.drive == "expert":
            self.driver = make_go2_expert(self.env, rng=np.random.default_rng(self.episodes))
        self.episodes += 1

    def plan(self, obs: dict[str, torch.Tensor]):  # noqa: ANN201 (PlanResult)
        """Plan as the planner does; at every ``stride``-th step also score the plan set in model and sim."""
        if self.ramp_steps and self.t:  # the command the next step acts under (the first observation had 0)
            self.env.set_command(self.target_command * min(1.0, self.t / self.ramp_steps))
        with torch.inference_mode():
            latent = self.planner.model.encode(obs)
        result = self.planner.plan_latent(latent, predict_mean=False)
        executed, before = result.action, None
        if self.driver is not None and self.t == self.handover_steps:
            self.driver = None  # the planner acts from here on (it has planned every step, so it is warm)
            self.at_handover[self.episodes - 1] = dict(self.env.metrics())  # reset() counted this episode
        if self.driver is not None:  # the expert acts; its state before acting continues as its plan
            before = copy.deepcopy(self.driver)
            executed = np.clip(self.driver.act(self.env), -1.0, 1.0).astype(np.float32)
        if self.stride and self.t % self.stride == 0:
            self._check(latent, torch.as_tensor(result.mean), executed, before)
        self.t += 1
        return result if self.driver is None else dataclasses.replace(result, action=executed)

    def on_step(self, _obs, _action, result) -> None:  # noqa: ANN001
        """Compare the real next state with the copy's first step of the chosen plan (the sync check)."""
        if self._expected_next is not None:
            real = flat(result.obs)
            self.sync_diffs.append(float(np.max(np.abs(real - self._expected_next))))
            self._expected_next = None

    def _sequences(self, latent: Latent, chosen: torch.Tensor, driver=None) -> tuple[torch.Tensor, list[str]]:  # noqa: ANN001
        cfg = self.planner.cfg
        with torch.inference_mode():
            prior = self.planner.model.pi(latent)[0, : cfg.horizon]
        noise = torch.randn(self.candidates, *chosen.shape, generator=self.rng)
        samples = (chosen + cfg.max_std * noise).clamp(-1.0, 1.0)
        plans, kinds = [chosen[None], prior[None], samples], ["chosen", "prior"] + ["sample"] * self.candidates
        if self.expert:
            plans.append(self._expert_plan(cfg.horizon, driver)[None])
            kinds.append("expert")
        return torch.cat(plans), kinds

    def _expert_plan(self, horizon: int, driver=None) -> torch.Tensor:  # noqa: ANN001 (Go2TrotExpert)
        """The privileged expert's next ``horizon`` actions from the current state, walked closed loop in the copy.

        ``driver``: a copy of the expert driving the episode (its gait continues); else a fresh one starts here.
        """
        sync(self.shadow, self.env)
        expert = driver if driver is not None else make_go2_expert(self.shadow, rng=np.random.default_rng(self.t))
        actions = np.zeros((horizon, self.env.spec.action_dim), np.float32)
        for k in range(horizon):
            actions[k] = np.clip(expert.act(self.shadow), -1.0, 1.0)
            if self.shadow.step(actions[k]).terminated:  # the rest stays the default pose, as after a fall
                break
        return torch.as_tensor(actions)

    def _check(self, latent: Latent, chosen: torch.Tensor, action: np.ndarray, driver=None) -> None:  # noqa: ANN001
        model, command = self.planner.model, np.asarray(self.env.command, np.float64).copy()
        plans, kinds = self._sequences(latent, chosen, driver)
        with torch.inference_mode():
            lat = Latent(latent.z.expand(len(plans), -1), latent.context.expand(len(plans), -1, -1))
            zs = model.predict(lat, plans)
            model_reward = (model.reward(lat, zs, plans).numpy() * self.discounts).sum(1)
            model_return = self.planner._score(lat, plans, zs).numpy()  # what MPPI ranks by (no prior penalty)
            model_velocity = model.decode_probe(zs)[..., :2].numpy()
        model_tracking = tracking(model_velocity, command, self.sigma).mean(1)
        sim_reward, sim_tracking, fell = [], [], []
        for plan in plans.numpy():
            sync(self.shadow, self.env)
            rewards, tracks, down = np.zeros(len(plan)), np.zeros(len(plan)), False
            for k, a in enumerate(plan):
                step = self.shadow.step(a)
                if k == 0 and self._expected_next is None and np.array_equal(a, action):  # the executed plan
                    self._expected_next = flat(step.obs)
                rewards[k] = step.reward
                tracks[k] = tracking(self.shadow.privileged_state()["probe"][:2], command, self.sigma)
                if step.terminated:
                    down = True
                    break
            sim_reward.append(float((rewards * self.discounts).sum()))
            sim_tracking.append(float(tracks.mean()))
            fell.append(down)
        self.rows.append({"t": self.t, "kinds": kinds, "model_reward": model_reward.tolist(),
                          "model_return": model_return.tolist(), "sim_reward": sim_reward,
                          "model_tracking": model_tracking.tolist(), "sim_tracking": sim_tracking, "fell": fell})


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rank correlation (no ties expected in continuous returns; ties get arbitrary order)."""
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def summarise(rows: list[dict]) -> dict:
    """Optimism by kind, rank correlations, how often the chosen plan is the simulator's best."""
    out: dict = {"states": len(rows)}
    for kind in ("chosen", "prior", "sample", "expert"):
        if not any(kind in r["kinds"] for r in rows):
            continue
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
    with_expert = [r for r in rows if "expert" in r["kinds"]]
    if with_expert:
        def prefers_expert(r: dict, key: str) -> bool:
            return r[key][r["kinds"].index("expert")] > r[key][0]  # index 0: the chosen plan

        sim = np.array([prefers_expert(r, "sim_reward") for r in with_expert])
        model = np.array([prefers_expert(r, "model_return") for r in with_expert])
        out["expert_vs_chosen"] = {
            "states": len(with_expert), "sim_prefers_expert": float(sim.mean()),
            "model_prefers_expert": float(model.mean()),
            "model_prefers_expert_where_sim_does": float(model[sim].mean()) if sim.any() else None,
        }  # fmt: skip
    return out


def handover_summary(at_handover: dict[int, dict], ends: list[dict], handover_s: float) -> dict:
    """Per episode and on average: progress while the expert walked, and after the planner took over.

    An episode that ended (a fall) before the handover has no planner phase and is counted as such.
    """
    episodes = []
    for k, end in enumerate(ends):
        start = at_handover.get(k)
        if start is None or start["fell"]:
            episodes.append({"expert_m": float(end["forward_progress_m"]), "planner_m": None, "planner_fell": None})
            continue
        episodes.append({"expert_m": float(start["forward_progress_m"]),
                         "planner_m": float(end["forward_progress_m"] - start["forward_progress_m"]),
                         "planner_s": float(end["duration_s"] - start["duration_s"]),
                         "planner_fell": bool(end["fell"])})  # fmt: skip
    handed = [e for e in episodes if e["planner_m"] is not None]
    return {"handover_s": handover_s, "episodes_handed_over": len(handed),
            "expert_m_mean": float(np.mean([e["expert_m"] for e in episodes])),
            "planner_m_mean": float(np.mean([e["planner_m"] for e in handed])) if handed else None,
            "planner_falls": int(sum(e["planner_fell"] for e in handed)), "per_episode": episodes}


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
    p.add_argument("--expert", action="store_true", help="also score the privileged expert's plan from each state")
    p.add_argument("--drive", choices=("planner", "expert"), default="planner",
                   help="who acts in the episodes (expert: implies --expert)")
    p.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                   help="planner field over the cpu preset, e.g. prior_weight=100 (the deployed Go2 planner)")
    p.add_argument("--handover-s", type=float, help="with --drive expert: the planner takes over after this long")
    p.add_argument("--command-ramp-s", type=float, default=0.0,
                   help="ramp the velocity command from 0 to the episode's over this long (0: the command at once)")
    p.add_argument("--heading-hold", action="store_true",
                   help="the planner's command holds the starting heading (as `simdist eval --heading-hold`); the "
                        "sync check then also reads the yaw rate it adds to the observed command")
    p.add_argument("--seed", type=int, default=60_000, help="episode i resets with seed + i")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    if args.handover_s is not None and args.drive != "expert":
        p.error("--handover-s needs --drive expert")
    torch.set_num_threads(1)
    out = {"command": {k: [str(x) for x in v] if isinstance(v, list) else str(v) for k, v in vars(args).items()},
           "models": {}}  # fmt: skip
    for path in args.checkpoint:
        model, _ = load_checkpoint(path)
        model.eval().requires_grad_(False)
        env = make_env(args.task, parse_overrides(args.env))
        if env.spec.probe != "base_velocity":
            p.error(f"{args.task}: this check reads the base velocity off the probe (Go2 tasks only)")
        handover = None if args.handover_s is None else int(round(args.handover_s * env.spec.control_hz))
        cfg = apply_overrides(planner_preset("cpu"), parse_overrides(args.planner_set))
        checker = OpenLoopChecker(env, MPPIPlanner(model, cfg), args.stride, args.candidates, 0,
                                  expert=args.expert, drive=args.drive, handover_steps=handover,
                                  ramp_steps=int(round(args.command_ramp_s * env.spec.control_hz)))
        ends = []  # each episode's final metrics
        for episode in range(args.episodes):
            stats = run_episode(env, checker, seed=args.seed + episode,
                                max_steps=int(args.seconds * env.spec.control_hz), on_step=checker.on_step,
                                heading_hold=args.heading_hold)  # fmt: skip
            ends.append(dict(stats.metrics))
        first = [r for r in checker.rows if r["t"] < env.spec.control_hz]
        summary = (summarise(checker.rows) if checker.rows else {"states": 0}) | {
            "first_second_of_episodes": summarise(first) if first else None,
            "closed_loop_forward_progress_m": float(np.mean([e["forward_progress_m"] for e in ends])),
            "closed_loop_per_episode": [{k: float(e[k]) for k in ("forward_progress_m", "fell", "duration_s")}
                                        for e in ends],
            "closed_loop_falls": int(sum(bool(e["fell"]) for e in ends)),
            "handover": handover_summary(checker.at_handover, ends, args.handover_s) if handover else None,
            "sync_check": {"checks": len(checker.sync_diffs),
                           "max_abs_diff": max(checker.sync_diffs) if checker.sync_diffs else None},
        }  # fmt: skip
        out["models"][str(path)] = summary
        print(path, json.dumps(summary, indent=1), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
