"""Reading of ``GO2_LF_LOWGRIP_DAGGER.md``: a third DAgger round on low-grip slopes, against the model before it.

Reads ``bench_results/go2_lf_lowgrip/lowgrip_hold_*.json`` (the round-3 model) and the model before it on the same
seeds (``bench_results/go2_lf_slope/lf_hold_*.json``); writes ``bench_results/go2_lf_lowgrip.json``. Run from the
repository root: ``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_lf_lowgrip.py``.
"""

import json
from pathlib import Path

from eval_arms import falls_within_2s
from go2_dagger_slope import _difference, _turned
from simdist_core.eval.stats import episode_summary

DIR = Path("bench_results/go2_lf_lowgrip")
BEFORE = Path("bench_results/go2_lf_slope")
ARMS = {  # arm: (task, friction override or None); the model before's record is lf_hold_<arm>.json
    "slope": ("go2/slope", None),
    "flat": ("go2/flat", None),
    "foam": ("go2/foam", None),
    "ptfe_slope": ("go2/ptfe_slope", None),
    "ptfe_mu0.3": ("go2/ptfe_slope", "0.3"),
}


def _load(path: Path, task: str, friction: str | None) -> dict:
    report = json.loads(path.read_text())
    overrides = {"terrain.friction": friction} if friction else {}
    if (report["task"] != task or report["episodes"] != 30 or report["planner"]["prior_weight"] != 100.0
            or report["torch_threads"] != 1 or not report.get("heading_hold", False)
            or report["env_overrides"] != overrides):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def read_arms(folder: Path, prefix: str, before: tuple[Path, str] = (BEFORE, "lf_hold_")) -> dict:
    """Each arm of ``folder/<prefix><arm>.json``, paired on the same seeds with ``before`` (folder, file prefix)."""
    rows = {}
    for arm, (task, friction) in ARMS.items():
        report = _load(folder / f"{prefix}{arm}.json", task, friction)
        other = _load(before[0] / f"{before[1]}{arm}.json", task, friction)
        rows[arm] = {**episode_summary(report["per_episode"], task), "checkpoint": report["checkpoint"],
                     "turned_round": _turned(report), "fell_within_2s": falls_within_2s(report),
                     "minus_model_before": _difference(report, other, task),
                     "model_before": {**episode_summary(other["per_episode"], task),
                                      "checkpoint": other["checkpoint"], "turned_round": _turned(other),
                                      "fell_within_2s": falls_within_2s(other)}}
    return rows


def main() -> None:
    """Every reading of stage 3, and its verdicts."""
    rows = read_arms(DIR, "lowgrip_hold_")
    mu03, ptfe = rows["ptfe_mu0.3"], rows["ptfe_slope"]
    out = {"protocol": "bench_results/GO2_LF_LOWGRIP_DAGGER.md", "seeds": [65500, 65529], "arms": rows,
           "verdict": {
               "low_grip_labels_fix_low_grip_inside_the_range":
                   mu03["minus_model_before"]["ci95"][0] > 0 and mu03["falls"] <= 9,
               "low_grip_labels_let_it_start_on_ptfe":
                   ptfe["minus_model_before"]["ci95"][0] > 0 and ptfe["fell_within_2s"] < 15,
               "ordinary_ground_kept": all(rows[t]["minus_model_before"]["ci95"][1] >= 0 for t in ("slope", "flat"))}}
    Path("bench_results/go2_lf_lowgrip.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
