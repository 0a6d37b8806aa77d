"""Reading of PTFE_VALUE_OFF.md: do the adapted models plan better on the PTFE slope without the frozen value head?

Reads `eval_go2_v6_ptfe_value_{on,off}_{pretrained,adapted_seed0,adapted_seed1,adapted_seed2}.json` (the same 20
episode seeds, 9100-9119) and writes `ptfe_value_off.json`: each arm's mean progress and falls; per setting,
adapted - pretrained paired by episode seed and pooled over the three adapted models (two-level bootstrap:
models, then episodes); and value off minus value on of those differences. Verdict rule fixed in the protocol
before the runs. Run from the repository root.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import cluster_mean_ci, episode_values

TASK = "go2/ptfe_slope"
MODELS = ("pretrained", "adapted_seed0", "adapted_seed1", "adapted_seed2")
OUT = "bench_results/ptfe_value_off.json"


def load(setting: str, model: str) -> dict:
    """One eval report; checks it is the protocol's run."""
    path = f"bench_results/eval_go2_v6_ptfe_value_{setting}_{model}.json"
    report = json.loads(Path(path).read_text())
    if report["planner"]["terminal_value"] != (setting == "on") or report["command_ramp_s"] != 4.0 \
            or report["planner"]["prior_weight"] != 100.0 or report["episodes"] != 20:
        raise SystemExit(f"{path} is not the protocol's run")
    return report


def ci(values: list[list[float]]) -> dict:
    """Pooled mean and two-level bootstrap 95 % CI of per-model lists of per-episode values."""
    mean, low, high = cluster_mean_ci(values)
    return {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}


out: dict = {"task": TASK, "arms": {}, "adapted_minus_pretrained": {}}
progress: dict = {}
for setting in ("on", "off"):
    for model in MODELS:
        report = load(setting, model)
        values = episode_values(report["per_episode"], TASK)
        progress[setting, model] = values
        fell = sum(int(ep.get("fell", 0.0) > 0) for ep in report["per_episode"])
        out["arms"][f"value_{setting}_{model}"] = {"progress_m": round(sum(values) / len(values), 3), "fell": fell,
                                                    "episodes": len(values)}
        print(f"value {setting:<3} {model:<14} {sum(values) / len(values):+.3f} m, fell {fell}/{len(values)}")
diffs = {s: [[a - p for a, p in zip(progress[s, m], progress[s, "pretrained"], strict=True)] for m in MODELS[1:]]
         for s in ("on", "off")}
for setting in ("on", "off"):
    out["adapted_minus_pretrained"][f"value_{setting}"] = row = ci(diffs[setting])
    print(f"value {setting}: adapted - pretrained {row['mean']:+.3f} {row['ci95']}")
dd = [[off - on for off, on in zip(d_off, d_on, strict=True)] for d_off, d_on in zip(diffs["off"], diffs["on"],
                                                                                         strict=True)]
out["off_minus_on"] = ci(dd)
on_high = out["adapted_minus_pretrained"]["value_on"]["ci95"][1]
off_high = out["adapted_minus_pretrained"]["value_off"]["ci95"][1]
supported = off_high >= 0 and on_high < 0 and out["off_minus_on"]["ci95"][0] > 0
out["verdict"] = "supported: the frozen value head is what makes adaptation hurt" if supported else "not supported"
print(f"value off - value on (of adapted - pretrained): {out['off_minus_on']['mean']:+.3f} "
      f"{out['off_minus_on']['ci95']} -> {out['verdict']}")
Path(OUT).write_text(json.dumps(out, indent=1) + "\n")
