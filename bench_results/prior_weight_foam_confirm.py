"""Paired reading of `budget_go2_prior_weight_confirm.json` (protocol: PRIOR_WEIGHT_FOAM_CONFIRM.md).

Per task: lambda=100 minus lambda=0 forward progress on the same episode seeds, mean and 95 % bootstrap CI of
the differences, and falls of each. Run from the repository root; prints a table and writes
`bench_results/prior_weight_foam_confirm.json`.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci

report = json.loads(Path("bench_results/budget_go2_prior_weight_confirm.json").read_text())
out = {"source": "bench_results/budget_go2_prior_weight_confirm.json", "complete": report["complete"], "tasks": {}}
for task in sorted({p["task"] for p in report["points"]}):
    by_budget = {p["budget"]: p for p in report["points"] if p["task"] == task}
    if {"32x1", "32x1:prior_weight=100"} - set(by_budget):
        continue
    base, penalised = (episode_values(by_budget[b]["per_episode"], task) for b in ("32x1", "32x1:prior_weight=100"))
    mean, low, high = mean_ci([b - a for a, b in zip(base, penalised, strict=True)])
    out["tasks"][task] = {
        "episodes": len(base), "lambda_0_mean": by_budget["32x1"]["metric_mean"],
        "lambda_100_mean": by_budget["32x1:prior_weight=100"]["metric_mean"],
        "difference_mean": round(mean, 3), "difference_ci95": [round(low, 3), round(high, 3)],
        "falls_lambda_0": by_budget["32x1"]["falls"], "falls_lambda_100": by_budget["32x1:prior_weight=100"]["falls"],
    }
    print(f"{task}: lambda 0 {out['tasks'][task]['lambda_0_mean']:.2f} m, lambda 100 "
          f"{out['tasks'][task]['lambda_100_mean']:.2f} m, difference {mean:+.2f} [{low:+.2f}, {high:+.2f}], falls "
          f"{out['tasks'][task]['falls_lambda_0']} -> {out['tasks'][task]['falls_lambda_100']} of {len(base)}")
Path("bench_results/prior_weight_foam_confirm.json").write_text(json.dumps(out, indent=1) + "\n")
