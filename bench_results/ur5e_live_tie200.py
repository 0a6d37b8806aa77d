"""Reading of ``UR5E_LIVE_TIE200.md``: the UR5e adapting live with every finetuned model planned at tie 200.

Reads the three live runs' ``summary.json`` (``bench_results/demo_ur5e_mild_shift_live200_r{1,2,3}/``), checks each
is the protocol's run, and the new-episode arms (``bench_results/ur5e_live200_new/<name>.json``, seeds
101000-101059; the addendum's ``bench_results/ur5e_live200_new2/``, seeds 102000-102059, when they exist); writes
``bench_results/ur5e_live_tie200.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/ur5e_live_tie200.py``.
"""

import json
from pathlib import Path

from ur5e_live_min import demo_reading, load_live_run, loop_row
from ur5e_reference_min import arm_row, goal_met, load, verdict, versus

TASK = "ur5e/peg_mild_shift"
RUNS = ("r1", "r2", "r3")
FOLDER = Path("bench_results/ur5e_live200_new")
FIRST_SEED = 101000


def load_run(run: str) -> dict:
    """One live run's summary, checked to be the protocol's run."""
    return load_live_run(Path(f"bench_results/demo_ur5e_mild_shift_live200_{run}/summary.json"),
                         lambda sets: sets == ["planner.adapted_prior_weight=200"], {"prior_weight": "200.0"})


SECOND = (Path("bench_results/ur5e_live200_new2"), 102000)


def arms(folder: Path, first_seed: int) -> dict[str, list[dict]]:
    """One set's arms: the deployed zero-shot, the tie-200 live models, and the tie-1000 live models if they ran."""
    out = {"shipped_1000": [load(folder, "shipped_1000", 60, first_seed, 1000.0, "")],
           "live200": [load(folder, f"live200_{run}", 60, first_seed, 200.0, "") for run in RUNS]}
    if all((folder / f"live_1000_{run}.json").exists() for run in RUNS):
        out["live_1000"] = [load(folder, f"live_1000_{run}", 60, first_seed, 1000.0, "") for run in RUNS]
    return out


def readings(sets: dict[str, list[dict]]) -> dict:
    """The paired readings of one set (or of sets joined episode-wise), with the protocol's words."""
    deciding = versus(sets["live200"], sets["shipped_1000"])
    goal = goal_met(deciding)
    out: dict = {
        "live_minus_deployed_zero_shot": {**deciding, "verdict": verdict(
            deciding, "the live graph adapts above the deployed planner", "below the deployed planner", "not shown"),
            "issue_goal_met": goal},
        "arms": {name: arm_row(reports) for name, reports in sets.items()},
    }  # fmt: skip
    if "live_1000" in sets:
        compare = versus(sets["live200"], sets["live_1000"])
        out["live200_minus_live_1000"] = {
            **compare, "verdict": verdict(compare, "better than the tie-1000 live loop", "worse", "not shown")}
        # added after the first reading, no verdict: the tie-1000 live models against the deployed zero-shot
        out["beside_live_1000_minus_deployed_zero_shot"] = versus(sets["live_1000"], sets["shipped_1000"])
    else:
        out["live200_minus_live_1000"] = "not run"
    return out


def joined(a: dict[str, list[dict]], b: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Two sets' arms as one: each model's episodes of the first set, then of the second."""
    return {name: [{**ra, "per_episode": ra["per_episode"] + rb["per_episode"]} for ra, rb in zip(a[name], b[name],
                                                                                                   strict=True)]
            for name in a if name in b}  # fmt: skip


def main() -> None:
    """The protocol's readings (and the addendum's, when its arms exist), printed and written."""
    runs = {run: load_run(run) for run in RUNS}
    first = arms(FOLDER, FIRST_SEED)
    out: dict = {"protocol": "bench_results/UR5E_LIVE_TIE200.md", "task": TASK,
                 "new_episode_seeds": [FIRST_SEED, FIRST_SEED + 59], **readings(first),
                 "demo_fixed_episodes": demo_reading(runs), "loop": {run: loop_row(s) for run, s in runs.items()}}
    folder, seed = SECOND
    if (folder / "live_1000_r3.json").exists():
        second = arms(folder, seed)
        out["addendum_second_set"] = {"new_episode_seeds": [seed, seed + 59], **readings(second)}
        out["addendum_both_sets_pooled"] = readings(joined(first, second))  # beside, no verdict
    Path("bench_results/ur5e_live_tie200.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
