"""Reading of UR5E_VALUE_CAP.md, part 1: capped terminal values on the nominal peg at tie 200.

Reads `ur5e_value_cap_nominal/<arm>_9200.json` (the deployed and the continuation-trained head, each capped at the
prior plan's value; `prior_weight` 200), the uncapped and no-value arms on the same 40 episode seeds
(`ur5e_value_branch_nominal/`) and the deployed planner's run (`ur5e_value_off/on_peg_9200.json`), and writes
`ur5e_value_cap_nominal.json`: each arm's success with its interval and funnel, the protocol's paired differences
(by episode seed, bootstrap intervals) and whether part 2's condition holds. Run from the repository root.
"""

from pathlib import Path

from eval_arms import load_arm, minus, pooled_ci, write_report

CAP = Path("bench_results/ur5e_value_cap_nominal")
UNCAPPED = Path("bench_results/ur5e_value_branch_nominal")
OUT = Path("bench_results/ur5e_value_cap_nominal.json")
arms: dict = {}


def load(path: Path, name: str, prior_weight: float, value: bool, cap: bool = False) -> list[float]:
    """Per-episode success of one arm (its summary, with the tie and the cap, goes into ``arms``)."""
    success, arms[name] = load_arm(path, "ur5e/peg", prior_weight, value, cap=cap)
    arms[name].update(prior_weight=prior_weight, terminal_value_cap=cap)
    return success


deployed = load(Path("bench_results/ur5e_value_off/on_peg_9200.json"), "deployed", 1000.0, True)
off = load(UNCAPPED / "off_9200.json", "off", 200.0, False)
old, new = (load(UNCAPPED / f"{h}_9200.json", h, 200.0, True) for h in ("old", "new"))
cap_old, cap_new = (load(CAP / f"cap_{h}_9200.json", f"cap_{h}", 200.0, True, cap=True) for h in ("old", "new"))
better = "cap_new" if arms["cap_new"]["success_rate"] > arms["cap_old"]["success_rate"] else "cap_old"
out = {"task": "ur5e/peg", "seeds": [9200, 9239], "arms": arms, "paired": {
    "cap_old_minus_off": pooled_ci([minus(cap_old, off)]), "cap_new_minus_off": pooled_ci([minus(cap_new, off)]),
    "cap_old_minus_old": pooled_ci([minus(cap_old, old)]), "cap_new_minus_new": pooled_ci([minus(cap_new, new)]),
    "cap_old_minus_deployed": pooled_ci([minus(cap_old, deployed)]),
    "cap_new_minus_deployed": pooled_ci([minus(cap_new, deployed)])},
    "part2": {"better_capped_arm": better, "checkpoint": arms[better]["checkpoint"],
              "condition_success_at_least": arms["off"]["success_rate"],
              "run": arms[better]["success_rate"] >= arms["off"]["success_rate"]}}
write_report(out, OUT)
print("part 2:", out["part2"])
