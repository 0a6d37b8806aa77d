"""Reading of ``GO2_IMU_LEG_FUSION.md``: the Go2 driver's base velocity from the IMU fused with leg kinematics.

Reads ``bench_results/go2_imu_leg_fusion/{foam,flat}_{fusion,odom}.json``, the reference
``bench_results/go2_driver_ramp/{foam,flat}_step.json`` and, for the rerun check,
``bench_results/go2_driver_odometry/{foam,flat}_odom.json``; writes ``bench_results/go2_imu_leg_fusion.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_imu_leg_fusion.py``.
"""

import json
from pathlib import Path

import numpy as np
from go2_driver_clamps import load, read_arms
from simdist_core.eval.stats import episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_imu_leg_fusion")
ARMS = {"fusion": {"base_velocity_source": "imu_leg_fusion", "imu_acc_bias_m_s2": 0.2, "imu_acc_noise_m_s2": 0.1},
        "odom": {"base_velocity_source": "leg_odometry"}}
TERRAINS = ("foam", "flat")


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    rows, _ = read_arms(DIR, ARMS, TERRAINS)
    diff = {}
    for terrain in TERRAINS:
        task = f"go2/{terrain}"
        reports = {arm: load(DIR / f"{terrain}_{arm}.json", terrain, o) for arm, o in ARMS.items()}
        values = {arm: episode_values(r["per_episode"], task) for arm, r in reports.items()}
        d, low, high = paired_cluster_difference_ci([values["fusion"]], [values["odom"]])
        diff[terrain] = (low, high)
        row = rows[terrain]
        row["fusion_minus_odom"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
        row["base_vel_rmse_m_s"] = {arm: round(float(np.mean([e["base_vel_rmse_m_s"] for e in r["per_episode"]])), 3)
                                    for arm, r in reports.items()}
        earlier = json.loads(Path(f"bench_results/go2_driver_odometry/{terrain}_odom.json").read_text())
        row["odom_rerun_equals_earlier"] = bool(np.allclose(
            [e["forward_progress_m"] for e in reports["odom"]["per_episode"]],
            [e["forward_progress_m"] for e in earlier["per_episode"]], atol=1e-9))
    foam_above = diff["foam"][0] > 0
    flat_not_below = rows["flat"]["fusion_minus_reference"]["ci95"][1] >= 0
    out = {"protocol": "bench_results/GO2_IMU_LEG_FUSION.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {"foam_fusion_above_odom": foam_above, "flat_fusion_not_below_reference": flat_not_below,
                       "driver_uses_fusion": foam_above and flat_not_below}}
    Path("bench_results/go2_imu_leg_fusion.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
