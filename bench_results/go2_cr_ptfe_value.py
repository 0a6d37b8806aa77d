"""Reading of ``GO2_CR_PTFE_VALUE.md``: PTFE-adapted dynamics with and without the terminal value, plain planner.

Reads ``bench_results/go2_cr_ptfe_value/<name>_value_<true|false>.json`` and writes
``bench_results/go2_cr_ptfe_value.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_cr_ptfe_value.py``.
"""

import json
from pathlib import Path

from eval_arms import progress_against_zero_shot, rounded_difference

TASK = "go2/ptfe_slope"
DIR = Path("bench_results/go2_cr_ptfe_value")
ADAPTED = ("adapted_seed0", "adapted_seed1", "adapted_seed2")


def _load(name: str, value: bool) -> dict:
    path = DIR / f"{name}_value_{str(value).lower()}.json"
    report = json.loads(path.read_text())
    if (report["task"] != TASK or report["episodes"] != 30 or report["planner"]["prior_weight"] != 0.0
            or report["planner"]["terminal_value"] is not value or report["torch_threads"] != 1
            or not report.get("heading_hold", False) or report["env_overrides"] != {}):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def _arm(value: bool) -> tuple[dict, list[list[float]], list[float]]:
    """Every model's summary, the adapted models' per-episode differences to zero-shot, and zero-shot's values."""
    return progress_against_zero_shot({name: _load(name, value) for name in ("zero_shot", *ADAPTED)}, TASK)


def main() -> None:
    """Both arms, the difference of differences and the verdict."""
    with_value, diffs_a, zero_a = _arm(True)
    without_value, diffs_b, zero_b = _arm(False)
    did = rounded_difference(diffs_b, diffs_a)
    zero_without_minus_with = rounded_difference([zero_b], [zero_a])
    out = {"protocol": "bench_results/GO2_CR_PTFE_VALUE.md", "seeds": [65500, 65529],
           "A_with_terminal_value": with_value, "B_without_terminal_value": without_value,
           "difference_of_differences_B_minus_A": did, "zero_shot_without_minus_with_value": zero_without_minus_with,
           "verdict": {"the_terminal_value_turns_the_adapted_dynamics_against_the_walking":
                       with_value["pooled_minus_zero_shot"]["ci95"][1] < 0 and did["ci95"][0] > 0}}
    Path("bench_results/go2_cr_ptfe_value.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
