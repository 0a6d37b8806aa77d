"""Reading of PTFE_REWARD_HEAD.md: does fitting the reward head to the lived reward make adaptation win on the slope?

Reads the merged report `adaptation_go2_v6_ptfe_ramp4_s2_reward.json` (the protocol's `--merge` of the
independent-seed dynamics-only reports and the `dynamics_reward` reports, seeds 0-2; `--merge` checks that each
seed's two reports are the same run, with identical zero-shot episodes) and writes `ptfe_reward_head.json`: per
minute mark both methods' progress, `dynamics_reward` minus `dynamics_only` and minus zero-shot (paired two-level
bootstrap, from the report's summary), episodes that fell, latent and reward-head errors; the verdict at 30 minutes.

Run from the repository root: `python bench_results/ptfe_reward_head.py`.
"""

import json
from pathlib import Path

MERGED = "bench_results/adaptation_go2_v6_ptfe_ramp4_s2_reward.json"
OUT = Path("bench_results/ptfe_reward_head.json")


def r3(mean: float, ci: list, sign: float = 1.0) -> dict:
    """A mean and its interval (times ``sign``, bounds reordered) as {"mean", "ci95"}, 3 decimals."""
    low, high = sorted(sign * v for v in ci)
    return {"mean": round(sign * mean, 3), "ci95": [round(low, 3), round(high, 3)]}


def main() -> None:
    """Read every minute mark of the merged report, print and write OUT."""
    report = json.loads(Path(MERGED).read_text())
    res, summary = report["results"], report["summary"]
    dyn_rows = {r["minutes"]: r for r in summary["dynamics_only"]["by_minute"]}
    rew_rows = {r["minutes"]: r for r in summary["dynamics_reward"]["by_minute"]}
    zero = dyn_rows[0.0]
    out = {"source": MERGED, "seeds": report["seeds"], "zero_shot_m": r3(zero["metric"], zero["metric_ci95"]),
           "zero_shot_latent_error": round(res["zero_shot"]["latent_error"][0], 6),
           "zero_shot_reward_error": round(res["zero_shot"]["reward_error"][0], 3), "by_minute": {}}  # fmt: skip
    for minutes in res["dynamics_only"]["minutes"][1:]:
        dyn, rew = dyn_rows[minutes], rew_rows[minutes]
        i = res["dynamics_only"]["minutes"].index(minutes)
        row = {
            "dynamics_only_m": r3(dyn["metric"], dyn["metric_ci95"]),
            "dynamics_reward_m": r3(rew["metric"], rew["metric_ci95"]),
            # the report compares dynamics-only with its rivals: dynamics_only - dynamics_reward, negated here
            "reward_minus_dynamics_only_m": r3(dyn["metric_minus_dynamics_reward"],
                                               dyn["metric_minus_dynamics_reward_ci95"], -1.0),
            "reward_minus_zero_shot_m": r3(rew["metric_minus_zero_shot"], rew["metric_minus_zero_shot_ci95"]),
            "episodes_fell": {m: sum(sum(f) for f in res[m]["episode_fell_per_seed"][i])
                              for m in ("dynamics_only", "dynamics_reward")},
            "episodes": sum(len(e) for e in res["dynamics_only"]["episode_metric_per_seed"][i]),
            "latent_error": {m: round(res[m]["latent_error"][i], 6) for m in ("dynamics_only", "dynamics_reward")},
            "reward_error": {m: round(res[m]["reward_error"][i], 3) for m in ("dynamics_only", "dynamics_reward")},
        }  # fmt: skip
        out["by_minute"][f"{minutes:g}"] = row
        print(f"{minutes:>4g} min: dynamics-only {row['dynamics_only_m']}, dynamics+reward {row['dynamics_reward_m']}, "
              f"difference {row['reward_minus_dynamics_only_m']}; fell {row['episodes_fell']}; "
              f"latent {row['latent_error']}; reward error {row['reward_error']}")
    low, high = out["by_minute"]["30"]["reward_minus_dynamics_only_m"]["ci95"]
    out["verdict"] = "helps" if low > 0 else "hurts" if high < 0 else "no difference shown"
    print(f"zero-shot {out['zero_shot_m']}; verdict at 30 minutes: fitting the reward head {out['verdict']}")
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
