"""Reading of ``GO2_CSR_PTFE_CONFIRM.md``: the relabelled-with-replay model's PTFE-adapted dynamics on new episodes.

Reads ``bench_results/go2_csr_ptfe_confirm/<name>_<planner>.json`` and writes
``bench_results/go2_csr_ptfe_confirm.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_confirm.py``.
"""

import json
from pathlib import Path

from eval_arms import progress_against_zero_shot, ratio_of_pooled_means

TASK = "go2/ptfe_slope"
EPISODES = 60
DIR = Path("bench_results/go2_csr_ptfe_confirm")
ADAPTED = ("adapted_seed0", "adapted_seed1", "adapted_seed2")
PLANNERS = {  # planner name: (prior_weight, terminal_value)
    "plain": (0.0, True),
    "novalue": (0.0, False),
    "deployed": (100.0, True),
}


def _load(name: str, planner: str) -> dict:
    path = DIR / f"{name}_{planner}.json"
    report = json.loads(path.read_text())
    prior_weight, terminal_value = PLANNERS[planner]
    if (report["task"] != TASK or report["episodes"] != EPISODES or report["preset"] != "cpu"
            or report["planner"]["prior_weight"] != prior_weight
            or report["planner"]["terminal_value"] is not terminal_value or report["torch_threads"] != 1
            or not report.get("heading_hold", False) or report["env_overrides"] != {}):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def _planner(planner: str) -> dict:
    """Every model's summary, each adapted model's paired difference to zero-shot, the pooled difference."""
    reports = {name: _load(name, planner) for name in ("zero_shot", *ADAPTED)}
    rows, diffs, zero = progress_against_zero_shot(reports, TASK)
    pooled = rows["pooled_minus_zero_shot"]
    rows["ratio_of_pooled_means"] = ratio_of_pooled_means(diffs, zero)
    low, high = pooled["ci95"]
    rows["verdict"] = ("the adapted dynamics walk further on new episodes" if low > 0
                       else "the adapted dynamics walk less on new episodes" if high < 0 else "not told apart")
    return rows


def main() -> None:
    """The three planners' readings and the primary verdict (plain planner)."""
    arms = {planner: _planner(planner) for planner in PLANNERS}
    plain = arms["plain"]
    ratio = plain["ratio_of_pooled_means"]
    out = {"protocol": "bench_results/GO2_CSR_PTFE_CONFIRM.md", "seeds": [66000, 66000 + EPISODES - 1], **arms,
           "primary_verdict": plain["verdict"],
           "issue_goal_1_5x_met": plain["pooled_minus_zero_shot"]["ci95"][0] > 0 and ratio is not None and ratio >= 1.5}
    Path("bench_results/go2_csr_ptfe_confirm.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
