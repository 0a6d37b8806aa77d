"""Reading of ``GO2_IMU_LEG_FUSION_TERRAINS.md``: the IMU + legs base velocity on slope and rough, and worse IMUs.

Reads ``bench_results/go2_imu_leg_fusion_terrains/*.json`` and the committed foam arms
(``bench_results/go2_imu_leg_fusion/foam_{fusion,odom}.json``, ``bench_results/go2_driver_ramp/foam_step.json``);
writes ``bench_results/go2_imu_leg_fusion_terrains.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_imu_leg_fusion_terrains.py``.
"""

import json
from pathlib import Path

import numpy as np
from go2_driver_clamps import load
from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_imu_leg_fusion_terrains")
FUSION = {"base_velocity_source": "imu_leg_fusion", "imu_acc_bias_m_s2": 0.2, "imu_acc_noise_m_s2": 0.1}
ARMS = {"reference": {}, "odom": {"base_velocity_source": "leg_odometry"}, "fusion": FUSION}
WORSE = {"base_velocity_source": "imu_leg_fusion", "imu_acc_bias_m_s2": 0.5, "imu_acc_noise_m_s2": 0.25}


def _difference(a: list[float], b: list[float]) -> dict:
    d, low, high = paired_cluster_difference_ci([a], [b])
    return {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}


def _rmse(report: dict) -> float | None:
    errors = [e["base_vel_rmse_m_s"] for e in report["per_episode"] if "base_vel_rmse_m_s" in e]
    return round(float(np.mean(errors)), 3) if errors else None


def _row(reports: dict[str, dict], task: str) -> dict:
    values = {arm: episode_values(r["per_episode"], task) for arm, r in reports.items()}
    row = {arm: episode_summary(r["per_episode"], task) for arm, r in reports.items()}
    for arm in reports:
        if arm != "reference":
            row[f"{arm}_minus_reference"] = _difference(values[arm], values["reference"])
    for arm in reports:
        if arm.startswith("fusion"):
            row[f"{arm}_minus_odom"] = _difference(values[arm], values["odom"])
    if "fusion_worse_imu" in reports:
        row["fusion_worse_imu_minus_fusion"] = _difference(values["fusion_worse_imu"], values["fusion"])
    row["base_vel_rmse_m_s"] = {arm: _rmse(r) for arm, r in reports.items() if arm != "reference"}
    return row


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    rows = {}
    for terrain in ("slope", "rough"):
        rows[terrain] = _row({arm: load(DIR / f"{terrain}_{arm}.json", terrain, o) for arm, o in ARMS.items()},
                             f"go2/{terrain}")
    foam = {"reference": load(Path("bench_results/go2_driver_ramp/foam_step.json"), "foam", {}),
            "odom": load(Path("bench_results/go2_imu_leg_fusion/foam_odom.json"), "foam", ARMS["odom"]),
            "fusion": load(Path("bench_results/go2_imu_leg_fusion/foam_fusion.json"), "foam", FUSION),
            "fusion_worse_imu": load(DIR / "foam_fusion_worse_imu.json", "foam", WORSE)}
    rows["foam"] = _row(foam, "go2/foam")

    def not_below(terrain: str, key: str) -> bool:
        return rows[terrain][key]["ci95"][1] >= 0

    holds_terrains = all(not_below(t, k) for t in ("slope", "rough") for k in ("fusion_minus_odom",
                                                                                 "fusion_minus_reference"))
    out = {"protocol": "bench_results/GO2_IMU_LEG_FUSION_TERRAINS.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {"fusion_does_not_cost_on_slope_and_rough": holds_terrains,
                       "foam_gain_survives_worse_imu": rows["foam"]["fusion_worse_imu_minus_odom"]["ci95"][0] > 0}}
    Path("bench_results/go2_imu_leg_fusion_terrains.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
