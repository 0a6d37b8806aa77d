"""Pick the softer foam of ``FOAM_SOFT_DEPLOYED.md`` by the rule that protocol fixed before any run.

For each candidate stiffness K (in the protocol's order, damping 2 sqrt(K)): the expert's forward progress and falls
(``measure_expert``, 3 x 20 s) against the same measure on ``go2/foam``, then the deployed planner's zero-shot
progress as a share of the commanded distance (``simdist eval``, 20 x 10 s, seeds 7000-7019, ``prior_weight`` 100).
Stops at the first candidate that meets both conditions. ``go2/foam`` itself is measured the same way as a reference.

Run: ``python bench_results/soft_foam_selection.py`` (about 5 minutes per floor on a 2-vCPU VM) ->
``soft_foam_selection.json``.
"""

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from simdist_core.experts.go2_expert import measure_expert
from simdist_core.sim.base import make_env

HERE = Path(__file__).parent
CANDIDATES = (50.0, 30.0, 20.0, 12.0)
EXPERT_SHARE_MIN, FALLS_PER_MIN_MAX = 0.80, 1.0
PLANNER_SHARE = (0.15, 0.60)
EPISODES, SECONDS, SEED = 20, 10.0, 7000


def overrides(stiffness: float | None) -> dict[str, str]:
    """Task overrides of a candidate (none for ``go2/foam`` itself)."""
    if stiffness is None:
        return {}
    return {"terrain.foam_stiffness": repr(stiffness), "terrain.foam_damping": repr(2.0 * math.sqrt(stiffness))}


def planner_share(stiffness: float | None) -> dict:
    """The deployed planner's zero-shot progress over the commanded distance on the protocol's episodes."""
    env_set = [a for k, v in overrides(stiffness).items() for a in ("--set", f"{k}={v}")]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "eval.json"
        subprocess.run([sys.executable, "-c", "import sys; from simdist_core.cli import main; sys.exit(main())",
                        "eval", "--checkpoint", str(HERE.parent / "checkpoints/go2"), "--task", "go2/foam", *env_set,
                        "--planner", "prior_weight=100", "--episodes", str(EPISODES), "--seconds", str(SECONDS),
                        "--seed", str(SEED), "--json", str(out)], check=True)
        report = json.loads(out.read_text())
    env = make_env("go2/foam", overrides(stiffness))
    commanded = []
    for i in range(EPISODES):
        env.reset(seed=SEED + i)
        commanded.append(float(np.hypot(*env.command[:2])) * SECONDS)
    progress = [ep["forward_progress_m"] for ep in report["per_episode"]]
    falls = sum(int(ep["fell"]) for ep in report["per_episode"])
    return {"progress_m_mean": float(np.mean(progress)), "commanded_m_mean": float(np.mean(commanded)),
            "share_of_commanded": float(np.sum(progress) / np.sum(commanded)), "episodes_fell": falls,
            "per_episode_progress_m": progress, "per_episode_commanded_m": commanded}


def main() -> None:
    """Measure the reference, then the candidates in order until one qualifies."""
    reference_expert = measure_expert("go2/foam", seconds=20.0, episodes=3)
    out = {"protocol": "FOAM_SOFT_DEPLOYED.md", "reference": {"expert": reference_expert,
                                                                "planner": planner_share(None)},
           "candidates": [], "chosen_stiffness": None}
    print(json.dumps(out["reference"]["expert"]), out["reference"]["planner"]["share_of_commanded"], flush=True)
    for stiffness in CANDIDATES:
        expert = measure_expert("go2/foam", seconds=20.0, episodes=3, overrides=overrides(stiffness))
        row = {"stiffness": stiffness, "damping": 2.0 * math.sqrt(stiffness), "expert": expert,
               "expert_share_of_reference": expert["forward_progress_m"] / reference_expert["forward_progress_m"]}
        row["expert_walks"] = (row["expert_share_of_reference"] >= EXPERT_SHARE_MIN
                               and expert["falls_per_min"] <= FALLS_PER_MIN_MAX)
        if row["expert_walks"]:
            row["planner"] = planner_share(stiffness)
            row["planner_has_room"] = PLANNER_SHARE[0] <= row["planner"]["share_of_commanded"] <= PLANNER_SHARE[1]
        out["candidates"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "planner"}),
              row.get("planner", {}).get("share_of_commanded"), flush=True)
        if row["expert_walks"] and row["planner_has_room"]:
            out["chosen_stiffness"] = stiffness
            break
    (HERE / "soft_foam_selection.json").write_text(json.dumps(out, indent=1) + "\n")
    print("chosen:", out["chosen_stiffness"])


if __name__ == "__main__":
    main()
