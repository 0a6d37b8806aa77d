"""Reading of UR5E_LIVE_DEMO.md: the UR5e adapting live through the ROS graph on the milder stand-in, three runs.

Reads each run's `summary.json` (`demo_ur5e_peg_mild_shift_20261205{,_r2,_r3}/`), checks it is the protocol's run
(task, deployed planner, 15 simulated minutes, 20 fixed episodes from seed 1001, every process exiting 0), and writes
`ur5e_live_demo.json`: per run the loop, the hot swaps and the fixed-episode success of the shipped and the last
adapted model; pooled over the runs, adapted - shipped and adapted / shipped (two-level bootstrap: runs, then
episodes), with wins, losses and a sign test over the paired episodes. Run from the repository root.
"""

import json
from pathlib import Path

from eval_arms import paired
from simdist_core.eval.stats import cluster_mean_ci, paired_cluster_ratio_ci

RUNS = ("demo_ur5e_peg_mild_shift_20261205", "demo_ur5e_peg_mild_shift_20261205_r2",
        "demo_ur5e_peg_mild_shift_20261205_r3")
OUT = Path("bench_results/ur5e_live_demo.json")


def load(name: str) -> dict:
    """One run's summary, after checking it is the protocol's run."""
    path = Path("bench_results") / name / "summary.json"
    summary = json.loads(path.read_text())
    fixed = summary["fixed_seed_evaluation"]
    if (summary["task"] != "ur5e/peg_mild_shift" or summary["planner_deployed"]["overrides"] != {"prior_weight": "1000"}
            or round(summary["sim_time_s"]) < 900 or fixed["episodes"] != 20 or fixed["first_seed"] != 1001
            or any(code != 0 for code in summary["exit_codes"].values())):
        raise SystemExit(f"{path} is not the protocol's run")
    return summary


runs = {name: load(name) for name in RUNS if (Path("bench_results") / name / "summary.json").exists()}
shipped = [[e["success"] for e in s["fixed_seed_evaluation"]["shipped"]["per_episode"]] for s in runs.values()]
adapted = [[e["success"] for e in s["fixed_seed_evaluation"]["adapted"]["per_episode"]] for s in runs.values()]
out: dict = {"protocol": "bench_results/UR5E_LIVE_DEMO.md", "runs": {}}
for (name, s), ship, adapt in zip(runs.items(), shipped, adapted, strict=True):
    out["runs"][name] = {
        "shipped_success": sum(ship) / len(ship), "adapted_success": sum(adapt) / len(adapt),
        "adapted_model": Path(s["fixed_seed_evaluation"]["adapted_checkpoint"]).name,
        "hot_swaps": len(s["swaps"]), "episodes_lived": int(float(s["robot_diagnostics"]["episodes"])),
        "as_lived_ratio": s["adaptation"]["ratio"]["progress_adapted_over_shipped"],
        "planner_ticks_kept": s["loop"]["planner_ticks_kept"], "fresh_command_share": s["loop"]["fresh_command_share"],
        "achieved_rtf": s["loop"]["achieved_rtf"]}
for label, clusters in (("shipped", shipped), ("adapted", adapted)):
    mean, low, high = cluster_mean_ci(clusters)
    out[f"{label}_success"] = {"mean": mean, "ci95": [low, high]}
ratio, rlow, rhigh = paired_cluster_ratio_ci(adapted, shipped)
out["adapted_minus_shipped"] = paired(adapted, shipped)
out["adapted_over_shipped"] = {"mean": ratio, "ci95": [rlow, rhigh]}
print(json.dumps(out, indent=1))
OUT.write_text(json.dumps(out, indent=1) + "\n")
