"""Reading of UR5E_VALUE_BRANCHES_NOMINAL.md: the continuation-trained value head on the nominal peg at tie 200.

Reads `ur5e_value_branch_nominal/<arm>_9200.json` (new head, deployed head, no value; `prior_weight` 200) and the
deployed planner's run on the same 40 episode seeds (`ur5e_value_off/on_peg_9200.json`), and writes
`ur5e_value_branch_nominal.json`: each arm's success with its interval and funnel, and the protocol's paired
differences (by episode seed, bootstrap intervals). Run from the repository root.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import cluster_mean_ci, mean_ci

FOLDER = Path("bench_results/ur5e_value_branch_nominal")
OUT = Path("bench_results/ur5e_value_branch_nominal.json")
FUNNEL = ("reached_hole", "centred_at_hole", "aligned_at_hole", "entered_hole", "success")


def load(path: Path, name: str, prior_weight: float, value: bool) -> list[float]:
    """Per-episode success of one arm, after checking it is the protocol's run."""
    report = json.loads(path.read_text())
    planner = report["planner"]
    if (report["task"] != "ur5e/peg" or report["episodes"] != 40
            or planner["prior_weight"] != prior_weight or planner["terminal_value"] != value):
        raise SystemExit(f"{path} is not the protocol's run")
    success = [float(e["success"]) for e in report["per_episode"]]
    mean, low, high = mean_ci(success)
    arms[name] = {"success_rate": round(mean, 3), "success_ci95": [round(low, 3), round(high, 3)],
                  "funnel": {k: int(sum(e.get(k, 0.0) for e in report["per_episode"])) for k in FUNNEL},
                  "checkpoint": report["checkpoint"], "prior_weight": prior_weight}  # fmt: skip
    return success


def paired(a: list[float], b: list[float]) -> dict:
    """Mean of per-episode a - b (same seeds, same order) and its bootstrap 95 % interval."""
    mean, low, high = cluster_mean_ci([[x - y for x, y in zip(a, b, strict=True)]])
    return {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}


arms: dict = {}
deployed = load(Path("bench_results/ur5e_value_off/on_peg_9200.json"), "deployed", 1000.0, True)
new = load(FOLDER / "new_9200.json", "new", 200.0, True)
old = load(FOLDER / "old_9200.json", "old", 200.0, True)
off = load(FOLDER / "off_9200.json", "off", 200.0, False)
out = {"task": "ur5e/peg", "seeds": [9200, 9239], "arms": arms, "paired": {
    "new_minus_old": paired(new, old), "new_minus_off": paired(new, off), "new_minus_deployed": paired(new, deployed),
    "old_minus_deployed": paired(old, deployed), "off_minus_deployed": paired(off, deployed)}}
for name, row in arms.items():
    print(f"{name:<10} {row['success_rate']:.3f} {row['success_ci95']}  funnel {list(row['funnel'].values())}")
for name, row in out["paired"].items():
    print(f"{name:<20} {row['mean']:+.3f} {row['ci95']}")
OUT.write_text(json.dumps(out, indent=1) + "\n")
print("wrote", OUT)
