"""Paired reading of PTFE_REPLAY.md: does replaying simulation data into dynamics-only finetuning help on the slope?

Reads the merged reports `adaptation_go2_v6_ptfe_ramp4.json` (dynamics-only and full finetuning, no replay) and
`adaptation_go2_v6_ptfe_ramp4_replay.json` (dynamics-only with `finetune.replay_fraction=0.5`), the same 3 seeds
x 10 evaluation episodes, and writes `ptfe_replay.json`:

- Q1: replay minus no replay at 10 and 30 minutes, paired by seed and episode (two-level bootstrap), with falls per
  minute and held-out latent error of both; verdict at 30 minutes: helps (CI above 0), hurts (below), else none shown.
- Q2: the issue's goals for the replay run at 30 minutes: >= 1.5x zero-shot progress, not worse than full
  finetuning (paired CI not wholly below 0), held-out latent error >= 2x lower, falls per minute down.

Run from the repository root: `python bench_results/ptfe_replay.py`.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import paired_cluster_difference_ci

PLAIN = "bench_results/adaptation_go2_v6_ptfe_ramp4.json"
REPLAY = "bench_results/adaptation_go2_v6_ptfe_ramp4_replay.json"
OUT = "bench_results/ptfe_replay.json"
MARKS = (10.0, 30.0)


def at(result: dict, key: str, minutes: float):  # noqa: ANN201  (list or number)
    """``result[key]`` at the minute mark ``minutes``."""
    return result[key][result["minutes"].index(minutes)]


def rounded(triple: tuple[float, float, float]) -> dict:
    """(mean, low, high) as {"mean", "ci95"}, to the millimetre."""
    return {"mean": round(triple[0], 3), "ci95": [round(triple[1], 3), round(triple[2], 3)]}


plain, replay = (json.loads(Path(p).read_text()) for p in (PLAIN, REPLAY))
if plain["seeds"] != replay["seeds"]:
    raise SystemExit(f"the runs have different seeds: {plain['seeds']} vs {replay['seeds']}")
if replay["config"]["finetune"]["replay_fraction"] != 0.5 or plain["config"]["finetune"].get("replay_fraction", 0):
    raise SystemExit("the runs are not the protocol's: replay_fraction 0.5 against none")
zero = [at(r["results"]["zero_shot"], "episode_metric_per_seed", 0.0) for r in (plain, replay)]
out: dict = {"sources": {"no_replay": PLAIN, "replay": REPLAY}, "seeds": replay["seeds"],
             "zero_shot_identical": zero[0] == zero[1], "q1": {}, "q2": {}}
print(f"zero-shot episodes identical in both runs: {out['zero_shot_identical']}")
base, full = plain["results"]["dynamics_only"], plain["results"]["full_finetune"]
mixed = replay["results"]["dynamics_only"]
for minutes in MARKS:
    diff = paired_cluster_difference_ci(at(mixed, "episode_metric_per_seed", minutes),
                                        at(base, "episode_metric_per_seed", minutes))
    row = {"replay_minus_no_replay_m": rounded(diff)}
    for name, res in (("no_replay", base), ("replay", mixed)):
        row[name] = {"progress_m": round(at(res, "metric", minutes), 3),
                     "ci95": [round(v, 3) for v in at(res, "metric_ci95", minutes)],
                     "falls_per_min": round(at(res, "falls_per_min", minutes), 1),
                     "latent_error": round(at(res, "latent_error", minutes), 6)}
    out["q1"][f"{minutes:g}"] = row
    print(f"{minutes:>4g} min: no replay {row['no_replay']['progress_m']:+.3f} m ({row['no_replay']['falls_per_min']} "
          f"falls/min), replay {row['replay']['progress_m']:+.3f} m ({row['replay']['falls_per_min']} falls/min); "
          f"replay - no replay {diff[0]:+.3f} [{diff[1]:+.3f}, {diff[2]:+.3f}]")
low, high = out["q1"]["30"]["replay_minus_no_replay_m"]["ci95"]
out["q1"]["verdict"] = "replay helps" if low > 0 else "replay hurts" if high < 0 else "no effect shown"
print(f"Q1 at 30 minutes: {out['q1']['verdict']}")

s30 = next(m for m in replay["summary"]["dynamics_only"]["by_minute"] if m["minutes"] == 30.0)
vs_full = paired_cluster_difference_ci(at(mixed, "episode_metric_per_seed", 30.0),
                                       at(full, "episode_metric_per_seed", 30.0))
zero_progress = at(replay["results"]["zero_shot"], "metric", 0.0)
ratio, ratio_ci = s30.get("metric_ratio_vs_zero_shot"), s30.get("metric_ratio_vs_zero_shot_ci95")
out["q2"] = {
    "zero_shot_m": round(zero_progress, 3),
    "progress_ratio_vs_zero_shot": None if ratio is None else round(ratio, 3),
    "progress_ratio_ci95": None if ratio_ci is None else [round(v, 3) for v in ratio_ci],
    "goal_1p5x_met": ratio is not None and ratio >= 1.5,
    "minus_full_finetune_m": rounded(vs_full), "goal_not_worse_than_full_met": vs_full[2] >= 0,
    "latent_error_ratio": round(s30["latent_error_ratio_zero_shot_over_method"], 2),
    "goal_latent_2x_met": s30["latent_error_ratio_zero_shot_over_method"] >= 2.0,
    "falls_per_min": [round(s30["zero_shot_falls_per_min"], 1), round(s30["falls_per_min"], 1)],
    "goal_falls_down_met": s30["falls_per_min"] < s30["zero_shot_falls_per_min"],
}
q2 = out["q2"]
print(f"Q2 at 30 minutes: {q2['progress_ratio_vs_zero_shot']}x zero-shot {q2['progress_ratio_ci95']} "
      f"(>= 1.5x: {q2['goal_1p5x_met']}); minus full finetune {vs_full[0]:+.3f} [{vs_full[1]:+.3f}, {vs_full[2]:+.3f}] "
      f"(not worse: {q2['goal_not_worse_than_full_met']}); latent error {q2['latent_error_ratio']}x lower "
      f"({q2['goal_latent_2x_met']}); falls/min {q2['falls_per_min'][0]} -> {q2['falls_per_min'][1]} "
      f"(down: {q2['goal_falls_down_met']})")
Path(OUT).write_text(json.dumps(out, indent=1) + "\n")
