"""Reading of ``GO2_DAGGER_SLOPE.md`` and ``GO2_DAGGER_SLOPE_ROUND2.md``: the prior taught on its own states.

The yaw model's prior retrained on expert labels of its own planner's states (round 2: ``--round 2``).

Reads ``bench_results/go2_dagger_slope/dagger_hold_{slope,flat,foam}.json`` (round 2: ``dagger2_hold_*.json``, and
round 1's for the comparison), the yaw model's runs (``bench_results/go2_heading_command/new_hold_*.json``) and the
shipped model's references (as ``go2_heading_command.py``); writes ``bench_results/go2_dagger_slope.json`` (round 2:
``go2_dagger_slope_round2.json``). Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_dagger_slope.py [--round 2]``.
"""

import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round", type=int, choices=(1, 2), default=1)
    second = parser.parse_args().round == 2
    rows = {}
    for terrain in TERRAINS:
        task = f"go2/{terrain}"
        round1 = _load(DIR / f"dagger_hold_{terrain}.json", terrain, True)
        report = _load(DIR / f"dagger2_hold_{terrain}.json", terrain, True) if second else round1
        yaw_model = _load(YAW_MODEL / f"new_hold_{terrain}.json", terrain, True)
        shipped = _load(REFERENCES[terrain], terrain, None)
        rows[terrain] = {**episode_summary(report["per_episode"], task), "checkpoint": report["checkpoint"],
                         "turned_round": _turned(report), "minus_yaw_model": _difference(report, yaw_model, task),
                         "minus_shipped": _difference(report, shipped, task),
                         "shipped": episode_summary(shipped["per_episode"], task),
                         "yaw_model": {**episode_summary(yaw_model["per_episode"], task),
                                       "turned_round": _turned(yaw_model)}}
        if second:
            rows[terrain] |= {"minus_round1": _difference(report, round1, task),
                              "round1": {**episode_summary(round1["per_episode"], task),
                                         "turned_round": _turned(round1)}}
    slope = rows["slope"]
    fewer_turns = slope["turned_round"] < slope["yaw_model"]["turned_round"]
    verdict = {"a_second_round_helps_on_the_slope": slope["minus_round1"]["ci95"][0] > 0} if second else {}
    out = {"protocol": f"bench_results/GO2_DAGGER_SLOPE{'_ROUND2' if second else ''}.md", "seeds": [65500, 65529],
           "terrains": rows, "verdict": {**verdict,
               "labels_on_the_learners_states_help_it_hold_its_heading_uphill":
                   slope["minus_yaw_model"]["ci95"][0] > 0 and fewer_turns,
               "heading_in_the_command_lets_the_model_walk_up_the_slope":
                   slope["minus_shipped"]["ci95"][0] > 0 and slope["turned_round"] <= 3,
               "flat_below_yaw_model": rows["flat"]["minus_yaw_model"]["ci95"][1] < 0,
               "foam_below_yaw_model": rows["foam"]["minus_yaw_model"]["ci95"][1] < 0,
               "flat_below_shipped": rows["flat"]["minus_shipped"]["ci95"][1] < 0,
               "foam_below_shipped": rows["foam"]["minus_shipped"]["ci95"][1] < 0}}
    name = "go2_dagger_slope_round2.json" if second else "go2_dagger_slope.json"
    Path("bench_results", name).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
