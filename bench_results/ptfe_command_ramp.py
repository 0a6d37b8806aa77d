"""Paired reading of Q1 of PTFE_COMMAND_RAMP.md: does a 4-s command ramp make the zero-shot planner walk the slope?

Reads `eval_go2_v6_ptfe_ramp0.json` (no ramp) and `eval_go2_v6_ptfe_ramp4.json` (4-s ramp), the same 30 episode
seeds (7000-7029), and writes `ptfe_command_ramp_q1.json`: each run's mean progress with its 95 % CI, falls and
episodes walking (>= 1 m), and ramp minus no ramp paired by seed (95 % bootstrap CI). Verdict rule (fixed in the
protocol before the runs): the ramp helps if the paired CI is above 0. Run from the repository root.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci

TASK = "go2/ptfe_slope"
SOURCES = {"no_ramp": "bench_results/eval_go2_v6_ptfe_ramp0.json",
           "ramp_4s": "bench_results/eval_go2_v6_ptfe_ramp4.json"}
OUT = "bench_results/ptfe_command_ramp_q1.json"
WALKS_M = 1.0

runs = {name: json.loads(Path(path).read_text()) for name, path in SOURCES.items()}
if {r["command_ramp_s"] for r in runs.values()} != {0.0, 4.0} or len({r["episodes"] for r in runs.values()}) != 1:
    raise SystemExit("the two runs must be the protocol's: ramp 0 and 4 s, the same episodes")
out: dict = {"sources": SOURCES, "task": TASK, "walks_m": WALKS_M, "runs": {}}
values = {}
for name, report in runs.items():
    values[name] = episode_values(report["per_episode"], TASK)
    mean, low, high = mean_ci(values[name])
    fell = sum(int(ep.get("fell", 0.0) > 0) for ep in report["per_episode"])
    walking = sum(v >= WALKS_M for v in values[name])
    out["runs"][name] = {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)], "fell": fell,
                         "walking": walking, "episodes": len(values[name])}
    print(f"{name:<8} {mean:+.2f} m [{low:+.2f}, {high:+.2f}], fell {fell}/{len(values[name])}, "
          f"walking (>= {WALKS_M} m) {walking}")
mean, low, high = mean_ci([b - a for a, b in zip(values["no_ramp"], values["ramp_4s"], strict=True)])
out["ramp_minus_no_ramp"] = {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}
out["verdict"] = "the ramp helps" if low > 0 else "not shown"
print(f"ramp - no ramp, paired by seed: {mean:+.2f} [{low:+.2f}, {high:+.2f}] -> {out['verdict']}")
Path(OUT).write_text(json.dumps(out, indent=1) + "\n")
