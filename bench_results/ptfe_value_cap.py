"""Reading of PTFE_VALUE_CAP.md: the slope models with the terminal value capped at the prior plan's value.

Reads `eval_go2_v6_ptfe_value_{on,off,cap}_{pretrained,adapted_seed0,adapted_seed1,adapted_seed2}.json` (the same 20
episode seeds, 9100-9119; on and off from `PTFE_VALUE_OFF.md`) and writes `ptfe_value_cap.json`: each arm's mean
progress, falls and episodes over 1 m; adapted - pretrained per setting (paired by episode seed, pooled over the
three adapted models, two-level bootstrap); capped - on and capped - off for the pretrained and the adapted models.
Run from the repository root.
"""

import json
from pathlib import Path

from eval_arms import minus, pooled_ci
from simdist_core.eval.stats import episode_values

TASK = "go2/ptfe_slope"
MODELS = ("pretrained", "adapted_seed0", "adapted_seed1", "adapted_seed2")
SETTINGS = {"on": (True, False), "off": (False, False), "cap": (True, True)}
"""Setting -> (terminal_value, terminal_value_cap) of its runs."""
OUT = "bench_results/ptfe_value_cap.json"


def load(setting: str, model: str) -> list[float]:
    """Per-episode progress of one eval report, after checking it is the protocol's run; its summary into ``out``."""
    path = f"bench_results/eval_go2_v6_ptfe_value_{setting}_{model}.json"
    report = json.loads(Path(path).read_text())
    planner = report["planner"]
    model_dir = "go2_v6_low_friction" if model == "pretrained" else f"adapted_go2_v6_ptfe_ramp4_{model[8:]}_dynamics_only"  # noqa: E501
    if ((planner["terminal_value"], planner.get("terminal_value_cap", False)) != SETTINGS[setting]
            or report["command_ramp_s"] != 4.0 or planner["prior_weight"] != 100.0 or report["episodes"] != 20
            or Path(report["checkpoint"]).name != model_dir):
        raise SystemExit(f"{path} is not the protocol's run")
    values = episode_values(report["per_episode"], TASK)
    out["arms"][f"value_{setting}_{model}"] = {
        "progress_m": round(sum(values) / len(values), 3), "episodes": len(values),
        "fell": sum(int(ep.get("fell", 0.0) > 0) for ep in report["per_episode"]),
        "over_1m": sum(v > 1.0 for v in values)}
    return values


out: dict = {"task": TASK, "arms": {}}
progress = {(s, m): load(s, m) for s in SETTINGS for m in MODELS}
out["adapted_minus_pretrained"] = {f"value_{s}": pooled_ci([minus(progress[s, m], progress[s, "pretrained"])
                                                    for m in MODELS[1:]]) for s in SETTINGS}
out["cap_minus"] = {f"{other}_{kind}": pooled_ci([minus(progress["cap", m], progress[other, m]) for m in models])
                    for other in ("on", "off")
                    for kind, models in (("pretrained", MODELS[:1]), ("adapted", MODELS[1:]))}
out["verdict"] = ("with the capped value, dynamics-only adaptation helps on the slope"
                  if out["adapted_minus_pretrained"]["value_cap"]["ci95"][0] > 0 else "not shown")
for name, row in out["arms"].items():
    print(f"{name:<28} {row['progress_m']:+.3f} m, fell {row['fell']}/20, over 1 m {row['over_1m']}")
for group in ("adapted_minus_pretrained", "cap_minus"):
    for name, row in out[group].items():
        print(f"{group} {name:<16} {row['mean']:+.3f} {row['ci95']}")
print(out["verdict"])
Path(OUT).write_text(json.dumps(out, indent=1) + "\n")
