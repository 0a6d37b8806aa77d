"""Reading of PTFE_REWARD_HEAD.md: does fitting the reward head to the lived reward make adaptation win on the slope?

Reads the per-seed reports of the independent-seed dynamics-only rerun (`adaptation_go2_v6_ptfe_ramp4_s2_seedK.json`)
and of the `dynamics_reward` runs (`adaptation_go2_v6_ptfe_ramp4_s2_reward_seedK.json`), K = 0, 1, 2, and writes
`ptfe_reward_head.json`. Paired by seed and episode (two-level bootstrap, `simdist_core.eval.stats`).

Why not `simdist bench adaptation --merge`: the dynamics-only reports were written before `FinetuneConfig` had a
`reward_weight` field, so their configs differ by that key (absent there, 0.0 in the others) and `--merge` refuses
them. This script checks instead that the two runs of each seed are the same run in everything else: the same
config but that key, planner and held-out set, and identical zero-shot episodes.

Run from the repository root: `python bench_results/ptfe_reward_head.py`.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import cluster_mean_ci, paired_cluster_difference_ci

SEEDS = (0, 1, 2)
PLAIN = "bench_results/adaptation_go2_v6_ptfe_ramp4_s2_seed{}.json"
REWARD = "bench_results/adaptation_go2_v6_ptfe_ramp4_s2_reward_seed{}.json"
OUT = Path("bench_results/ptfe_reward_head.json")
MARKS = (5.0, 10.0, 20.0, 30.0)


def r3(triple) -> dict:  # noqa: ANN001
    """(mean, low, high) as {"mean", "ci95"}, 3 decimals."""
    return {"mean": round(triple[0], 3), "ci95": [round(triple[1], 3), round(triple[2], 3)]}


def main() -> None:
    """Check the pairs, read every minute mark, print and write OUT."""
    plain = [json.loads(Path(PLAIN.format(k)).read_text()) for k in SEEDS]
    reward = [json.loads(Path(REWARD.format(k)).read_text()) for k in SEEDS]
    for a, b in zip(plain, reward, strict=True):
        fa, fb = dict(a["config"]["finetune"]), dict(b["config"]["finetune"])
        if fb.pop("reward_weight", 0.0) != 0.0 or fa.pop("reward_weight", 0.0) != 0.0 or fa != fb:
            raise SystemExit("finetune configs differ in more than the reward_weight key")
        same = all(a[k] == b[k] for k in ("planner", "heldout_windows", "seed_scheme", "task"))
        same = same and {k: v for k, v in a["config"].items() if k != "finetune"} == \
            {k: v for k, v in b["config"].items() if k != "finetune"}
        if not same or a["results"]["zero_shot"] != b["results"]["zero_shot"]:
            raise SystemExit(f"seed {a['config']['seed']}: the two reports are not the same run")

    def clusters(reports: list, method: str, minutes: float, key: str = "episode_metric") -> list:
        res = [r["results"][method] for r in reports]
        return [x[key][x["minutes"].index(minutes)] for x in res]

    zero = clusters(plain, "zero_shot", 0.0)
    out = {"sources": {"dynamics_only": PLAIN, "dynamics_reward": REWARD}, "seeds": list(SEEDS),
           "zero_shot_identical": True, "zero_shot_m": r3(cluster_mean_ci(zero)), "by_minute": {}}  # fmt: skip
    for minutes in MARKS:
        dyn, rew = clusters(plain, "dynamics_only", minutes), clusters(reward, "dynamics_reward", minutes)
        fell = {m: sum(sum(f) for f in clusters(reps, m, minutes, "episode_fell"))
                for m, reps in (("dynamics_only", plain), ("dynamics_reward", reward))}  # fmt: skip
        row = {
            "dynamics_only_m": r3(cluster_mean_ci(dyn)), "dynamics_reward_m": r3(cluster_mean_ci(rew)),
            "reward_minus_dynamics_only_m": r3(paired_cluster_difference_ci(rew, dyn)),
            "reward_minus_zero_shot_m": r3(paired_cluster_difference_ci(rew, zero)),
            "episodes_fell": fell, "episodes": sum(len(c) for c in dyn),
            "latent_error": {m: round(sum(clusters(reps, m, minutes, "latent_error")) / len(SEEDS), 6)
                             for m, reps in (("dynamics_only", plain), ("dynamics_reward", reward))},
            "reward_error": {m: round(sum(clusters(reps, m, minutes, "reward_error")) / len(SEEDS), 3)
                             for m, reps in (("dynamics_only", plain), ("dynamics_reward", reward))},
        }  # fmt: skip
        out["by_minute"][f"{minutes:g}"] = row
        print(f"{minutes:>4g} min: dynamics-only {row['dynamics_only_m']}, dynamics+reward {row['dynamics_reward_m']}, "
              f"difference {row['reward_minus_dynamics_only_m']}; fell {fell}; latent {row['latent_error']}; "
              f"reward error {row['reward_error']}")
    out["zero_shot_latent_error"] = round(sum(clusters(plain, "zero_shot", 0.0, "latent_error")) / len(SEEDS), 6)
    out["zero_shot_reward_error"] = round(sum(clusters(plain, "zero_shot", 0.0, "reward_error")) / len(SEEDS), 3)
    low, high = out["by_minute"]["30"]["reward_minus_dynamics_only_m"]["ci95"]
    out["verdict"] = "helps" if low > 0 else "hurts" if high < 0 else "no difference shown"
    print(f"zero-shot {out['zero_shot_m']}, latent {out['zero_shot_latent_error']}, reward error "
          f"{out['zero_shot_reward_error']}; verdict at 30 minutes: fitting the reward head {out['verdict']}")
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
