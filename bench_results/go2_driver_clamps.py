"""Reading of ``GO2_DRIVER_CLAMPS.md``: the Go2 driver's target clamps against the simulator's unclamped target.

Reads ``bench_results/go2_driver_clamps/{foam,flat}_{step_clamp,tracking_clamp,wide}.json`` and the reference
``bench_results/go2_driver_ramp/{foam,flat}_step.json``; writes ``bench_results/go2_driver_clamps.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_driver_clamps.py``.
"""

import json
from pathlib import Path

from go2_driver_ramp import load as load_reference
from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_driver_clamps")
ARMS = {"step_clamp": {"target_max_step_rad": 0.05}, "tracking_clamp": {"target_max_tracking_error_rad": 0.6},
        "wide": {"target_max_step_rad": 0.25, "target_max_tracking_error_rad": 1.0}}


def load(path: Path, terrain: str, overrides: dict[str, float | str]) -> dict:
    """A report after checking it is a run of these protocols with these env overrides."""
    report = json.loads(path.read_text())
    if (report["task"] != f"go2/{terrain}" or report["episodes"] != 30 or report["planner"]["prior_weight"] != 100.0
            or Path(report["checkpoint"]).name != "go2" or report["torch_threads"] != 1 or report["late_link"]
            or {k: _value(v) for k, v in report["env_overrides"].items()} != overrides):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def _value(text: str) -> float | str:
    """An override's value as the arms write it: a number where it is one."""
    try:
        return float(text)
    except ValueError:
        return text


def read_arms(directory: Path, arms: dict[str, dict[str, float | str]], terrains: tuple[str, ...]) -> tuple[dict, dict]:
    """Per terrain: each arm's summary and its difference from the unclamped reference; per arm: below it anywhere."""
    rows, below = {}, {arm: False for arm in arms}
    for terrain in terrains:
        task = f"go2/{terrain}"
        reports = {"reference_step": load_reference(terrain, "step")}
        reports.update({arm: load(directory / f"{terrain}_{arm}.json", terrain, o) for arm, o in arms.items()})
        reference = episode_values(reports["reference_step"]["per_episode"], task)
        row = {arm: episode_summary(r["per_episode"], task) for arm, r in reports.items()}
        for arm in arms:
            d, low, high = paired_cluster_difference_ci([episode_values(reports[arm]["per_episode"], task)],
                                                        [reference])
            row[f"{arm}_minus_reference"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
            below[arm] = below[arm] or high < 0
        rows[terrain] = row
    return rows, below


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    rows, below = read_arms(DIR, ARMS, ("foam", "flat"))
    out = {"protocol": "bench_results/GO2_DRIVER_CLAMPS.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {"step_clamp_costs_distance": below["step_clamp"],
                       "tracking_clamp_costs_distance": below["tracking_clamp"],
                       "wide_still_costs_distance": below["wide"]}}
    Path("bench_results/go2_driver_clamps.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
