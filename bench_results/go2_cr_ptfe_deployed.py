"""Reading of ``GO2_CR_PTFE_DEPLOYED.md``: the capped-recipe model's PTFE-adapted dynamics, deployed planner.

Reads ``bench_results/go2_cr_ptfe_deployed/adapted_seed{0,1,2}_hold_ptfe_slope.json`` and pairs each with the
zero-shot model on the same episodes (``bench_results/go2_capped_recipe/recipe_hold_ptfe_slope.json``); writes
``bench_results/go2_cr_ptfe_deployed.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_cr_ptfe_deployed.py``.
"""

import json
from pathlib import Path

from eval_arms import falls_within_2s
from go2_dagger_slope import _difference
from go2_lf_lowgrip import _load
from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

TASK = "go2/ptfe_slope"
DIR = Path("bench_results/go2_cr_ptfe_deployed")
ZERO_SHOT = Path("bench_results/go2_capped_recipe/recipe_hold_ptfe_slope.json")


def _row(report: dict) -> dict:
    return {**episode_summary(report["per_episode"], TASK), "checkpoint": report["checkpoint"],
            "fell_within_2s": falls_within_2s(report)}


def main() -> None:
    """Each adapted model against zero-shot, the pooled difference, and the verdict."""
    zero = _load(ZERO_SHOT, TASK, None)
    adapted = [_load(DIR / f"adapted_seed{k}_hold_ptfe_slope.json", TASK, None) for k in range(3)]
    d, low, high = paired_cluster_difference_ci([episode_values(r["per_episode"], TASK) for r in adapted],
                                                [episode_values(zero["per_episode"], TASK)] * len(adapted))
    pooled = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
    out = {"protocol": "bench_results/GO2_CR_PTFE_DEPLOYED.md", "seeds": [65500, 65529], "zero_shot": _row(zero),
           "adapted": [{**_row(r), "minus_zero_shot": _difference(r, zero, TASK)} for r in adapted],
           "pooled_minus_zero_shot": pooled,
           "verdict": "walk further" if low > 0 else "walk less" if high < 0 else "not told apart"}
    Path("bench_results/go2_cr_ptfe_deployed.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
