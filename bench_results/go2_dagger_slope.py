"""Reading of ``GO2_DAGGER_SLOPE.md``: the yaw model's prior retrained on expert labels of its own planner's states.

Reads ``bench_results/go2_dagger_slope/dagger_hold_{slope,flat,foam}.json``, the yaw model's runs
(``bench_results/go2_heading_command/new_hold_*.json``) and the shipped model's references (as
``go2_heading_command.py``); writes ``bench_results/go2_dagger_slope.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_dagger_slope.py``.
"""

import json
import math
from pathlib import Path

from go2_heading_command import REFERENCES, _load
from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_dagger_slope")
YAW_MODEL = Path("bench_results/go2_heading_command")
TERRAINS = ("slope", "flat", "foam")


def _difference(report: dict, other: dict, task: str) -> dict:
    d, low, high = paired_cluster_difference_ci([episode_values(report["per_episode"], task)],
                                                [episode_values(other["per_episode"], task)])
    return {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}


def _turned(report: dict) -> int:
    return sum(e["max_heading_change_rad"] > math.pi / 2 for e in report["per_episode"])


def main() -> None:
    """Every reading of the protocol, and its verdicts."""
    rows = {}
    for terrain in TERRAINS:
        task = f"go2/{terrain}"
        report = _load(DIR / f"dagger_hold_{terrain}.json", terrain, True)
        yaw_model = _load(YAW_MODEL / f"new_hold_{terrain}.json", terrain, True)
        shipped = _load(REFERENCES[terrain], terrain, None)
        rows[terrain] = {**episode_summary(report["per_episode"], task), "checkpoint": report["checkpoint"],
                         "turned_round": _turned(report), "minus_yaw_model": _difference(report, yaw_model, task),
                         "minus_shipped": _difference(report, shipped, task),
                         "yaw_model": {**episode_summary(yaw_model["per_episode"], task),
                                       "turned_round": _turned(yaw_model)}}
    slope = rows["slope"]
    fewer_turns = slope["turned_round"] < slope["yaw_model"]["turned_round"]
    out = {"protocol": "bench_results/GO2_DAGGER_SLOPE.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {
               "labels_on_the_learners_states_help_it_hold_its_heading_uphill":
                   slope["minus_yaw_model"]["ci95"][0] > 0 and fewer_turns,
               "heading_in_the_command_lets_the_model_walk_up_the_slope":
                   slope["minus_shipped"]["ci95"][0] > 0 and slope["turned_round"] <= 3,
               "flat_below_yaw_model": rows["flat"]["minus_yaw_model"]["ci95"][1] < 0,
               "foam_below_yaw_model": rows["foam"]["minus_yaw_model"]["ci95"][1] < 0,
               "flat_below_shipped": rows["flat"]["minus_shipped"]["ci95"][1] < 0,
               "foam_below_shipped": rows["foam"]["minus_shipped"]["ci95"][1] < 0}}
    Path("bench_results/go2_dagger_slope.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
