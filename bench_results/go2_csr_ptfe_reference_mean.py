"""Reading of ``GO2_CSR_PTFE_REFERENCE_MEAN.md``: plans ranked by the mean of the finetuned and pretrained returns.

Reads ``bench_results/go2_csr_ptfe_reference_mean/<name>.json`` (zero-shot, the adapted 3,000-update models alone and
with ``reference_returns=mean``, seeds 92000-92059) and writes ``bench_results/go2_csr_ptfe_reference_mean.json``;
with ``--explore``, the 30-episode exploratory runs before the protocol
(``bench_results/go2_csr_ptfe_reference_explore/``, seeds 91000-91029, also ``min``), printed only. Run from the
repository root: ``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_reference_mean.py``.
"""

import json
import sys
from pathlib import Path

from eval_arms import (
    early_falls,
    gain_verdict,
    pooled_ci,
    progress_against_zero_shot,
    ratio_of_pooled_means,
    rounded_difference,
)
from go2_csr_ptfe_ft3000 import TASK, load_plain
from simdist_core.eval.stats import episode_values

SEEDS = (3, 4, 5)


def load(folder: Path, name: str, episodes: int, first_seed: int, rule: str) -> dict:
    """One arm's report, checked to be the protocol's run (episodes, seed, planner rule, reference)."""
    path = folder / f"{name}.json"
    report = load_plain(path, episodes)
    planner = report["planner"]
    got = planner.get("reference_returns", "min" if planner.get("reference_pessimism") else "")
    if report.get("seed") != first_seed or got != rule:
        raise SystemExit(f"{path}: not the protocol's run (seed {report.get('seed')}, reference_returns {got!r})")
    if rule and report.get("reference") != "bench_results/go2_csr_dagger2_pretrained":
        raise SystemExit(f"{path}: scored with another reference ({report.get('reference')})")
    return report


def arm_against_zero_shot(reports: dict[str, dict], arm: str, win: str) -> dict:
    """Each model of ``arm`` and the pooled difference to zero-shot, with the ratio of pooled means and verdict."""
    models = {"zero_shot": reports["zero_shot"], **{f"{arm}_seed{k}": reports[f"{arm}_seed{k}"] for k in SEEDS}}
    rows, diffs, zero = progress_against_zero_shot(models, TASK)
    ratio = ratio_of_pooled_means(diffs, zero)
    verdict = gain_verdict(rows["pooled_minus_zero_shot"], ratio, win, "walks further, short of 1.5x", "walks less",
                           "not shown")  # fmt: skip
    return {**rows, "ratio_of_pooled_means": ratio, "verdict": verdict}


def minus_adapted(reports: dict[str, dict], arm: str) -> dict:
    """``arm`` minus the adapted models' own planner on the same episodes, pooled over the models."""
    return rounded_difference([episode_values(reports[f"{arm}_seed{k}"]["per_episode"], TASK) for k in SEEDS],
                              [episode_values(reports[f"adapted_seed{k}"]["per_episode"], TASK) for k in SEEDS])


def shares(reports: dict[str, dict], arm: str) -> dict:
    """Fall-free share and share of falls within 2 s of an arm (pooled over its models), plan time."""
    names = ["zero_shot"] if arm == "zero_shot" else [f"{arm}_seed{k}" for k in SEEDS]
    eps = [reports[n]["per_episode"] for n in names]
    return {"fall_free_share": pooled_ci([[1.0 - float(bool(e["fell"])) for e in ep] for ep in eps]),
            "fell_within_2s_share": pooled_ci([early_falls(ep) for ep in eps]),
            "plan_ms_p50": [reports[n]["plan_ms_p50"] for n in names],
            "plan_ms_p99": [reports[n]["plan_ms_p99"] for n in names]}


def main() -> None:
    """The protocol's readings (or, with ``--explore``, the exploratory runs), printed (and written)."""
    explore = "--explore" in sys.argv[1:]
    folder = Path("bench_results/go2_csr_ptfe_reference_" + ("explore" if explore else "mean"))
    episodes, first = (30, 91000) if explore else (60, 92000)
    arms = {"adapted": "", "mean": "mean", **({"min": "min"} if explore else {})}
    reports = {"zero_shot": load(folder, "zero_shot", episodes, first, "")}
    for arm, rule in arms.items():
        reports.update({f"{arm}_seed{k}": load(folder, f"{arm}_seed{k}", episodes, first, rule) for k in SEEDS})
    helps = minus_adapted(reports, "mean")
    low, high = helps["ci95"]
    out = {
        "protocol": "bench_results/GO2_CSR_PTFE_REFERENCE_MEAN.md", "seeds": [first, first + episodes - 1],
        "exploratory": explore,
        "mean_minus_adapted": {**helps, "verdict": "the mean of the two dynamics helps" if low > 0
                               else "hurts" if high < 0 else "not shown"},
        "mean": arm_against_zero_shot(reports, "mean", "reference mean wins on PTFE"),
        "adapted": arm_against_zero_shot(reports, "adapted", "wins on PTFE"),
        "beside": {arm: shares(reports, arm) for arm in ["zero_shot", *arms]},
    }  # fmt: skip
    if explore:
        out["min_minus_adapted"] = minus_adapted(reports, "min")
        out["min"] = arm_against_zero_shot(reports, "min", "reference min wins on PTFE")
        print(json.dumps(out, indent=1))
        return
    Path("bench_results/go2_csr_ptfe_reference_mean.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
