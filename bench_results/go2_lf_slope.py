"""Reading of ``GO2_SLOPE_MODEL_LOW_FRICTION.md``: the slope model's recipe with friction down to 0.25 in pretraining.

Reads ``bench_results/go2_lf_slope/lf_hold_{slope,flat,foam,ptfe_slope}.json`` (the new model) and the slope model's
runs on the same seeds (``bench_results/go2_dagger_slope/dagger2_hold_*.json``,
``bench_results/go2_dagger_ptfe_start/hold.json``); writes ``bench_results/go2_lf_slope.json``. Run from the
repository root: ``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_lf_slope.py``.
"""

import json
from pathlib import Path

from eval_arms import falls_within_2s
from go2_dagger_slope import _difference, _turned
from go2_heading_command import _load
from simdist_core.eval.stats import episode_summary

DIR = Path("bench_results/go2_lf_slope")
SLOPE_MODEL = {"slope": Path("bench_results/go2_dagger_slope/dagger2_hold_slope.json"),
               "flat": Path("bench_results/go2_dagger_slope/dagger2_hold_flat.json"),
               "foam": Path("bench_results/go2_dagger_slope/dagger2_hold_foam.json"),
               "ptfe_slope": Path("bench_results/go2_dagger_ptfe_start/hold.json")}


def main() -> None:
    """Every reading of the protocol, and its verdicts."""
    rows = {}
    for terrain, reference_path in SLOPE_MODEL.items():
        task = f"go2/{terrain}"
        report = _load(DIR / f"lf_hold_{terrain}.json", terrain, True)
        reference = _load(reference_path, terrain, True)
        rows[terrain] = {**episode_summary(report["per_episode"], task), "checkpoint": report["checkpoint"],
                         "turned_round": _turned(report), "fell_within_2s": falls_within_2s(report),
                         "minus_slope_model": _difference(report, reference, task),
                         "slope_model": {**episode_summary(reference["per_episode"], task),
                                         "turned_round": _turned(reference),
                                         "fell_within_2s": falls_within_2s(reference)}}
    slope, ptfe = rows["slope"], rows["ptfe_slope"]
    out = {"protocol": "bench_results/GO2_SLOPE_MODEL_LOW_FRICTION.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {
               "slippery_data_keep_the_slope":
                   slope["minus_slope_model"]["ci95"][1] >= 0 and slope["turned_round"] <= 3,
               "slippery_data_let_it_start_on_ptfe":
                   ptfe["minus_slope_model"]["ci95"][0] > 0 and ptfe["fell_within_2s"] < 15,
               "flat_below_slope_model": rows["flat"]["minus_slope_model"]["ci95"][1] < 0,
               "foam_below_slope_model": rows["foam"]["minus_slope_model"]["ci95"][1] < 0}}
    Path("bench_results/go2_lf_slope.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
