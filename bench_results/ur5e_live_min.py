"""Reading of ``UR5E_LIVE_REFERENCE_MIN.md``: the UR5e adapting live with tie 200 and ``reference_returns=min``.

Reads the three live runs' ``summary.json`` (``bench_results/demo_ur5e_mild_shift_live_min_r{1,2,3}/``), checks each
is the protocol's run, and the new-episode arms (``bench_results/ur5e_live_min_new/<name>.json``, seeds
99000-99059); writes ``bench_results/ur5e_live_min.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/ur5e_live_min.py``.
"""

import json
from collections.abc import Callable
from pathlib import Path

from eval_arms import paired, pooled_ci
from simdist_core.eval.stats import paired_cluster_ratio_ci
from ur5e_reference_min import arm_row, goal_met, load, verdict, versus

TASK = "ur5e/peg_mild_shift"
RUNS = ("r1", "r2", "r3")
FOLDER = Path("bench_results/ur5e_live_min_new")
SETS = ["planner.adapted_prior_weight=200", 'planner.planner_overrides=["prior_weight=1000","reference_returns=min"]']


def load_live_run(path: Path, sets_ok: Callable[[list[str]], bool], adapted_overrides: dict[str, str],
                  task: str = TASK, minutes: float = 15.0) -> dict:  # fmt: skip
    """A live UR5e demo run's summary, checked to be a protocol's run.

    Checked: the task, the simulated minutes, the demo's 20 fixed episodes on one torch thread, every process exiting
    0, the ``--set`` list (``sets_ok``) and the adapted model's planner overrides.
    """
    summary = json.loads(path.read_text())
    fixed = summary["fixed_seed_evaluation"]
    if (
        summary["task"] != task
        or not sets_ok(fixed["set"])
        or round(summary["sim_time_s"]) < 60 * minutes
        or fixed["episodes"] != 20
        or fixed["first_seed"] != 1001
        or fixed["torch_threads"] != 1
        or fixed["adapted"]["planner_overrides"] != adapted_overrides
        or any(code != 0 for code in summary["exit_codes"].values())
    ):
        raise SystemExit(f"{path} is not the protocol's run")
    return summary


def load_run(run: str) -> dict:
    """One live run's summary, checked to be the protocol's run."""
    return load_live_run(Path(f"bench_results/demo_ur5e_mild_shift_live_min_{run}/summary.json"),
                         lambda sets: sets[:2] == SETS and sets[2].endswith("/checkpoints/ur5e"),
                         {"prior_weight": "200.0", "reference_returns": "min"})


def load_arm(name: str, tie: float, rule: str) -> dict:
    """One new-episode arm's report, checked to be the protocol's run (the checks of ``ur5e_reference_min.load``)."""
    return load(FOLDER, name, 60, 99000, tie, rule)


def loop_row(summary: dict) -> dict:
    """What the live run did: the loop, the swaps, the planner's sample budget, insertions as lived."""
    planner, loop = summary["planner"], summary["loop"]
    return {"hot_swaps": len(summary["swaps"]), "swaps_refused": int(planner["swaps_refused"]),
            "episodes_lived": int(float(summary["robot_diagnostics"]["episodes"])),
            "insertions_lived": int(summary["progress_total"]),
            "planner_ticks_kept": round(loop["planner_ticks_kept"], 4),
            "fresh_command_share": round(loop["fresh_command_share"], 4), "achieved_rtf": loop["achieved_rtf"],
            "gaussian_samples_at_end": int(planner["num_samples"]),
            "sample_step_downs": int(planner["samples_reductions"]),
            "sample_step_ups": int(planner["samples_increases"]),
            "tick_p50_ms": float(planner["tick_latency_p50_ms"]), "tick_p99_ms": float(planner["tick_latency_p99_ms"]),
            "prior_weight_at_end": float(planner["prior_weight"]),
            "as_lived_adapted_over_shipped": summary["adaptation"]["ratio"]["progress_adapted_over_shipped"],
            "adapted_model": Path(summary["fixed_seed_evaluation"]["adapted_checkpoint"]).name}  # fmt: skip


