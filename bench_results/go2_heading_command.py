"""Reading of ``GO2_HEADING_COMMAND.md``: yaw-rate commands in pretraining and a heading hold, on the slope.

Reads ``bench_results/go2_heading_command/*.json`` and the shipped model's references
(``bench_results/go2_imu_leg_fusion_terrains/slope_reference.json``,
``bench_results/go2_driver_ramp/{flat,foam}_step.json``, and for its heading ``bench_results/go2_slope_heading.json``);
writes ``bench_results/go2_heading_command.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_heading_command.py``.
"""

import json
import math
from pathlib import Path

from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_heading_command")
REFERENCES = {"slope": Path("bench_results/go2_imu_leg_fusion_terrains/slope_reference.json"),
              "flat": Path("bench_results/go2_driver_ramp/flat_step.json"),
              "foam": Path("bench_results/go2_driver_ramp/foam_step.json")}
ARMS = {"new_hold_slope": "slope", "new_slope": "slope", "shipped_hold_slope": "slope", "new_hold_flat": "flat",
        "new_hold_foam": "foam"}


def _load(path: Path, terrain: str, hold: bool | None) -> dict:
    report = json.loads(path.read_text())
    if (report["task"] != f"go2/{terrain}" or report["episodes"] != 30 or report["planner"]["prior_weight"] != 100.0
            or report["torch_threads"] != 1 or report["env_overrides"]
            or (hold is not None and report.get("heading_hold", False) != hold)):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    rows = {}
    for arm, terrain in ARMS.items():
        task = f"go2/{terrain}"
        report = _load(DIR / f"{arm}.json", terrain, "hold" in arm)
        reference = _load(REFERENCES[terrain], terrain, None)
        d, low, high = paired_cluster_difference_ci([episode_values(report["per_episode"], task)],
                                                    [episode_values(reference["per_episode"], task)])
        turns = [e["max_heading_change_rad"] for e in report["per_episode"]]
        rows[arm] = {**episode_summary(report["per_episode"], task), "checkpoint": report["checkpoint"],
                     "minus_shipped": {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]},
                     "turned_round": sum(t > math.pi / 2 for t in turns),
                     "shipped": episode_summary(reference["per_episode"], task)}
    shipped_turns = json.loads(Path("bench_results/go2_slope_heading.json").read_text())
    walks_up = (rows["new_hold_slope"]["minus_shipped"]["ci95"][0] > 0 and rows["new_hold_slope"]["turned_round"] <= 3)
    out = {"protocol": "bench_results/GO2_HEADING_COMMAND.md", "seeds": [65500, 65529], "arms": rows,
           "shipped_slope_turned_round": shipped_turns["conditions"]["uphill_10deg"]["turned_round"],
           "verdict": {"heading_in_the_command_lets_the_model_walk_up_the_slope": walks_up,
                       "flat_below_shipped": rows["new_hold_flat"]["minus_shipped"]["ci95"][1] < 0,
                       "foam_below_shipped": rows["new_hold_foam"]["minus_shipped"]["ci95"][1] < 0}}
    Path("bench_results/go2_heading_command.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
