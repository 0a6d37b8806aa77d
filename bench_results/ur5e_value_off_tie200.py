"""Reading of UR5E_VALUE_OFF_TIE200.md: the terminal value when the UR5e planner searches the model (tie 200).

Reads `ur5e_value_off_tie200/<arm>_9300.json` (40 episodes, seeds 9300-9339, `ur5e/peg_mild_shift`) and writes
`ur5e_value_off_tie200.json`: each arm's success with its interval and funnel, and the protocol's paired
differences (by episode seed; pooled over the three adapted models with a two-level bootstrap). Run from the
repository root.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import cluster_mean_ci, mean_ci

FOLDER = Path("bench_results/ur5e_value_off_tie200")
OUT = Path("bench_results/ur5e_value_off_tie200.json")
ADAPTED = ("adapted0", "adapted1", "adapted2")
FUNNEL = ("reached_hole", "centred_at_hole", "aligned_at_hole", "entered_hole", "success")


def load(name: str, prior_weight: float, value: bool) -> list[float]:
    """Per-episode success of one arm, after checking it is the protocol's run."""
    report = json.loads((FOLDER / f"{name}_9300.json").read_text())
    planner = report["planner"]
    if (report["task"] != "ur5e/peg_mild_shift" or report["episodes"] != 40
            or planner["prior_weight"] != prior_weight or planner["terminal_value"] != value):
        raise SystemExit(f"{name} is not the protocol's run")
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
deployed = load("deployed", 1000.0, True)
s = {(v, m): load(f"{v}_{m}", 200.0, v == "on") for v in ("on", "off") for m in ("pretrained", *ADAPTED)}
out = {"task": "ur5e/peg_mild_shift", "seeds": [9300, 9339], "arms": arms, "paired": {
    "off_minus_on_pretrained": ci([minus(s["off", "pretrained"], s["on", "pretrained"])]),
    "off_minus_on_adapted": ci([minus(s["off", m], s["on", m]) for m in ADAPTED]),
    "adapted_minus_pretrained_value_on": ci([minus(s["on", m], s["on", "pretrained"]) for m in ADAPTED]),
    "adapted_minus_pretrained_value_off": ci([minus(s["off", m], s["off", "pretrained"]) for m in ADAPTED]),
    "adapted_value_off_minus_deployed": ci([minus(s["off", m], deployed) for m in ADAPTED]),
    "adapted_value_on_minus_deployed": ci([minus(s["on", m], deployed) for m in ADAPTED]),
}, "pooled_adapted": {f"value_{v}": ci([s[v, m] for m in ADAPTED]) for v in ("on", "off")}}
for name, row in arms.items():
    print(f"{name:<16} {row['success_rate']:.3f} {row['success_ci95']}  funnel {list(row['funnel'].values())}")
for name, row in {**out["paired"], **out["pooled_adapted"]}.items():
    print(f"{name:<36} {row['mean']:+.3f} {row['ci95']}")
OUT.write_text(json.dumps(out, indent=1) + "\n")
print("wrote", OUT)
