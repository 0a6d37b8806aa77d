"""``UR5E_NOMINAL_NEW_EPISODES.md``: the deployed UR5e model and planner on 100 new nominal peg episodes.

Run: ``python bench_results/ur5e_nominal_new_episodes.py`` after the protocol's two ``simdist eval`` commands.
"""

import json
from pathlib import Path

from eval_arms import FUNNEL, load_arm

HERE = Path(__file__).parent
PARTS = ("eval_ur5e_peg_nominal_new_41000.json", "eval_ur5e_peg_nominal_new_41050.json")
SELECTION = 0.817
"""``ur5e_command_frame.json``: the same model on its selection episodes (seeds 1000-1019, 2000-2039)."""


def main() -> None:
    """Pool the two halves, bootstrap the rate and apply the protocol's verdict rule."""
    from simdist_core.eval.stats import mean_ci

    success: list[float] = []
    funnel = dict.fromkeys(FUNNEL, 0)
    for name in PARTS:
        report = json.loads((HERE / name).read_text())
        if report["torch_threads"] != 1 or report["preset"] != "checkpoint":
            raise SystemExit(f"{name} is not the protocol's run")
        part, summary = load_arm(HERE / name, "ur5e/peg", 1000.0, True, episodes=50)
        success += part
        funnel = {k: funnel[k] + summary["funnel"][k] for k in FUNNEL}
    mean, low, high = mean_ci(success)
    verdict = ("shown" if low >= 0.80 else "holds on new episodes") if mean >= 0.80 else "not met on new episodes"
    out = {"protocol": "bench_results/UR5E_NOMINAL_NEW_EPISODES.md", "checkpoint": "checkpoints/ur5e",
           "task": "ur5e/peg", "eval_seeds": [41000, 41099], "episodes": len(success),
           "success_rate": round(mean, 3), "success_ci95": [round(low, 3), round(high, 3)], "funnel": funnel,
           "verdict": verdict, "selection_episodes_success_rate": SELECTION,
           "new_minus_selection": round(mean - SELECTION, 3), "parts": list(PARTS)}
    (HERE / "ur5e_nominal_new_episodes.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
