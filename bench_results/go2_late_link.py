"""Reading of ``GO2_LATE_LINK.md``: the starved graph's command link emulated in-process; the robot playing the plan.

Reads ``bench_results/go2_late_link/eval_<arm>.json`` (arms ``hold``, ``play``, ``hold_untold``) and the committed
references ``bench_results/go2_delay_randomised/eval_ship_<D>.json``; writes ``bench_results/go2_late_link.json``.
Run from the repository root: ``python bench_results/go2_late_link.py``.
"""

import json
from pathlib import Path

from go2_delay_randomised import load, summary
from go2_delay_randomised import pooled_difference as diff
from simdist_core.eval.stats import episode_values

TASK = "go2/foam"
DIR = Path("bench_results/go2_late_link")
SEEDS = 63500, 30
GRAPH_RATIO = 0.77  # the one-core graph's shipped arms: 0.757 and 0.784 of their in-process distance on time


def link_arm(arm: str, out: dict) -> list[float]:
    """Per-episode progress of one emulated-link arm after checking it is the protocol's run."""
    report = json.loads((DIR / f"eval_{arm}.json").read_text())
    if (report["task"] != TASK or report["episodes"] != SEEDS[1] or report["action_delay"] != 0
            or report["late_link"] != "one_core" or report["play_plan"] != (arm == "play")
            or report["compensate_delay"] != (arm != "hold_untold") or report["planner"]["prior_weight"] != 100.0
            or report["planner"]["num_samples"] != 32 or Path(report["checkpoint"]).name != "go2"
            or report["torch_threads"] != 1):
        raise SystemExit(f"{arm}: not the protocol's run")
    values = episode_values(report["per_episode"], TASK)
    counts = report["link_counts"]
    with_command = counts["steps"] - counts["default_pose_steps"]
    out["arms"][arm] = {**summary(values, report["per_episode"]),
                        "fresh_command_fraction": round(counts["fresh_command_steps"] / with_command, 4),
                        **{f"delay_{d}_fraction": round(counts[f"delay_{d}_steps"] / with_command, 4)
                           for d in range(3)}}
    return values


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    out: dict = {"protocol": "bench_results/GO2_LATE_LINK.md", "task": TASK,
                 "seeds": [SEEDS[0], SEEDS[0] + SEEDS[1] - 1], "arms": {}}
    on_time, _ = load("ship@0", out), load("ship@1", out)
    hold, play, untold = (link_arm(a, out) for a in ("hold", "play", "hold_untold"))
    ratio = out["arms"]["hold"]["progress_m"] / out["arms"]["ship@0"]["progress_m"]
    out["hold_over_on_time"] = round(ratio, 3)
    out["play_minus_hold"] = diff([play], [hold])
    out["hold_minus_untold"] = diff([hold], [untold])
    for arm in ("play", "hold_untold"):
        out[f"{arm}_over_on_time"] = round(out["arms"][arm]["progress_m"] / out["arms"]["ship@0"]["progress_m"], 3)
    assert len(on_time) == SEEDS[1]
    out["verdict"] = {
        "reproduces_the_graph_loss": abs(ratio - GRAPH_RATIO) <= 0.08,
        "playing_the_plan_wins": out["play_minus_hold"]["ci95"][0] > 0,
        "playing_the_plan_loses": out["play_minus_hold"]["ci95"][1] < 0,
        "compensation_helps": out["hold_minus_untold"]["ci95"][0] > 0,
        "compensation_hurts": out["hold_minus_untold"]["ci95"][1] < 0,
    }
    Path("bench_results/go2_late_link.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
