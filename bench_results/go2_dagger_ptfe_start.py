"""Reading of ``GO2_DAGGER_PTFE_START.md``: the slope model's standing start on the PTFE slope, with and without ramp.

Reads ``bench_results/go2_dagger_ptfe_start/{hold,hold_ramp4}.json``; writes
``bench_results/go2_dagger_ptfe_start.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core python bench_results/go2_dagger_ptfe_start.py``.
"""

import json
from pathlib import Path

from eval_arms import falls_within_2s
from simdist_core.eval.stats import episode_summary, episode_values, paired_cluster_difference_ci

DIR = Path("bench_results/go2_dagger_ptfe_start")
TASK = "go2/ptfe_slope"


def _load(name: str, ramp_s: float) -> dict:
    report = json.loads((DIR / f"{name}.json").read_text())
    if (report["task"] != TASK or report["episodes"] != 30 or not report["heading_hold"]
            or report["command_ramp_s"] != ramp_s or report["torch_threads"] != 1):
        raise SystemExit(f"{name}: not the protocol's run")
    return report


def main() -> None:
    """Both arms, the paired difference and the verdict."""
    plain, ramp = _load("hold", 0.0), _load("hold_ramp4", 4.0)
    d, low, high = paired_cluster_difference_ci([episode_values(ramp["per_episode"], TASK)],
                                                [episode_values(plain["per_episode"], TASK)])
    arms = {name: {**episode_summary(r["per_episode"], TASK), "fell_within_2s": falls_within_2s(r)}
            for name, r in (("hold", plain), ("hold_ramp4", ramp))}
    out = {"protocol": "bench_results/GO2_DAGGER_PTFE_START.md", "checkpoint": plain["checkpoint"],
           "seeds": [65500, 65529], "arms": arms,
           "ramp_minus_no_ramp": {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]},
           "verdict": {"the_ramp_lets_the_slope_model_start": low > 0 and arms["hold_ramp4"]["fell_within_2s"] < 15}}
    Path("bench_results/go2_dagger_ptfe_start.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
