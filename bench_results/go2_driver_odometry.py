"""Reading of ``GO2_DRIVER_ODOMETRY.md``: the Go2 driver's leg odometry as the model's base velocity.

Reads ``bench_results/go2_driver_odometry/{foam,flat}_{odom,odom_unfiltered}.json`` and the reference
``bench_results/go2_driver_ramp/{foam,flat}_step.json``; writes ``bench_results/go2_driver_odometry.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_driver_odometry.py``.
"""

import json
from pathlib import Path

from go2_driver_clamps import load, read_arms
from simdist_core.eval.stats import episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_driver_odometry")
ARMS = {"odom": {"base_velocity_source": "leg_odometry"},
        "odom_unfiltered": {"base_velocity_source": "leg_odometry", "leg_odometry_filter_alpha": 1.0}}
TERRAINS = ("foam", "flat")


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    rows, below = read_arms(DIR, ARMS, TERRAINS)
    above, under = {}, {}
    for terrain in TERRAINS:
        values = {arm: episode_values(load(DIR / f"{terrain}_{arm}.json", terrain, o)["per_episode"], f"go2/{terrain}")
                  for arm, o in ARMS.items()}
        d, low, high = paired_cluster_difference_ci([values["odom_unfiltered"]], [values["odom"]])
        rows[terrain]["odom_unfiltered_minus_odom"] = {"difference": round(d, 3),
                                                       "ci95": [round(low, 3), round(high, 3)]}
        above[terrain], under[terrain] = low > 0, high < 0
    unfiltered_better = any(above[t] and not under[o] for t, o in (("foam", "flat"), ("flat", "foam")))
    out = {"protocol": "bench_results/GO2_DRIVER_ODOMETRY.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {"odometry_costs_distance": below["odom"],
                       "unfiltered_is_better": below["odom"] and unfiltered_better}}
    Path("bench_results/go2_driver_odometry.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
