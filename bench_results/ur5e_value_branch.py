"""Reading of UR5E_VALUE_BRANCHES.md: a value head trained on labels with expert continuations, at tie 200.

Reads `ur5e_value_branch/<arm>_9300.json` (the new head: pretrained and the three adapted models) beside the arms of
`ur5e_value_off_tie200/` (the deployed head on and off, the deployed planner; same 40 episode seeds 9300-9339 of
`ur5e/peg_mild_shift`) and writes `ur5e_value_branch.json`: each arm's success with its interval and funnel, and the
protocol's paired differences (by episode seed; pooled over the three adapted models with a two-level bootstrap).
Run from the repository root.
"""

from pathlib import Path

from eval_arms import load_arm, minus, pooled_ci, write_report

NEW = Path("bench_results/ur5e_value_branch")
OLD = Path("bench_results/ur5e_value_off_tie200")
OUT = Path("bench_results/ur5e_value_branch.json")
MODELS = ("pretrained", "adapted0", "adapted1", "adapted2")
ADAPTED = MODELS[1:]


def load(path: Path, name: str, prior_weight: float, value: bool) -> list[float]:
    """Per-episode success of one arm (its summary goes into ``arms``)."""
    success, arms[name] = load_arm(path, "ur5e/peg_mild_shift", prior_weight, value)
    return success


arms: dict = {}
deployed = load(OLD / "deployed_9300.json", "deployed", 1000.0, True)
new = {m: load(NEW / f"{m}_9300.json", f"new_{m}", 200.0, True) for m in MODELS}
old = {m: load(OLD / f"on_{m}_9300.json", f"old_{m}", 200.0, True) for m in MODELS}
off = {m: load(OLD / f"off_{m}_9300.json", f"off_{m}", 200.0, False) for m in MODELS}
out = {"task": "ur5e/peg_mild_shift", "seeds": [9300, 9339], "arms": arms, "paired": {
    "new_minus_old_pretrained": pooled_ci([minus(new["pretrained"], old["pretrained"])]),
    "new_minus_old_adapted": pooled_ci([minus(new[m], old[m]) for m in ADAPTED]),
    "new_minus_off_pretrained": pooled_ci([minus(new["pretrained"], off["pretrained"])]),
    "new_minus_off_adapted": pooled_ci([minus(new[m], off[m]) for m in ADAPTED]),
    "adapted_new_minus_deployed": pooled_ci([minus(new[m], deployed) for m in ADAPTED]),
    "pretrained_new_minus_deployed": pooled_ci([minus(new["pretrained"], deployed)]),
    "adapted_minus_pretrained_new": pooled_ci([minus(new[m], new["pretrained"]) for m in ADAPTED]),
}, "pooled_adapted": {name: pooled_ci([arm[m] for m in ADAPTED])
                      for name, arm in (("new", new), ("old", old), ("off", off))}}
write_report(out, OUT)
