"""Paired reading of Q1 of PTFE_COMMAND_RAMP.md: does a 4-s command ramp make the zero-shot planner walk the slope?

Reads `eval_go2_v6_ptfe_ramp0.json` (no ramp) and `eval_go2_v6_ptfe_ramp4.json` (4-s ramp), the same 30 episode
seeds (7000-7029), and writes `ptfe_command_ramp_q1.json`: each run's mean progress with its 95 % CI, falls and
episodes walking (>= 1 m), and ramp minus no ramp paired by seed (95 % bootstrap CI). Verdict rule (fixed in the
protocol before the runs): the ramp helps if the paired CI is above 0. Run from the repository root.

With `--graph` (Q3): reads `parity_go2_v6_ptfe_ramp4_lockstep.json` (the same 30 episodes with the ramp through the
live graph and in-process) and writes `ptfe_command_ramp_q3.json`: each side's mean, falls and walking episodes, and
graph minus in-process paired by seed; it holds through the graph if that CI contains 0 or lies above it.
"""

import json
import sys
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci

TASK = "go2/ptfe_slope"
SOURCES = {"no_ramp": "bench_results/eval_go2_v6_ptfe_ramp0.json",
           "ramp_4s": "bench_results/eval_go2_v6_ptfe_ramp4.json"}
OUT = "bench_results/ptfe_command_ramp_q1.json"
WALKS_M = 1.0



def side(per_episode: list[dict]) -> tuple[list[float], dict]:
    """Per-episode progress and the summary row: mean [95 % CI], fell, walking (>= WALKS_M)."""
    values = episode_values(per_episode, TASK)
    mean, low, high = mean_ci(values)
    fell = sum(int(ep.get("fell", 0.0) > 0) for ep in per_episode)
    return values, {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)], "fell": fell,
                    "walking": sum(v >= WALKS_M for v in values), "episodes": len(values)}


if "--graph" in sys.argv[1:]:
    PARITY, OUT = "bench_results/parity_go2_v6_ptfe_ramp4_lockstep.json", "bench_results/ptfe_command_ramp_q3.json"
    row = next(r for r in json.loads(Path(PARITY).read_text())["tasks"] if r["task"] == TASK)
    if row["in_process"].get("command_ramp_s") != 4.0:
        raise SystemExit(f"{PARITY}: the in-process side did not ramp the command (4 s)")
    if [e["seed"] for e in row["in_process"]["per_episode"]] != [e["seed"] for e in row["graph"]["per_episode"]]:
        raise SystemExit(f"{PARITY}: the sides ran different seeds")
    out = {"source": PARITY, "task": TASK, "walks_m": WALKS_M, "sides": {}}
    values = {}
    for name in ("in_process", "graph"):
        values[name], out["sides"][name] = side(row[name]["per_episode"])
        r = out["sides"][name]
        print(f"{name:<11} {r['mean']:+.2f} m {r['ci95']}, fell {r['fell']}/{r['episodes']}, walking {r['walking']}")
    mean, low, high = mean_ci([g - i for i, g in zip(values["in_process"], values["graph"], strict=True)])
    out["graph_minus_in_process"] = {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}
    out["verdict"] = "holds through the graph" if high >= 0 else "lost through the graph"
    print(f"graph - in-process, paired by seed: {mean:+.2f} [{low:+.2f}, {high:+.2f}] -> {out['verdict']}")
    Path(OUT).write_text(json.dumps(out, indent=1) + "\n")
    raise SystemExit(0)

runs = {name: json.loads(Path(path).read_text()) for name, path in SOURCES.items()}
if {r["command_ramp_s"] for r in runs.values()} != {0.0, 4.0} or len({r["episodes"] for r in runs.values()}) != 1:
    raise SystemExit("the two runs must be the protocol's: ramp 0 and 4 s, the same episodes")
out: dict = {"sources": SOURCES, "task": TASK, "walks_m": WALKS_M, "runs": {}}
values = {}
for name, report in runs.items():
    values[name], r = side(report["per_episode"])
    out["runs"][name] = r
    print(f"{name:<8} {r['mean']:+.2f} m {r['ci95']}, fell {r['fell']}/{r['episodes']}, walking (>= {WALKS_M} m) "
          f"{r['walking']}")
mean, low, high = mean_ci([b - a for a, b in zip(values["no_ramp"], values["ramp_4s"], strict=True)])
out["ramp_minus_no_ramp"] = {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}
out["verdict"] = "the ramp helps" if low > 0 else "not shown"
print(f"ramp - no ramp, paired by seed: {mean:+.2f} [{low:+.2f}, {high:+.2f}] -> {out['verdict']}")
Path(OUT).write_text(json.dumps(out, indent=1) + "\n")
