"""Reading of ``GO2_DRIVER_CLAMPS_SPLIT.md``: the raised Go2 driver clamps one at a time.

Reads ``bench_results/go2_driver_clamps_split/{flat,foam}_{step_wide,tracking_wide}.json`` and the reference
``bench_results/go2_driver_ramp/{flat,foam}_step.json``; writes ``bench_results/go2_driver_clamps_split.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_driver_clamps_split.py``.
"""

import json
from pathlib import Path

import go2_driver_clamps
from go2_driver_ramp import load as load_reference
from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

go2_driver_clamps.DIR = Path("bench_results/go2_driver_clamps_split")
go2_driver_clamps.ARMS = {"step_wide": {"target_max_step_rad": 0.25},
                          "tracking_wide": {"target_max_tracking_error_rad": 1.0}}


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    out: dict = {"protocol": "bench_results/GO2_DRIVER_CLAMPS_SPLIT.md", "seeds": [65500, 65529], "terrains": {}}
    below: dict[str, bool] = {}
    for terrain in ("flat", "foam"):
        task = f"go2/{terrain}"
        reports = {"reference_step": load_reference(terrain, "step")}
        reports.update({arm: go2_driver_clamps.load(terrain, arm) for arm in go2_driver_clamps.ARMS})
        reference = episode_values(reports["reference_step"]["per_episode"], task)
        row = {arm: episode_summary(r["per_episode"], task) for arm, r in reports.items()}
        for arm in go2_driver_clamps.ARMS:
            d, low, high = paired_cluster_difference_ci([episode_values(reports[arm]["per_episode"], task)],
                                                        [reference])
            row[f"{arm}_minus_reference"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
            below[arm] = below.get(arm, False) or high < 0
        out["terrains"][terrain] = row
    out["verdict"] = {"step_limit_0.25_costs_distance": below["step_wide"],
                      "tracking_bound_1.0_costs_distance": below["tracking_wide"]}
    Path("bench_results/go2_driver_clamps_split.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
