"""Reading of ``GO2_CSR_PTFE_CONFIRM.md``: the relabelled-with-replay model's PTFE-adapted dynamics on new episodes.

Reads ``bench_results/go2_csr_ptfe_confirm/<name>_<planner>.json`` and writes
``bench_results/go2_csr_ptfe_confirm.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_confirm.py``.
"""

import json
from pathlib import Path

from go2_dagger_ptfe_start import _early_falls
from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

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


def _ci(a: list[list[float]], b: list[list[float]]) -> dict:
    d, low, high = paired_cluster_difference_ci(a, b)
    return {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}


def _planner(planner: str) -> dict:
    """Every model's summary, each adapted model's paired difference to zero-shot, the pooled difference."""
    rows, values = {}, {}
    for name in ("zero_shot", *ADAPTED):
        report = _load(name, planner)
        rows[name] = {**episode_summary(report["per_episode"], TASK), "fell_within_2s": _early_falls(report)}
        values[name] = episode_values(report["per_episode"], TASK)
    zero = values["zero_shot"]
    diffs = []
    for name in ADAPTED:
        rows[name]["minus_zero_shot"] = _ci([values[name]], [zero])
        diffs.append([a - b for a, b in zip(values[name], zero, strict=True)])
    pooled = _ci(diffs, [[0.0] * len(zero)] * len(diffs))
    adapted_mean = sum(sum(values[name]) for name in ADAPTED) / (len(ADAPTED) * len(zero))
    zero_mean = sum(zero) / len(zero)
    rows["pooled_minus_zero_shot"] = pooled
    rows["ratio_of_pooled_means"] = round(adapted_mean / zero_mean, 3) if zero_mean > 0 else None
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
