"""Diagnostic: does the shipped Go2 model hold its heading walking up a slope?

The Go2 tasks command a body-frame velocity (forward, yaw rate 0) and score progress along the episode's initial
heading; the expert holds that heading with privileged knowledge of it, the model has no heading in its inputs
(projected gravity, not yaw). For each condition, 30 episodes of 10 s with the shipped ``checkpoints/go2`` and the
deployed planner (``--preset cpu``, ``prior_weight`` 100, one torch thread, seeds 65500-65529, the same episodes as
``simdist eval --seed 65500``): the largest heading change from the start in the first 2 s and over the episode,
how many episodes turned more than 90 degrees, falls and forward progress. Writes
``bench_results/go2_slope_heading.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core python bench_results/go2_slope_heading.py``.
"""

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

CONDITIONS = {"flat": ("go2/flat", {}), "uphill_5deg": ("go2/slope", {"terrain.slope_deg": "5"}),
              "uphill_10deg": ("go2/slope", {}), "ptfe_slope": ("go2/ptfe_slope", {})}
SEED, EPISODES, STEPS = 65500, 30, 500


def condition(model: torch.nn.Module, manifest: object, task: str, overrides: dict[str, str]) -> dict:
    """Per-episode heading changes, falls and progress, and their summary."""
    env = make_env(task, overrides)
    planner = make_planner(model, manifest, "cpu", {"prior_weight": "100"}, SEED)
    episodes = []
    for i in range(EPISODES):
        start: list[float] = []
        turns: list[float] = []

        def on_reset(_obs: dict, start: list[float] = start) -> None:
            start.append(yaw_from_quat(env.data.qpos[3:7]))

        def on_step(_obs: dict, _action: np.ndarray, _result: object, start: list[float] = start,
                    turns: list[float] = turns) -> None:
            turns.append(abs(wrap_rad(yaw_from_quat(env.data.qpos[3:7]) - start[0])))

        stats = run_episode(env, planner, seed=SEED + i, max_steps=STEPS, on_reset=on_reset, on_step=on_step)
        episodes.append({"max_turn_first_2s_rad": round(max(turns[:100]), 3), "max_turn_rad": round(max(turns), 3),
                         "fell": bool(stats.metrics["fell"]),
                         "forward_progress_m": round(stats.metrics["forward_progress_m"], 3)})
    turned = sum(e["max_turn_rad"] > math.pi / 2 for e in episodes)
    return {"task": task, "overrides": overrides, "episodes": EPISODES,
            "median_max_turn_first_2s_rad": round(float(np.median([e["max_turn_first_2s_rad"] for e in episodes])), 3),
            "median_max_turn_rad": round(float(np.median([e["max_turn_rad"] for e in episodes])), 3),
            "turned_round": turned, "falls": sum(e["fell"] for e in episodes),
            "forward_progress_m": round(float(np.mean([e["forward_progress_m"] for e in episodes])), 3),
            "per_episode": episodes}


def main() -> None:
    """Every condition, written and printed."""
    torch.set_num_threads(1)
    model, manifest = load_checkpoint("checkpoints/go2")
    out = {"checkpoint": "checkpoints/go2", "planner": {"preset": "cpu", "prior_weight": 100},
           "seeds": [SEED, SEED + EPISODES - 1],
           "conditions": {name: condition(model, manifest, task, o) for name, (task, o) in CONDITIONS.items()}}
    Path("bench_results/go2_slope_heading.json").write_text(json.dumps(out, indent=1) + "\n")
    for name, c in out["conditions"].items():
        print(f"{name:14s} turned >90 deg {c['turned_round']:2d}/{c['episodes']}  median max turn "
              f"{c['median_max_turn_rad']:.2f} rad (first 2 s {c['median_max_turn_first_2s_rad']:.2f})  falls "
              f"{c['falls']:2d}  progress {c['forward_progress_m']:.2f} m")


if __name__ == "__main__":
    main()
