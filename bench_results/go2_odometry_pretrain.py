"""Reading of ``GO2_ODOMETRY_PRETRAIN.md``: a Go2 model pretrained with the driver's leg-odometry velocity.

Reads ``bench_results/go2_odometry_pretrain/{foam_odom,flat_odom,foam_true}.json``, the shipped model's arms
``bench_results/go2_driver_odometry/{foam,flat}_odom.json`` and its reference
``bench_results/go2_driver_ramp/foam_step.json``; writes ``bench_results/go2_odometry_pretrain.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_odometry_pretrain.py``.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_odometry_pretrain")
ODOM = {"base_velocity_source": "leg_odometry"}


def load(path: Path, terrain: str, overrides: dict[str, str], checkpoint: str) -> dict:
    """A report after checking it is the protocol's run."""
    report = json.loads(path.read_text())
    if (report["task"] != f"go2/{terrain}" or report["episodes"] != 30 or report["planner"]["prior_weight"] != 100.0
            or Path(report["checkpoint"]).name != checkpoint or report["torch_threads"] != 1 or report["late_link"]
            or dict(report["env_overrides"]) != overrides or report["per_episode"] is None):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    arms = {  # name -> (path, terrain, overrides, checkpoint folder name)
        "new_foam_odom": (DIR / "foam_odom.json", "foam", ODOM, "go2_odom"),
        "new_flat_odom": (DIR / "flat_odom.json", "flat", ODOM, "go2_odom"),
        "new_foam_true": (DIR / "foam_true.json", "foam", {}, "go2_odom"),
        "shipped_foam_odom": (Path("bench_results/go2_driver_odometry/foam_odom.json"), "foam", ODOM, "go2"),
        "shipped_flat_odom": (Path("bench_results/go2_driver_odometry/flat_odom.json"), "flat", ODOM, "go2"),
        "shipped_foam_true": (Path("bench_results/go2_driver_ramp/foam_step.json"), "foam", {}, "go2"),
    }
    reports = {name: load(*spec) for name, spec in arms.items()}
    out: dict = {"protocol": "bench_results/GO2_ODOMETRY_PRETRAIN.md", "seeds": [65500, 65529],
                 "arms": {n: episode_summary(r["per_episode"], f"go2/{arms[n][1]}") for n, r in reports.items()}}
    diff = {}
    for case in ("foam_odom", "flat_odom", "foam_true"):
        task = f"go2/{case.split('_')[0]}"
        d, low, high = paired_cluster_difference_ci([episode_values(reports[f"new_{case}"]["per_episode"], task)],
                                                    [episode_values(reports[f"shipped_{case}"]["per_episode"], task)])
        out[f"new_minus_shipped_{case}"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
        diff[case] = (low, high)
    recovers = diff["foam_odom"][0] > 0 and not diff["flat_odom"][1] < 0
    out["verdict"] = {"pretraining_with_the_estimate_recovers_distance": recovers}
    Path("bench_results/go2_odometry_pretrain.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
