"""Reading of ``GO2_CAPPED_RECIPE.md``: the whole slope recipe with the friction-capped expert.

Reads ``bench_results/go2_capped_recipe/recipe_hold_*.json`` and pairs them on the same seeds with the low-friction
slope model (``bench_results/go2_lf_slope/lf_hold_*.json``) and the relabelled model with replay
(``bench_results/go2_cautious_replay/replay_hold_*.json``); writes ``bench_results/go2_capped_recipe.json``. Run from
the repository root: ``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_capped_recipe.py``.
"""

import json
from pathlib import Path

from go2_lf_lowgrip import read_arms

DIR = Path("bench_results/go2_capped_recipe")


def _keeps(row: dict) -> bool:
    """Verdict 2 on one terrain: the paired difference's lower end above -10 % of the model before's mean."""
    return row["minus_model_before"]["ci95"][0] > -0.1 * row["model_before"]["metric_mean"]


def main() -> None:
    """Every reading of stage 5, and its verdicts."""
    vs_lf = read_arms(DIR, "recipe_hold_")
    vs_replay = read_arms(DIR, "recipe_hold_", (Path("bench_results/go2_cautious_replay"), "replay_hold_"))
    ptfe = vs_lf["ptfe_slope"]
    out = {"protocol": "bench_results/GO2_CAPPED_RECIPE.md", "seeds": [65500, 65529],
           "against_go2_lf_dagger2": vs_lf, "against_relabelled_with_replay": vs_replay,
           "verdict": {
               "one_expert_from_the_data_on_lets_it_start_on_ptfe":
                   ptfe["minus_model_before"]["ci95"][0] > 0 and ptfe["fell_within_2s"] < 15,
               "and_keeps_ordinary_ground": all(_keeps(vs_lf[t]) for t in ("flat", "slope"))}}
    Path("bench_results/go2_capped_recipe.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
