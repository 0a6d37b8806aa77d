"""Readings of ``UR5E_LIVE_SCHEDULE.md``: the in-process UR5e benchmark with the live finetuner's schedule.

Reads the merged report ``adaptation_ur5e_peg_mild_shift_live_schedule.json`` (zero-shot and dynamics-only, a round
every 2 minutes to 15, 200 updates a round, no action noise, 3 seeds x 20 evaluation episodes) and the one-round run
on the same evaluation episodes, ``adaptation_ur5e_peg_mild_shift_cf.json`` (same seeds, seed scheme 2). Writes the
protocol's readings (success with 95 % intervals; paired differences with a two-level bootstrap over seeds and
episodes, wins, losses and a two-sided sign test; rounds the gate accepted; latent error) to
``adaptation_ur5e_peg_mild_shift_live_schedule_readings.json``.

With ``shifted``, the same readings for the harder stand-in (the protocol's part 2:
``adaptation_ur5e_peg_shifted_live_schedule.json`` against ``adaptation_ur5e_peg_shifted_cf.json``) →
``adaptation_ur5e_peg_shifted_live_schedule_readings.json``.

Run: ``python bench_results/adaptation_ur5e_peg_mild_shift_live_schedule.py [shifted]``
"""

import json
import sys
from pathlib import Path

from adaptation_ur5e_peg_mild_shift_tie200 import episodes
from eval_arms import paired
from simdist_core.eval.stats import cluster_mean_ci

HERE = Path(__file__).parent
RUNS = {"mild": ("adaptation_ur5e_peg_mild_shift_live_schedule", "adaptation_ur5e_peg_mild_shift_cf"),
        "shifted": ("adaptation_ur5e_peg_shifted_live_schedule", "adaptation_ur5e_peg_shifted_cf")}
"""Stand-in -> (the run with the live schedule, the one-round run on the same evaluation episodes)."""


def main() -> None:
    """Write the readings and print them."""
    name, one_round = RUNS[sys.argv[1] if len(sys.argv) > 1 else "mild"]
    live, once = (json.loads((HERE / f"{n}.json").read_text()) for n in (name, one_round))
    if live["seeds"] != once["seeds"] or live["seed_scheme"] != once["seed_scheme"]:
        raise ValueError("the two runs do not share their evaluation episodes")
    last = live["config"]["minutes"][-1]
    if last != once["config"]["minutes"][-1]:
        raise ValueError("the two runs end at different minutes of experience")
    series = {"zero_shot": episodes(live, "zero_shot", 0.0),
              "dynamics_only_live_schedule": episodes(live, "dynamics_only", last),
              "dynamics_only_one_round": episodes(once, "dynamics_only", last)}  # fmt: skip
    out = {"protocol": "bench_results/UR5E_LIVE_SCHEDULE.md", "minutes": last, "seeds": live["seeds"], "success": {}}
    for label, s in series.items():
        mean, low, high = cluster_mean_ci(s)
        out["success"][label] = {"rate": mean, "ci95": [low, high]}
    zero = out["success"]["zero_shot"]["rate"]
    out["live_schedule_over_zero_shot"] = out["success"]["dynamics_only_live_schedule"]["rate"] / zero
    out["live_schedule_minus_zero_shot"] = paired(series["dynamics_only_live_schedule"], series["zero_shot"])
    out["live_schedule_minus_one_round"] = paired(series["dynamics_only_live_schedule"],
                                                  series["dynamics_only_one_round"])
    out["zero_shot_same_as_one_round_run"] = series["zero_shot"] == episodes(once, "zero_shot", 0.0)
    rounds = live["results"]["dynamics_only"]["rounds_per_seed"]
    out["rounds_per_seed"] = [len(r) for r in rounds]
    out["rounds_accepted_per_seed"] = [sum(g["gate"]["passed"] for g in r) for r in rounds]
    out["latent_error_ratio_zero_shot_over_dynamics_only"] = {
        "live_schedule": live["summary"]["dynamics_only"]["latent_error_ratio_zero_shot_over_method"],
        "one_round": once["summary"]["dynamics_only"]["latent_error_ratio_zero_shot_over_method"]}
    (HERE / f"{name}_readings.json").write_text(json.dumps(out, indent=1) + "\n")
    for label, s in out["success"].items():
        print(f"{label:30s} {s['rate']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]")
    for key in ("live_schedule_minus_zero_shot", "live_schedule_minus_one_round"):
        d = out[key]
        print(f"{key:30s} {d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] "
              f"wins {d['wins']} losses {d['losses']} p={d['sign_test_p']:.2g}")
    print("ratio:", out["live_schedule_over_zero_shot"], "rounds accepted:", out["rounds_accepted_per_seed"],
          "of", out["rounds_per_seed"], "zero-shot as in the one-round run:", out["zero_shot_same_as_one_round_run"],
          "latent error ratios:", out["latent_error_ratio_zero_shot_over_dynamics_only"])


if __name__ == "__main__":
    main()
