"""Reading of UR5E_VALUE_BRANCHES_NOMINAL.md: the continuation-trained value head on the nominal peg at tie 200.

Reads `ur5e_value_branch_nominal/<arm>_9200.json` (new head, deployed head, no value; `prior_weight` 200) and the
deployed planner's run on the same 40 episode seeds (`ur5e_value_off/on_peg_9200.json`), and writes
`ur5e_value_branch_nominal.json`: each arm's success with its interval and funnel, and the protocol's paired
differences (by episode seed, bootstrap intervals). Run from the repository root.
"""

from pathlib import Path

from eval_arms import load_arm, minus, pooled_ci, write_report

FOLDER = Path("bench_results/ur5e_value_branch_nominal")
OUT = Path("bench_results/ur5e_value_branch_nominal.json")


def load(path: Path, name: str, prior_weight: float, value: bool) -> list[float]:
    """Per-episode success of one arm (its summary, with the tie, goes into ``arms``)."""
    success, arms[name] = load_arm(path, "ur5e/peg", prior_weight, value)
    arms[name]["prior_weight"] = prior_weight
    return success


def paired(a: list[float], b: list[float]) -> dict:
    """Mean of per-episode a - b (same seeds, same order) and its bootstrap 95 % interval."""
    return pooled_ci([minus(a, b)])
arms: dict = {}
deployed = load(Path("bench_results/ur5e_value_off/on_peg_9200.json"), "deployed", 1000.0, True)
new = load(FOLDER / "new_9200.json", "new", 200.0, True)
old = load(FOLDER / "old_9200.json", "old", 200.0, True)
off = load(FOLDER / "off_9200.json", "off", 200.0, False)
out = {"task": "ur5e/peg", "seeds": [9200, 9239], "arms": arms, "paired": {
    "new_minus_old": paired(new, old), "new_minus_off": paired(new, off), "new_minus_deployed": paired(new, deployed),
    "old_minus_deployed": paired(old, deployed), "off_minus_deployed": paired(off, deployed)}}
write_report(out, OUT)
