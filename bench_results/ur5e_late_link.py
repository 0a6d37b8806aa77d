"""Reading of ``UR5E_LATE_LINK.md``: the UR5e's deployed model behind an emulated late link, repeating or playing.

Reads ``bench_results/ur5e_late_link/eval_{hold,play}.json`` and the on-time reference
``bench_results/eval_ur5e_peg_nominal_new_41000.json``; writes ``bench_results/ur5e_late_link.json``.
Run from the repository root: ``python bench_results/ur5e_late_link.py``.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci, paired_cluster_difference_ci

TASK = "ur5e/peg"
ON_TIME = Path("bench_results/eval_ur5e_peg_nominal_new_41000.json")
DIR = Path("bench_results/ur5e_late_link")


def load(path: Path, link: bool, play: bool) -> dict:
    """A report after checking it is the protocol's run."""
    report = json.loads(path.read_text())
    if (report["task"] != TASK or report["episodes"] != 50 or report["planner"]["prior_weight"] != 1000.0
            or Path(report["checkpoint"]).name != "ur5e" or report["torch_threads"] != 1
            or report.get("late_link", "") != ("one_core" if link else "") or report.get("play_plan", False) != play
            or (link and not report["compensate_delay"])):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    reports = {"on_time": load(ON_TIME, False, False), "hold": load(DIR / "eval_hold.json", True, False),
               "play": load(DIR / "eval_play.json", True, True)}
    values = {k: episode_values(r["per_episode"], TASK) for k, r in reports.items()}
    out: dict = {"protocol": "bench_results/UR5E_LATE_LINK.md", "task": TASK, "seeds": [41000, 41049], "arms": {}}
    for k, v in values.items():
        mean, low, high = mean_ci(v)
        out["arms"][k] = {"success_rate": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}
    for a, b in (("play", "hold"), ("hold", "on_time")):
        d, low, high = paired_cluster_difference_ci([values[a]], [values[b]])
        out[f"{a}_minus_{b}"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
    counts = reports["hold"]["link_counts"]
    out["hold_fresh_command_fraction"] = round(counts["fresh_command_steps"]
                                               / (counts["steps"] - counts["default_pose_steps"]), 4)
    ci = out["play_minus_hold"]["ci95"]
    out["verdict"] = {"playing_the_plan_wins": ci[0] > 0, "playing_the_plan_loses": ci[1] < 0}
    Path("bench_results/ur5e_late_link.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
