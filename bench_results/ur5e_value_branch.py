"""Reading of UR5E_VALUE_BRANCHES.md: a value head trained on labels with expert continuations, at tie 200.

Reads `ur5e_value_branch/<arm>_9300.json` (the new head: pretrained and the three adapted models) beside the arms of
`ur5e_value_off_tie200/` (the deployed head on and off, the deployed planner; same 40 episode seeds 9300-9339 of
`ur5e/peg_mild_shift`) and writes `ur5e_value_branch.json`: each arm's success with its interval and funnel, and the
protocol's paired differences (by episode seed; pooled over the three adapted models with a two-level bootstrap).
Run from the repository root.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import cluster_mean_ci, mean_ci

NEW = Path("bench_results/ur5e_value_branch")
OLD = Path("bench_results/ur5e_value_off_tie200")
OUT = Path("bench_results/ur5e_value_branch.json")
MODELS = ("pretrained", "adapted0", "adapted1", "adapted2")
ADAPTED = MODELS[1:]
FUNNEL = ("reached_hole", "centred_at_hole", "aligned_at_hole", "entered_hole", "success")


def load(path: Path, name: str, prior_weight: float, value: bool) -> list[float]:
    """Per-episode success of one arm, after checking it is the protocol's run."""
    report = json.loads(path.read_text())
    planner = report["planner"]
    if (report["task"] != "ur5e/peg_mild_shift" or report["episodes"] != 40
            or planner["prior_weight"] != prior_weight or planner["terminal_value"] != value):
        raise SystemExit(f"{path} is not the protocol's run")
    success = [float(e["success"]) for e in report["per_episode"]]
    mean, low, high = mean_ci(success)
    arms[name] = {"success_rate": round(mean, 3), "success_ci95": [round(low, 3), round(high, 3)],
                  "funnel": {k: int(sum(e.get(k, 0.0) for e in report["per_episode"])) for k in FUNNEL},
                  "checkpoint": report["checkpoint"]}  # fmt: skip
    return success


def ci(clusters: list[list[float]]) -> dict:
    """Pooled mean and two-level bootstrap 95 % interval of per-model lists of per-episode values."""
    mean, low, high = cluster_mean_ci(clusters)
    return {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}


def minus(a: list[float], b: list[float]) -> list[float]:
    """Per-episode a - b (same seeds, same order)."""
    return [x - y for x, y in zip(a, b, strict=True)]


arms: dict = {}
deployed = load(OLD / "deployed_9300.json", "deployed", 1000.0, True)
new = {m: load(NEW / f"{m}_9300.json", f"new_{m}", 200.0, True) for m in MODELS}
old = {m: load(OLD / f"on_{m}_9300.json", f"old_{m}", 200.0, True) for m in MODELS}
off = {m: load(OLD / f"off_{m}_9300.json", f"off_{m}", 200.0, False) for m in MODELS}
out = {"task": "ur5e/peg_mild_shift", "seeds": [9300, 9339], "arms": arms, "paired": {
    "new_minus_old_pretrained": ci([minus(new["pretrained"], old["pretrained"])]),
    "new_minus_old_adapted": ci([minus(new[m], old[m]) for m in ADAPTED]),
    "new_minus_off_pretrained": ci([minus(new["pretrained"], off["pretrained"])]),
    "new_minus_off_adapted": ci([minus(new[m], off[m]) for m in ADAPTED]),
    "adapted_new_minus_deployed": ci([minus(new[m], deployed) for m in ADAPTED]),
    "pretrained_new_minus_deployed": ci([minus(new["pretrained"], deployed)]),
    "adapted_minus_pretrained_new": ci([minus(new[m], new["pretrained"]) for m in ADAPTED]),
}, "pooled_adapted": {name: ci([arm[m] for m in ADAPTED]) for name, arm in (("new", new), ("old", old), ("off", off))}}
for name, row in arms.items():
    print(f"{name:<16} {row['success_rate']:.3f} {row['success_ci95']}  funnel {list(row['funnel'].values())}")
for name, row in {**out["paired"], **out["pooled_adapted"]}.items():
    print(f"{name:<36} {row['mean']:+.3f} {row['ci95']}")
OUT.write_text(json.dumps(out, indent=1) + "\n")
print("wrote", OUT)