def demo_reading(runs: dict[str, dict]) -> dict:
    """Reading 2: the demo's 20 fixed episodes, last adapted minus shipped, pooled over the runs."""
    ev = {
        k: [[float(e["success"]) for e in s["fixed_seed_evaluation"][k]["per_episode"]] for s in runs.values()]
        for k in ("shipped", "adapted")
    }
    diff = paired(ev["adapted"], ev["shipped"])
    out: dict = {
        **diff,
        "verdict": verdict(
            diff, "the live graph adapts above the deployed planner", "below the deployed planner", "not shown"
        ),
        "shipped": pooled_ci(ev["shipped"]),
        "adapted": pooled_ci(ev["adapted"]),
        "per_run": {
            k: [sum(c) / len(c) for c in ev[name]] for k, name in (("shipped", "shipped"), ("adapted", "adapted"))
        },
    }
    try:
        ratio, low, high = paired_cluster_ratio_ci(ev["adapted"], ev["shipped"])
        out["ratio"] = {"mean": round(ratio, 3), "ci95": [round(low, 3), round(high, 3)]}
    except ValueError as exc:
        out["ratio_error"] = str(exc)
    return out


def main() -> None:
    """The protocol's readings, printed and written."""
    runs = {run: load_run(run) for run in RUNS}
    shipped = [load_arm("shipped_1000", 1000.0, "")]
    live = [load_arm(f"live_min_{run}", 200.0, "min") for run in RUNS]
    deciding = versus(live, shipped)
    goal = goal_met(deciding)
    out: dict = {
        "protocol": "bench_results/UR5E_LIVE_REFERENCE_MIN.md", "task": TASK, "new_episode_seeds": [99000, 99059],
        "live_minus_deployed_zero_shot": {**deciding, "verdict": verdict(
            deciding, "the live graph adapts above the deployed planner", "below the deployed planner", "not shown"),
            "issue_goal_met": goal},
        "demo_fixed_episodes": demo_reading(runs),
        "loop": {run: loop_row(s) for run, s in runs.items()},
        "arms": {"shipped_1000": arm_row(shipped), "live_min": arm_row(live)},
    }  # fmt: skip
    old = [FOLDER / f"live_1000_{run}.json" for run in RUNS]
    if all(p.exists() for p in old):
        before = [load_arm(f"live_1000_{run}", 1000.0, "") for run in RUNS]
        compare = versus(live, before)
        out["live_min_minus_live_1000"] = {
            **compare,
            "verdict": verdict(compare, "better than the tie-1000 live loop", "worse", "not shown"),
        }
        out["arms"]["live_1000"] = arm_row(before)
        # added after the reading, no verdict: the earlier live models against the deployed zero-shot here
        out["beside_live_1000_minus_deployed_zero_shot"] = versus(before, shipped)
    else:
        out["live_min_minus_live_1000"] = "not run"
    at1000 = [FOLDER / f"live_min_at1000_{run}.json" for run in RUNS]
    if all(p.exists() for p in at1000) and all(p.exists() for p in old):  # the addendum's arms, beside, no verdict
        tight = [load_arm(f"live_min_at1000_{run}", 1000.0, "") for run in RUNS]
        out["addendum_live_min_models_at_tie_1000"] = {
            "minus_deployed_zero_shot": versus(tight, shipped),
            "minus_live_1000_models": versus(tight, [load_arm(f"live_1000_{run}", 1000.0, "") for run in RUNS]),
        }
        out["arms"]["live_min_at1000"] = arm_row(tight)
    at200 = [FOLDER / f"live_min_at200_{run}.json" for run in RUNS]
    if all(p.exists() for p in at200):  # the second addendum's arms, beside, no verdict
        loose = [load_arm(f"live_min_at200_{run}", 200.0, "") for run in RUNS]
        out["second_addendum_live_min_models_at_tie_200_without_min"] = {
            "minus_with_min": versus(loose, live),
            "minus_deployed_zero_shot": versus(loose, shipped),
        }
        out["arms"]["live_min_at200"] = arm_row(loose)
    Path("bench_results/ur5e_live_min.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
