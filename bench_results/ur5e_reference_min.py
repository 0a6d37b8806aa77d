"""Reading of ``UR5E_REFERENCE_MIN.md``: the tie-200 UR5e models with plans also scored by the pretrained dynamics.

Reads ``bench_results/ur5e_reference_min/<name>.json`` (60 episodes, seeds 98000-98059) and writes
``bench_results/ur5e_reference_min.json``; with ``--explore`` the 20-episode exploratory runs before the protocol
(``bench_results/ur5e_reference_min_explore/``, seeds 97000-97019, also ``reference_returns=mean``), printed only.
Run from the repository root: ``PYTHONPATH=src/simdist_core:bench_results python bench_results/ur5e_reference_min.py``.
"""

import json
import sys
from pathlib import Path

from eval_arms import FUNNEL, paired, pooled_ci
from simdist_core.eval.stats import episode_values

TASK = "ur5e/peg_mild_shift"
SEEDS = (0, 1, 2)
TIES = {"shipped_1000": (1000.0, ""), "shipped_200": (200.0, "")}


def load(folder: Path, name: str, episodes: int, first_seed: int, tie: float, rule: str, task: str = TASK,
         preset: str = "cpu") -> dict:  # fmt: skip
    """One arm's report, checked to be the protocol's run (task, episodes, seed, preset, tie, rule, reference)."""
    path = folder / f"{name}.json"
    report = json.loads(path.read_text())
    planner = report["planner"]
    if (report["task"] != task or report["episodes"] != episodes or report.get("seed") != first_seed
            or report["preset"] != preset or report["torch_threads"] != 1 or planner["prior_weight"] != tie
            or planner.get("reference_returns", "") != rule or report["env_overrides"] != {}):
        raise SystemExit(f"{path}: not the protocol's run")
    if rule and report.get("reference") != "checkpoints/ur5e":
        raise SystemExit(f"{path}: scored with another reference ({report.get('reference')})")
    return report


def successes(report: dict) -> list[float]:
    """Per-episode success (1.0 or 0.0)."""
    return episode_values(report["per_episode"], report["task"])


def arm_row(reports: list[dict]) -> dict:
    """Success pooled over an arm's models with its interval, the funnel, plan time."""
    return {"success": pooled_ci([successes(r) for r in reports]),
            "funnel": {k: round(sum(float(e.get(k, 0.0)) for r in reports for e in r["per_episode"])
                                / sum(len(r["per_episode"]) for r in reports), 3) for k in FUNNEL},
            "plan_ms_p50": [round(r["plan_ms_p50"], 1) for r in reports],
            "plan_ms_p99": [round(r["plan_ms_p99"], 1) for r in reports]}  # fmt: skip


def versus(a: list[dict], b: list[dict]) -> dict:
    """Paired a minus b over the same episodes (b has one report, repeated for each of a's models, or as many)."""
    b = b * len(a) if len(b) == 1 else b
    diff = paired([successes(r) for r in a], [successes(r) for r in b])
    mean_a = sum(map(sum, map(successes, a))) / sum(len(r["per_episode"]) for r in a)
    mean_b = sum(map(sum, map(successes, b))) / sum(len(r["per_episode"]) for r in b)
    return {**diff, "difference": round(diff["difference"], 3), "ci95": [round(x, 3) for x in diff["ci95"]],
            "ratio": round(mean_a / mean_b, 3) if mean_b > 0 else None}


def goal_met(reading: dict) -> bool:
    """The issue's goal on a ``versus`` reading, at the point estimate: success ratio at least 2 and at least +0.30."""
    return reading["ratio"] is not None and reading["ratio"] >= 2.0 and reading["difference"] >= 0.30


def verdict(reading: dict, above: str, below: str, neither: str) -> str:
    """The protocol's words for a paired interval."""
    low, high = reading["ci95"]
    return above if low > 0 else below if high < 0 else neither


def main() -> None:
    """The protocol's readings (or, with ``--explore``, the exploratory runs'), printed (and written)."""
    explore = "--explore" in sys.argv[1:]
    folder = Path("bench_results/ur5e_reference_min" + ("_explore" if explore else ""))
    episodes, first = (20, 97000) if explore else (60, 98000)
    arms = {"tie200": "", "tie200min": "min", **({"tie200mean": "mean"} if explore else {})}
    reports = {name: [load(folder, name, episodes, first, tie, rule)] for name, (tie, rule) in TIES.items()}
    for arm, rule in arms.items():
        reports[arm] = [load(folder, f"{arm}_s{k}", episodes, first, 200.0, rule) for k in SEEDS]
    helps = versus(reports["tie200min"], reports["tie200"])
    deployed = versus(reports["tie200min"], reports["shipped_1000"])
    goal = goal_met(deployed)
    out = {
        "protocol": "bench_results/UR5E_REFERENCE_MIN.md", "task": TASK, "seeds": [first, first + episodes - 1],
        "exploratory": explore,
        "min_minus_adapted_alone": {**helps, "verdict": verdict(helps, "the pessimistic reference helps", "hurts",
                                                                "not shown")},
        "min_minus_deployed_zero_shot": {**deployed, "verdict": verdict(
            deployed, "beats the deployed planner", "below the deployed planner", "level with the deployed planner"),
            "issue_goal_met_against_deployed": goal},
        "min_minus_same_planner_zero_shot": versus(reports["tie200min"], reports["shipped_200"]),
        "adapted_alone_minus_deployed_zero_shot": versus(reports["tie200"], reports["shipped_1000"]),
        "arms": {name: arm_row(r) for name, r in reports.items()},
    }  # fmt: skip
    if explore:
        out["mean_minus_adapted_alone"] = versus(reports["tie200mean"], reports["tie200"])
    else:
        Path("bench_results/ur5e_reference_min.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
