"""Reading of PTFE_REWARD_ENCODED.md: the reward head fitted on encoded latents only (Q1), full finetuning (Q2).

Reads the merged report `adaptation_go2_v6_ptfe_ramp4_s2_reward_encoded.json` (the protocol's `--merge` of the
independent-seed dynamics-only reports with the `dynamics_reward_encoded` and `full_finetune` reports; `--merge`
checks that each seed's reports are the same run, with identical zero-shot episodes) and writes
`ptfe_reward_encoded.json`: per minute mark every method's progress, each rival minus `dynamics_only` and every
method minus zero-shot (paired two-level bootstrap, from the report's summary), episodes that fell, latent and
reward-head errors; the verdicts at 30 minutes decided in the protocol.

Run from the repository root: `python bench_results/ptfe_reward_encoded.py` (`--merged PATH --out PATH` to read
another merged report the same way).
"""

import argparse
import json
from pathlib import Path

MERGED = "bench_results/adaptation_go2_v6_ptfe_ramp4_s2_reward_encoded.json"
OUT = "bench_results/ptfe_reward_encoded.json"
RIVALS = ("dynamics_reward_encoded", "full_finetune")


def r3(mean: float, ci: list, sign: float = 1.0) -> dict:
    """A mean and its interval (times ``sign``, bounds reordered) as {"mean", "ci95"}, 3 decimals."""
    low, high = sorted(sign * v for v in ci)
    return {"mean": round(sign * mean, 3), "ci95": [round(low, 3), round(high, 3)]}


def sign_of(ci: dict) -> str:
    """'above 0', 'below 0' or 'includes 0' for an interval."""
    low, high = ci["ci95"]
    return "above 0" if low > 0 else "below 0" if high < 0 else "includes 0"


def main() -> None:
    """Read every minute mark of the merged report, print and write the reading."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merged", default=MERGED)
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    report = json.loads(Path(args.merged).read_text())
    res, summary = report["results"], report["summary"]
    rivals = [m for m in RIVALS if m in summary]
    methods = ["dynamics_only", *rivals]
    rows = {m: {r["minutes"]: r for r in summary[m]["by_minute"]} for m in methods}
    zero = rows["dynamics_only"][0.0]
    out = {"source": args.merged, "seeds": report["seeds"], "methods": methods,
           "zero_shot_m": r3(zero["metric"], zero["metric_ci95"]),
           "zero_shot_latent_error": round(res["zero_shot"]["latent_error"][0], 6),
           "zero_shot_reward_error": round(res["zero_shot"]["reward_error"][0], 3),
           "zero_shot_falls_per_min": round(zero["falls_per_min"], 3), "by_minute": {}}  # fmt: skip
    for minutes in res["dynamics_only"]["minutes"][1:]:
        i = res["dynamics_only"]["minutes"].index(minutes)
        dyn = rows["dynamics_only"][minutes]
        row = {"episodes": sum(len(e) for e in res["dynamics_only"]["episode_metric_per_seed"][i])}
        for m in methods:
            point = rows[m][minutes]
            row[m] = {
                "metric_m": r3(point["metric"], point["metric_ci95"]),
                "minus_zero_shot_m": r3(point["metric_minus_zero_shot"], point["metric_minus_zero_shot_ci95"]),
                "falls_per_min": round(point["falls_per_min"], 3),
                "episodes_fell": sum(sum(f) for f in res[m]["episode_fell_per_seed"][i]),
                "latent_error": round(res[m]["latent_error"][i], 6),
                "latent_error_ratio_zero_shot_over_method": round(point["latent_error_ratio_zero_shot_over_method"], 2),
                "reward_error": round(res[m]["reward_error"][i], 3),
            }  # fmt: skip
        for m in rivals:  # the report compares dynamics-only with its rivals: dynamics_only - rival
            row[f"{m}_minus_dynamics_only_m"] = r3(dyn[f"metric_minus_{m}"], dyn[f"metric_minus_{m}_ci95"], -1.0)
        out["by_minute"][f"{minutes:g}"] = row
        print(f"{minutes:>4g} min: " + "; ".join(
            f"{m} {row[m]['metric_m']} fell {row[m]['episodes_fell']} latent {row[m]['latent_error']} "
            f"reward error {row[m]['reward_error']}" for m in methods))  # fmt: skip
        for m in rivals:
            print(f"        {m} - dynamics_only {row[f'{m}_minus_dynamics_only_m']}")
    last = out["by_minute"]["30"]
    verdicts = {}
    if "dynamics_reward_encoded" in rivals:
        verdicts["q1_reward_encoded_vs_dynamics_only"] = {
            "above 0": "helps", "below 0": "hurts", "includes 0": "no difference shown"
        }[sign_of(last["dynamics_reward_encoded_minus_dynamics_only_m"])]
    if "full_finetune" in rivals:  # dynamics_only - full_finetune below 0 <=> full - dynamics above 0
        full_ahead = sign_of(last["full_finetune_minus_dynamics_only_m"]) == "above 0"
        verdicts["q2_dynamics_only_not_worse_than_full"] = not full_ahead
    for m in methods:
        point = last[m]
        verdicts[f"{m}_goals"] = {
            "minus_zero_shot_m": point["minus_zero_shot_m"],
            "latent_error_2x_lower": point["latent_error_ratio_zero_shot_over_method"] >= 2.0,
            "falls_per_min_down": point["falls_per_min"] < out["zero_shot_falls_per_min"],
        }  # fmt: skip
    out["verdicts_at_30_min"] = verdicts
    print(f"zero-shot {out['zero_shot_m']}; verdicts at 30 minutes: {json.dumps(verdicts)}")
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
