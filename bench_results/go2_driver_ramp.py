"""Reading of ``GO2_DRIVER_RAMP.md``: the Go2 driver's target ramp against the simulator's step, on foam and flat.

Reads ``bench_results/go2_driver_ramp/{foam,flat}_{step,ramp}.json``; writes ``bench_results/go2_driver_ramp.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_driver_ramp.py``.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_driver_ramp")


def load(terrain: str, arm: str) -> dict:
    """A report after checking it is the protocol's run."""
    path = DIR / f"{terrain}_{arm}.json"
    report = json.loads(path.read_text())
    ramp = report["env_overrides"].get("target_ramp_s")
    if (report["task"] != f"go2/{terrain}" or report["episodes"] != 30 or report["planner"]["prior_weight"] != 100.0
            or Path(report["checkpoint"]).name != "go2" or report["torch_threads"] != 1 or report["late_link"]
            or (ramp is None) != (arm == "step") or (arm == "ramp" and float(ramp) != 0.02)):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    out: dict = {"protocol": "bench_results/GO2_DRIVER_RAMP.md", "seeds": [65500, 65529], "terrains": {}}
    below, above = {}, {}
    for terrain in ("foam", "flat"):
        task = f"go2/{terrain}"
        reports = {arm: load(terrain, arm) for arm in ("step", "ramp")}
        row = {arm: episode_summary(r["per_episode"], task) for arm, r in reports.items()}
        d, low, high = paired_cluster_difference_ci([episode_values(reports["ramp"]["per_episode"], task)],
                                                    [episode_values(reports["step"]["per_episode"], task)])
        row["ramp_minus_step"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
        out["terrains"][terrain] = row
        below[terrain], above[terrain] = high < 0, low > 0
    costs = any(below[t] and not above[o] for t, o in (("foam", "flat"), ("flat", "foam")))
    helps = any(above[t] and not below[o] for t, o in (("foam", "flat"), ("flat", "foam")))
    out["verdict"] = {"ramp_costs_distance": costs, "ramp_helps": helps and not costs}
    Path("bench_results/go2_driver_ramp.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
