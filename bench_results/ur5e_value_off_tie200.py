"""Reading of UR5E_VALUE_OFF_TIE200.md: the terminal value when the UR5e planner searches the model (tie 200).

Reads `ur5e_value_off_tie200/<arm>_9300.json` (40 episodes, seeds 9300-9339, `ur5e/peg_mild_shift`) and writes
`ur5e_value_off_tie200.json`: each arm's success with its interval and funnel, and the protocol's paired
differences (by episode seed; pooled over the three adapted models with a two-level bootstrap). Run from the
repository root.
"""

from pathlib import Path

from eval_arms import load_arm, minus, pooled_ci, write_report

FOLDER = Path("bench_results/ur5e_value_off_tie200")
OUT = Path("bench_results/ur5e_value_off_tie200.json")
ADAPTED = ("adapted0", "adapted1", "adapted2")


def load(name: str, prior_weight: float, value: bool) -> list[float]:
    """Per-episode success of one arm (its summary goes into ``arms``)."""
    success, arms[name] = load_arm(FOLDER / f"{name}_9300.json", "ur5e/peg_mild_shift", prior_weight, value)
    return success


arms: dict = {}
deployed = load("deployed", 1000.0, True)
s = {(v, m): load(f"{v}_{m}", 200.0, v == "on") for v in ("on", "off") for m in ("pretrained", *ADAPTED)}
out = {"task": "ur5e/peg_mild_shift", "seeds": [9300, 9339], "arms": arms, "paired": {
    "off_minus_on_pretrained": pooled_ci([minus(s["off", "pretrained"], s["on", "pretrained"])]),
    "off_minus_on_adapted": pooled_ci([minus(s["off", m], s["on", m]) for m in ADAPTED]),
    "adapted_minus_pretrained_value_on": pooled_ci([minus(s["on", m], s["on", "pretrained"]) for m in ADAPTED]),
    "adapted_minus_pretrained_value_off": pooled_ci([minus(s["off", m], s["off", "pretrained"]) for m in ADAPTED]),
    "adapted_value_off_minus_deployed": pooled_ci([minus(s["off", m], deployed) for m in ADAPTED]),
    "adapted_value_on_minus_deployed": pooled_ci([minus(s["on", m], deployed) for m in ADAPTED]),
}, "pooled_adapted": {f"value_{v}": pooled_ci([s[v, m] for m in ADAPTED]) for v in ("on", "off")}}
write_report(out, OUT)
