"""Diagnostic: why does the yaw-command Go2 model still turn round uphill under a heading hold?

``bench_results/GO2_HEADING_COMMAND.md``: the model pretrained with yaw-rate commands
(``bench_results/go2_yaw_pretrained``), its command holding the start heading (``--heading-hold``), walks up a 10°
slope (3.17 m per 10 s) but 20 of 30 episodes still turn more than 90°. Two explanations predict different things:

- the hold's limit (0.5 rad/s, the pretraining range) is too small against gravity's turning moment: then the robot
  turns while the yaw rate asked for sits at its limit, and it turns with *every* planner, the policy prior alone too;
- the planner trades yaw-rate tracking for something else its model values more (turning downhill is easier): then
  the prior alone holds the heading and the MPPI planners turn.

For each arm, 10 episodes of 10 s on ``go2/slope`` (seeds 65500-65509, the first ten of the heading-command runs), the
heading hold on, one torch thread: the yaw rate asked for and the gyro's yaw rate each control period, the fraction
of periods the hold is at its limit, the mean gyro yaw rate in the periods the hold asks the most it can in each
direction ("asked -0.5" / "asked +0.5": a robot that follows its command turns at about the rate asked), episodes
that turned more than 90°, falls, progress. Arms: the yaw model with the policy prior alone (``--preset prior``), with
the deployed planner (``cpu``, ``prior_weight`` 100) and with plain MPPI (``cpu``); the deployed arm on flat for
reference. Writes ``bench_results/go2_yaw_tracking.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core python bench_results/go2_yaw_tracking.py [--checkpoint DIR --out JSON]``.
"""

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.eval.closed_loop import make_planner
from simdist_core.eval.rollout import run_episode
from simdist_core.sim.base import make_env
from simdist_core.sim.go2_obs import wrap_rad, yaw_from_quat

CHECKPOINT = "bench_results/go2_yaw_pretrained"
SEED, EPISODES, STEPS, LIMIT = 65500, 10, 500, 0.5
ARMS = {
    "prior_slope": ("go2/slope", "prior", {}),
    "deployed_slope": ("go2/slope", "cpu", {"prior_weight": "100"}),
    "plain_slope": ("go2/slope", "cpu", {}),
    "deployed_flat": ("go2/flat", "cpu", {"prior_weight": "100"}),
}


def arm(model: torch.nn.Module, manifest: object, task: str, preset: str, overrides: dict[str, str]) -> dict:
    """Per-step asked and measured yaw rates of every episode, and their summary."""
    env = make_env(task, {})
    planner = make_planner(model, manifest, preset, overrides, SEED)
    asked: list[float] = []
    gyro: list[float] = []
    episodes = []
    for i in range(EPISODES):
        start: list[float] = []
        turns: list[float] = []

        def on_reset(obs: dict, start: list[float] = start) -> None:
            start.append(yaw_from_quat(env.data.qpos[3:7]))

        def on_step(obs: dict, _action: np.ndarray, result: object, start: list[float] = start,
                    turns: list[float] = turns) -> None:
            # ``obs`` is what the planner saw (its command carries the hold's yaw rate); the gyro reads the period.
            asked.append(float(obs["command"][2]))
            gyro.append(float(env.sensors()["imu_gyro"][2]))
            turns.append(abs(wrap_rad(yaw_from_quat(env.data.qpos[3:7]) - start[0])))

        stats = run_episode(env, planner, seed=SEED + i, max_steps=STEPS, on_reset=on_reset, on_step=on_step,
                            heading_hold=True)
        episodes.append({"max_turn_rad": round(max(turns), 3), "fell": bool(stats.metrics["fell"]),
                         "forward_progress_m": round(stats.metrics["forward_progress_m"], 3)})
    a, g = np.array(asked), np.array(gyro)
    at_low, at_high = a <= -LIMIT + 1e-3, a >= LIMIT - 1e-3
    inside = ~(at_low | at_high)
    return {
        "task": task, "preset": preset, "overrides": overrides, "episodes": EPISODES, "periods": int(a.size),
        "fraction_at_limit": round(float(np.mean(at_low | at_high)), 3),
        "gyro_yaw_rate_when_asked_minus_limit": round(float(g[at_low].mean()), 3) if at_low.any() else None,
        "gyro_yaw_rate_when_asked_plus_limit": round(float(g[at_high].mean()), 3) if at_high.any() else None,
        "periods_asked_minus_limit": int(at_low.sum()), "periods_asked_plus_limit": int(at_high.sum()),
        "yaw_rate_rms_error_inside_limit": round(float(np.sqrt(np.mean((g[inside] - a[inside]) ** 2))), 3)
        if inside.any() else None,
        "turned_round": sum(e["max_turn_rad"] > math.pi / 2 for e in episodes),
        "falls": sum(e["fell"] for e in episodes),
        "forward_progress_m": round(float(np.mean([e["forward_progress_m"] for e in episodes])), 3),
        "per_episode": episodes,
    }


def main() -> None:
    """Every arm, written and printed."""
    parser = argparse.ArgumentParser(description="yaw-rate tracking under the heading hold")
    parser.add_argument("--checkpoint", default=CHECKPOINT)
    parser.add_argument("--out", default="bench_results/go2_yaw_tracking.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, manifest = load_checkpoint(args.checkpoint)
    out = {"checkpoint": args.checkpoint, "heading_hold": {"gain_per_s": 1.0, "max_yaw_rate_rad_s": LIMIT},
           "seeds": [SEED, SEED + EPISODES - 1],
           "arms": {name: arm(model, manifest, *spec) for name, spec in ARMS.items()}}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    for name, r in out["arms"].items():
        print(f"{name:15s} at limit {r['fraction_at_limit']:.2f}  gyro when asked -/+{LIMIT}: "
              f"{r['gyro_yaw_rate_when_asked_minus_limit']} / {r['gyro_yaw_rate_when_asked_plus_limit']}  "
              f"rms inside {r['yaw_rate_rms_error_inside_limit']}  turned {r['turned_round']}/{EPISODES}  "
              f"falls {r['falls']}  progress {r['forward_progress_m']:.2f} m")


if __name__ == "__main__":
    main()
