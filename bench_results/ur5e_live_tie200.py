"""Reading of ``UR5E_LIVE_TIE200.md``: the UR5e adapting live with every finetuned model planned at tie 200.

Reads the three live runs' ``summary.json`` (``bench_results/demo_ur5e_mild_shift_live200_r{1,2,3}/``), checks each
is the protocol's run, and the new-episode arms (``bench_results/ur5e_live200_new/<name>.json``, seeds
101000-101059); writes ``bench_results/ur5e_live_tie200.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/ur5e_live_tie200.py``.
"""

import json
from pathlib import Path

from ur5e_live_min import demo_reading, loop_row
from ur5e_reference_min import arm_row, load, verdict, versus

TASK = "ur5e/peg_mild_shift"
RUNS = ("r1", "r2", "r3")
FOLDER = Path("bench_results/ur5e_live200_new")
FIRST_SEED = 101000


def load_run(run: str) -> dict:
    """One live run's summary, checked to be the protocol's run."""
    path = Path(f"bench_results/demo_ur5e_mild_shift_live200_{run}/summary.json")
    summary = json.loads(path.read_text())
    fixed = summary["fixed_seed_evaluation"]
    if (
        summary["task"] != TASK
        or fixed["set"] != ["planner.adapted_prior_weight=200"]
        or round(summary["sim_time_s"]) < 900
        or fixed["episodes"] != 20
        or fixed["first_seed"] != 1001
        or fixed["torch_threads"] != 1
        or fixed["adapted"]["planner_overrides"] != {"prior_weight": "200.0"}
        or any(code != 0 for code in summary["exit_codes"].values())
    ):
        raise SystemExit(f"{path} is not the protocol's run")
    return summary


def main() -> None:
    """The protocol's readings, printed and written."""
    runs = {run: load_run(run) for run in RUNS}
    shipped = [load(FOLDER, "shipped_1000", 60, FIRST_SEED, 1000.0, "")]
    live = [load(FOLDER, f"live200_{run}", 60, FIRST_SEED, 200.0, "") for run in RUNS]
    deciding = versus(live, shipped)
    goal = deciding["ratio"] is not None and deciding["ratio"] >= 2.0 and deciding["difference"] >= 0.30
    out: dict = {
        "protocol": "bench_results/UR5E_LIVE_TIE200.md", "task": TASK,
        "new_episode_seeds": [FIRST_SEED, FIRST_SEED + 59],
        "live_minus_deployed_zero_shot": {**deciding, "verdict": verdict(
            deciding, "the live graph adapts above the deployed planner", "below the deployed planner", "not shown"),
            "issue_goal_met": goal},
        "demo_fixed_episodes": demo_reading(runs),
        "loop": {run: loop_row(s) for run, s in runs.items()},
        "arms": {"shipped_1000": arm_row(shipped), "live200": arm_row(live)},
    }  # fmt: skip
    old = [FOLDER / f"live_1000_{run}.json" for run in RUNS]
    if all(p.exists() for p in old):
        before = [load(FOLDER, f"live_1000_{run}", 60, FIRST_SEED, 1000.0, "") for run in RUNS]
        compare = versus(live, before)
        out["live200_minus_live_1000"] = {
            **compare, "verdict": verdict(compare, "better than the tie-1000 live loop", "worse", "not shown")}
        out["arms"]["live_1000"] = arm_row(before)
        # added after the reading, no verdict: the tie-1000 live models against the deployed zero-shot here
        out["beside_live_1000_minus_deployed_zero_shot"] = versus(before, shipped)
    else:
        out["live200_minus_live_1000"] = "not run"
    Path("bench_results/ur5e_live_tie200.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
