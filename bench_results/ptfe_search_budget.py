"""Paired reading of the PTFE search-budget runs (protocols: PTFE_SEARCH_BUDGET.md, PTFE_SEARCH_BUDGET_CONFIRM.md).

Default: `budget_go2_v5_ptfe_search.json` (pretrained) and `budget_go2_v5_adapted_ptfe_search.json` (after 30 min
of dynamics-only finetuning, seed 0), episode seeds 3000-3009 -> `ptfe_search_budget.json`. With `--confirm`:
`budget_go2_v6_ptfe_search_confirm.json` (pretrained) and the two adapted seeds' files, seeds 4000-4009 ->
`ptfe_search_budget_confirm.json`. Per checkpoint: each budget's mean and falls, and each budget minus the first
budget paired by seed; per budget and adapted checkpoint: adapted minus pretrained paired by seed. Run from the
repository root; prints the table and writes the JSON.
"""

import json
import sys
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci

TASK = "go2/ptfe_slope"
if "--confirm" in sys.argv[1:]:
    SOURCES = {"pretrained": "bench_results/budget_go2_v6_ptfe_search_confirm.json",
               "adapted_seed1": "bench_results/budget_go2_v6_adapted_seed1_ptfe_search_confirm.json",
               "adapted_seed2": "bench_results/budget_go2_v6_adapted_seed2_ptfe_search_confirm.json"}
    OUT = "bench_results/ptfe_search_budget_confirm.json"
else:
    SOURCES = {"pretrained": "bench_results/budget_go2_v5_ptfe_search.json",
               "adapted": "bench_results/budget_go2_v5_adapted_ptfe_search.json"}
    OUT = "bench_results/ptfe_search_budget.json"


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
    first = next(iter(by))
    rows = {}
    for budget, p in by.items():
        row = {"mean": p["metric_mean"], "ci95": p["metric_ci95"], "falls": p["falls"],
               "rollouts_per_tick": p["rollouts_per_tick"], "plan_ms_p50": p["plan_ms_p50"]}
        if budget != first:
            row[f"minus_{first}"] = paired(values[name][first], values[name][budget])
        rows[budget] = row
        diff = row.get(f"minus_{first}")
        extra = f", minus {first} {diff['mean']:+.2f} {diff['ci95']}" if diff else ""
        print(f"{name:<14} {budget:<28} {p['metric_mean']:+.2f} m {p['metric_ci95']}, falls {p['falls']}{extra}")
    out["checkpoints"][name] = rows
for name in (n for n in points if n != "pretrained"):
    for budget in (b for b in points["pretrained"] if b in points[name]):
        diff = paired(values["pretrained"][budget], values[name][budget])
        out["adapted_minus_pretrained"][f"{name} at {budget}"] = diff
        print(f"{name} - pretrained at {budget:<28} {diff['mean']:+.2f} {diff['ci95']}")
Path(OUT).write_text(json.dumps(out, indent=1) + "\n")
