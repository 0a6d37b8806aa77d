"""Paired reading of the PTFE search-budget run (protocol: PTFE_SEARCH_BUDGET.md).

Reads `budget_go2_v5_ptfe_search.json` (pretrained) and `budget_go2_v5_adapted_ptfe_search.json` (after 30 min
of dynamics-only finetuning), both on episode seeds 3000-3009. Per checkpoint: each budget's mean and falls, and
each budget minus `32x1` paired by seed; per budget: adapted minus pretrained paired by seed. Run from the
repository root; prints the table and writes `bench_results/ptfe_search_budget.json`.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci

TASK = "go2/ptfe_slope"
SOURCES = {"pretrained": "bench_results/budget_go2_v5_ptfe_search.json",
           "adapted": "bench_results/budget_go2_v5_adapted_ptfe_search.json"}


def paired(a: list[float], b: list[float]) -> dict:
    """The differences b - a on the same seeds: mean and 95 % bootstrap CI."""
    mean, low, high = mean_ci([y - x for x, y in zip(a, b, strict=True)])
    return {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}


points = {}
for name, path in SOURCES.items():
    report = json.loads(Path(path).read_text())
    points[name] = {p["budget"]: p for p in report["points"] if p["task"] == TASK}
values = {name: {b: episode_values(p["per_episode"], TASK) for b, p in by.items()} for name, by in points.items()}

out: dict = {"sources": SOURCES, "task": TASK, "checkpoints": {}, "adapted_minus_pretrained": {}}
for name, by in points.items():
    rows = {}
    for budget, p in by.items():
        row = {"mean": p["metric_mean"], "ci95": p["metric_ci95"], "falls": p["falls"],
               "rollouts_per_tick": p["rollouts_per_tick"], "plan_ms_p50": p["plan_ms_p50"]}
        if budget != "32x1" and "32x1" in by:
            row["minus_32x1"] = paired(values[name]["32x1"], values[name][budget])
        rows[budget] = row
        diff = row.get("minus_32x1")
        extra = f", minus 32x1 {diff['mean']:+.2f} {diff['ci95']}" if diff else ""
        print(f"{name:<10} {budget:<28} {p['metric_mean']:+.2f} m {p['metric_ci95']}, falls {p['falls']}{extra}")
    out["checkpoints"][name] = rows
for budget in sorted(set(points["pretrained"]) & set(points["adapted"])):
    diff = paired(values["pretrained"][budget], values["adapted"][budget])
    out["adapted_minus_pretrained"][budget] = diff
    print(f"adapted - pretrained at {budget:<28} {diff['mean']:+.2f} {diff['ci95']}")
Path("bench_results/ptfe_search_budget.json").write_text(json.dumps(out, indent=1) + "\n")
