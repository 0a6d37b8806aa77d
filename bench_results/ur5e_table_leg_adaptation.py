"""Readings of ``UR5E_TABLE_LEG_ADAPTATION.md``: the table-leg model adapting to the milder stand-in.

Part A (deciding): the three live runs' ``summary.json`` (``bench_results/demo_ur5e_table_leg_mild_shift_r{1,2,3}/``),
each checked to be the protocol's run, and the new-episode arms (``bench_results/ur5e_table_leg_live_new/<name>.json``,
seeds 111000-111059): the live models at tie 200 minus the deployed zero-shot at tie 1000, pooled over the runs'
models. Part B (when its merged report exists): the in-process benchmark at 25 minutes, dynamics-only minus zero-shot
and minus full finetuning, pooled over the seeds. Writes ``bench_results/ur5e_table_leg_adaptation.json``; a part
whose files are not all there is reported as not run. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/ur5e_table_leg_adaptation.py``.
"""

import json
from pathlib import Path

from adaptation_ur5e_peg_mild_shift_tie200 import episodes
from eval_arms import paired, pooled_ci
from ur5e_live_min import demo_reading, load_live_run, loop_row
from ur5e_reference_min import arm_row, goal_met, load, verdict, versus

TASK = "ur5e/table_leg_mild_shift"
RUNS = ("r1", "r2", "r3")
FOLDER = Path("bench_results/ur5e_table_leg_live_new")
FIRST_SEED = 111000
MINUTES = 25.0
BENCH = Path("bench_results/adaptation_ur5e_table_leg_mild_shift.json")
ADAPTED = "the live graph adapts above the deployed planner"


def part_a() -> dict:
    """The deciding reading: live models minus the deployed zero-shot on the 60 new episodes."""
    summaries = [Path(f"bench_results/demo_ur5e_table_leg_mild_shift_{run}/summary.json") for run in RUNS]
    names = ["shipped_1000", *(f"live200_{run}" for run in RUNS)]
    if not all(p.exists() for p in summaries) or not all((FOLDER / f"{n}.json").exists() for n in names):
        return {"status": "not run"}
    runs = {run: load_live_run(path, lambda sets: sets == [], {"prior_weight": "200.0"}, task=TASK, minutes=MINUTES)
            for run, path in zip(RUNS, summaries, strict=True)}  # fmt: skip
    arm = {"task": TASK, "preset": "checkpoint"}
    shipped = [load(FOLDER, "shipped_1000", 60, FIRST_SEED, 1000.0, "", **arm)]
    live = [load(FOLDER, f"live200_{run}", 60, FIRST_SEED, 200.0, "", **arm) for run in RUNS]
    deciding = versus(live, shipped)
    return {"new_episode_seeds": [FIRST_SEED, FIRST_SEED + 59],
            "live_minus_deployed_zero_shot": {**deciding, "verdict": verdict(
                deciding, ADAPTED, "below the deployed planner", "not shown"), "issue_goal_met": goal_met(deciding)},
            "arms": {"shipped_1000": arm_row(shipped), "live200": arm_row(live)},
            "demo_fixed_episodes": demo_reading(runs),
            "loop": {run: loop_row(s) for run, s in runs.items()}}  # fmt: skip


def part_b() -> dict:
    """The in-process benchmark at 25 minutes, pooled over its seeds."""
    if not BENCH.exists():
        return {"status": "not run"}
    report = json.loads(BENCH.read_text())
    last = report["config"]["minutes"][-1]
    if report["task"] != TASK or last != MINUTES or len(report["seeds"]) < 3:
        raise SystemExit(f"{BENCH} is not the protocol's run")
    series = {"zero_shot": episodes(report, "zero_shot", 0.0),
              "dynamics_only": episodes(report, "dynamics_only", last),
              "full_finetune": episodes(report, "full_finetune", last)}  # fmt: skip
    zero = paired(series["dynamics_only"], series["zero_shot"])
    rate = {name: pooled_ci(s) for name, s in series.items()}
    mean = {name: sum(map(sum, s)) / sum(map(len, s)) for name, s in series.items()}
    ratio = mean["dynamics_only"] / mean["zero_shot"] if mean["zero_shot"] > 0 else None
    versus_full = paired(series["dynamics_only"], series["full_finetune"])
    goal = (ratio is not None and ratio >= 2.0 and zero["difference"] >= 0.30 and zero["ci95"][0] > 0
            and versus_full["ci95"][1] >= 0)  # fmt: skip
    rounds = report["results"]["dynamics_only"].get("rounds_per_seed", [])  # reports of one round have none
    return {"seeds": report["seeds"], "minutes": last, "success": rate,
            "dynamics_only_minus_zero_shot": {**zero, "ratio": ratio, "verdict": verdict(
                zero, "adapts above zero-shot", "below zero-shot", "not shown")},
            "dynamics_only_minus_full_finetune": {**versus_full, "verdict": verdict(
                versus_full, "above full finetuning", "below full finetuning", "not shown")},
            "issue_goal_met": goal,
            "rounds_accepted_per_seed": [sum(g["gate"]["passed"] for g in r) for r in rounds],
            "rounds_per_seed": [len(r) for r in rounds],
            "latent_error_ratio_zero_shot_over_dynamics_only":
                report["summary"]["dynamics_only"]["latent_error_ratio_zero_shot_over_method"]}  # fmt: skip


def main() -> None:
    """Both parts' readings, printed and written."""
    out = {"protocol": "bench_results/UR5E_TABLE_LEG_ADAPTATION.md", "task": TASK,
           "part_a_live_graph": part_a(), "part_b_in_process": part_b()}  # fmt: skip
    Path("bench_results/ur5e_table_leg_adaptation.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
