"""Reading of ``GO2_CSR_PTFE_LONGER_FT.md``: PTFE adaptation with 3,000 finetuning updates per round.

Reads the three 3,000-update models' runs on the 60 new episodes (``bench_results/go2_csr_ptfe_ft3000/``), the
zero-shot and 300-update runs on the same episodes (``bench_results/go2_csr_ptfe_confirm/``) and the two merged
benchmark reports, and writes ``bench_results/go2_csr_ptfe_ft3000.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_ft3000.py``.
"""

import json
from pathlib import Path

from eval_arms import falls_within_2s, rounded_difference
from go2_csr_ptfe_confirm import _load
from simdist_core.eval.stats import episode_summary, episode_values

TASK = "go2/ptfe_slope"
SEEDS = (0, 1, 2)
NEW = Path("bench_results/go2_csr_ptfe_ft3000")
BENCH_3000 = Path("bench_results/adaptation_go2_csr_ptfe_ft3000.json")
BENCH_300 = Path("bench_results/adaptation_go2_csr_ptfe_plain.json")
READ_AT_30 = ("metric", "metric_ci95", "metric_ratio_vs_zero_shot", "metric_ratio_vs_zero_shot_ci95",
              "metric_minus_zero_shot", "metric_minus_zero_shot_ci95", "falls_per_min", "zero_shot_falls_per_min",
              "latent_error_ratio_zero_shot_over_method")


def _load_new(seed: int) -> dict:
    path = NEW / f"adapted_seed{seed}_plain.json"
    report = json.loads(path.read_text())
    if (
        report["task"] != TASK
        or report["episodes"] != 60
        or report["preset"] != "cpu"
        or report["planner"]["prior_weight"] != 0.0
        or report["planner"]["terminal_value"] is not True
        or report["torch_threads"] != 1
        or not report.get("heading_hold", False)
        or report["env_overrides"] != {}
    ):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def _pooled(diffs: list[list[float]]) -> dict:
    return rounded_difference(diffs, [[0.0] * len(diffs[0])] * len(diffs))


def _bench() -> dict:
    """The merged benchmark's issue readings at 30 minutes, and its 30-minute episodes against 300 updates."""
    new, old = json.loads(BENCH_3000.read_text()), json.loads(BENCH_300.read_text())
    if new["config"]["finetune"]["steps"] != 3000 or old["config"]["finetune"]["steps"] != 300:
        raise SystemExit("benchmark reports: not the protocol's finetune settings")
    summary = new["summary"]["dynamics_only"]
    thirty = next(row for row in summary["by_minute"] if row["minutes"] == 30.0)

    def thirty_minute_episodes(stem: str) -> list[list[float]]:
        runs = []
        for k in SEEDS:
            dyn = json.loads(Path(f"bench_results/{stem}_seed{k}.json").read_text())["results"]["dynamics_only"]
            runs.append(dyn["episode_metric"][dyn["minutes"].index(30.0)])
        return runs

    a = thirty_minute_episodes("adaptation_go2_csr_ptfe_ft3000")
    b = thirty_minute_episodes("adaptation_go2_csr_ptfe_plain")
    return {
        "at_30_min": {key: thirty[key] for key in READ_AT_30},
        "at_10_min_metric": next(row for row in summary["by_minute"] if row["minutes"] == 10.0)["metric"],
        "zero_shot_metric": summary["by_minute"][0]["metric"],
        "ft3000_minus_ft300_at_30_min_same_episodes": rounded_difference(a, b),
    }


def main() -> None:
    """Primary verdict on the 60 new episodes, the comparison with 300 updates, and the benchmark's readings."""
    zero = _load("zero_shot", "plain")
    zero_values = episode_values(zero["per_episode"], TASK)
    rows, vs_zero, vs_300 = {}, [], []
    for k in SEEDS:
        report = _load_new(k)
        values = episode_values(report["per_episode"], TASK)
        old = episode_values(_load(f"adapted_seed{k}", "plain")["per_episode"], TASK)
        rows[f"ft3000_seed{k}"] = {
            **episode_summary(report["per_episode"], TASK),
            "fell_within_2s": falls_within_2s(report),
            "minus_zero_shot": rounded_difference([values], [zero_values]),
            "minus_ft300_same_seed": rounded_difference([values], [old]),
        }
        vs_zero.append([a - b for a, b in zip(values, zero_values, strict=True)])
        vs_300.append([a - b for a, b in zip(values, old, strict=True)])
    pooled = _pooled(vs_zero)
    zero_mean = sum(zero_values) / len(zero_values)
    ratio = round((zero_mean + pooled["difference"]) / zero_mean, 3) if zero_mean > 0 else None
    low, high = pooled["ci95"]
    if low > 0:
        verdict = ("with one pass over the experience the adaptation wins on PTFE" if ratio is not None and ratio >= 1.5
                   else "walks further, short of 1.5x")
    else:
        verdict = "walks less" if high < 0 else "not told apart"
    more = _pooled(vs_300)
    out = {
        "protocol": "bench_results/GO2_CSR_PTFE_LONGER_FT.md",
        "seeds": [66000, 66059],
        "zero_shot": {**episode_summary(zero["per_episode"], TASK), "fell_within_2s": falls_within_2s(zero)},
        **rows,
        "pooled_minus_zero_shot": pooled,
        "ratio_of_pooled_means": ratio,
        "primary_verdict": verdict,
        "pooled_ft3000_minus_ft300": more,
        "more_updates": "help" if more["ci95"][0] > 0 else "hurt" if more["ci95"][1] < 0 else "not told apart",
        "benchmark": _bench(),
    }
    Path("bench_results/go2_csr_ptfe_ft3000.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
