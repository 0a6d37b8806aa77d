#!/usr/bin/env python3
"""Two checkpoints (or two planner settings) on the same UR5e episode seeds, from the reports of ``simdist eval``.

A long evaluation is split over processes (``--seed S --episodes K`` each, report ``<name>_<S>.json``); this
joins them per checkpoint name and compares the two names seed by seed: success with its bootstrap 95 %
interval (``simdist_core.eval.stats.mean_ci``, as every evaluation here), the failure funnel (reached the
hole, centred there, aligned, entered), the paired wins and losses with an exact two-sided sign test, and the
mean paired difference with its interval. The two must have been run alike except for the checkpoint and the
planner keys named with ``--planner-key`` (e.g. ``terminal_value`` to compare the planner with and without it).

    python scripts/diagnostics/eval_pairs.py bench_results/ur5e_data_scale/eval --base shipped \
        --new data_scale --json bench_results/ur5e_data_scale.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from simdist_core.eval.stats import mean_ci, sign_test_p

FUNNEL = ("reached_hole", "centred_at_hole", "aligned_at_hole", "entered_hole", "success")


def episodes_by_seed(folder: Path, name: str) -> tuple[dict[int, dict], dict]:
    """Seed -> episode metrics of checkpoint ``name``, and the settings the reports share (task, planner)."""
    episodes, settings = {}, {}
    for path in sorted(folder.glob(f"{name}_*.json")):
        first_seed = int(path.stem.rsplit("_", 1)[1])
        report = json.loads(path.read_text())
        here = {k: report[k] for k in ("task", "preset", "planner", "checkpoint")}
        here["checkpoint"] = Path(here["checkpoint"]).name
        if settings and here != settings:
            raise ValueError(f"{path} was run with other settings than the other {name} reports")
        settings = here
        for i, episode in enumerate(report["per_episode"]):
            episodes[first_seed + i] = episode
    if not episodes:
        raise FileNotFoundError(f"no {name}_<seed>.json report in {folder}")
    return episodes, settings


def summary(episodes: dict[int, dict]) -> dict:
    """Success rate with its interval and the funnel counts of one checkpoint."""
    mean, low, high = mean_ci([float(e["success"]) for e in episodes.values()])
    return {
        "episodes": len(episodes),
        "success_rate": round(mean, 3),
        "success_ci95": [round(low, 3), round(high, 3)],
        "funnel": {k: int(sum(float(e.get(k, 0.0)) for e in episodes.values())) for k in FUNNEL},
    }


def main(argv: list[str] | None = None) -> None:
    """Join, compare, print the table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="folder of <name>_<first seed>.json eval reports")
    parser.add_argument("--base", required=True, help="name of the reference checkpoint's reports")
    parser.add_argument("--new", required=True, help="name of the checkpoint compared with it")
    parser.add_argument("--json", type=Path, help="write the comparison here")
    parser.add_argument("--planner-key", action="append", default=[],
                        help="a planner setting the two may differ in (repeatable); all others must match")
    args = parser.parse_args(argv)
    base, base_settings = episodes_by_seed(args.folder, args.base)
    new, new_settings = episodes_by_seed(args.folder, args.new)
    for settings in (base_settings, new_settings):
        settings.pop("checkpoint")  # the two may differ in this, and in the planner keys named
        settings["planner"] = {k: v for k, v in settings["planner"].items() if k not in args.planner_key}
    if base_settings != new_settings:
        raise ValueError(f"the two were evaluated differently: {base_settings} vs {new_settings}")
    seeds = sorted(set(base) & set(new))
    wins = sum(new[s]["success"] > base[s]["success"] for s in seeds)
    losses = sum(new[s]["success"] < base[s]["success"] for s in seeds)
    diff, low, high = mean_ci([float(new[s]["success"]) - float(base[s]["success"]) for s in seeds])
    result = {"settings": base_settings,
              "seeds": seeds, args.base: summary({s: base[s] for s in seeds}),
              args.new: summary({s: new[s] for s in seeds}),
              "paired": {"new_wins": wins, "new_losses": losses, "sign_test_p": round(sign_test_p(wins, losses), 4),
                         "new_minus_base": round(diff, 3), "new_minus_base_ci95": [round(low, 3), round(high, 3)]},
              "per_seed_success": {str(s): [base[s]["success"], new[s]["success"]] for s in seeds}}  # fmt: skip
    print(f"{'checkpoint':<14}{'success [95 % CI]':>22}  " + "  ".join(k.split("_")[0] for k in FUNNEL))
    for name in (args.base, args.new):
        row = result[name]
        print(
            f"{name:<14}{row['success_rate']:>8.3f} [{row['success_ci95'][0]:.3f}, {row['success_ci95'][1]:.3f}]  "
            + "  ".join(f"{row['funnel'][k]:>{len(k.split('_')[0])}}" for k in FUNNEL)
        )
    print(
        f"paired over {len(seeds)} seeds: {args.new} wins {wins}, loses {losses}, "
        f"sign test p = {result['paired']['sign_test_p']}; "
        f"{args.new} - {args.base} {diff:+.3f} [{low:+.3f}, {high:+.3f}]"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print("wrote", args.json)


if __name__ == "__main__":
    main()
