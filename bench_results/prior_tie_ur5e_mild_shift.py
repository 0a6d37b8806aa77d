"""Pretrained vs dynamics-only-adapted UR5e checkpoints on the milder stand-in with a looser prior tie (lambda 200).

Reads the six ``simdist bench budget`` reports of ``UR5E_MILD_SHIFT_PRIOR_TIE.md`` (one per checkpoint and seed, the
same 20 episodes for both checkpoints of a seed) and writes the pooled success, the funnel, the paired wins and
losses with a two-sided sign test, and two-level bootstrap intervals (seeds, then episodes).

Run: ``python bench_results/prior_tie_ur5e_mild_shift.py``
"""

import json
from pathlib import Path

from simdist_core.eval.stats import cluster_mean_ci, paired_cluster_difference_ci, sign_test_p

HERE = Path(__file__).parent
RUNS = HERE / "prior_tie_ur5e_mild_shift"
STAGES = ("reached_hole", "centred_at_hole", "aligned_at_hole", "entered_hole", "success")


def episodes(name: str, seed: int) -> list[dict]:
    """Per-episode metrics of one report (it has one point: 32x1 MPPI with prior_weight 200)."""
    report = json.loads((RUNS / f"{name}_seed{seed}.json").read_text())
    (point,) = report["points"]
    if point["budget"] != "32x1:prior_weight=200" or point["task"] != "ur5e/peg_mild_shift":
        raise ValueError(f"{name}_seed{seed}: not a run of the protocol ({point['task']}, {point['budget']})")
    return point["per_episode"]


def main() -> None:
    """Write ``prior_tie_ur5e_mild_shift.json`` and print its summary."""
    out: dict = {"task": "ur5e/peg_mild_shift", "planner": "32x1 MPPI, prior_weight 200",
                 "protocol": "bench_results/UR5E_MILD_SHIFT_PRIOR_TIE.md", "seeds": [0, 1, 2], "checkpoints": {}}
    success = {}
    for name in ("pretrained", "adapted"):
        eps = {s: episodes(name, s) for s in (0, 1, 2)}
        success[name] = [[e["success"] for e in eps[s]] for s in (0, 1, 2)]
        mean, low, high = cluster_mean_ci(success[name])
        out["checkpoints"][name] = {"success_rate": mean, "ci95": [low, high],
                                    "funnel": {k: int(sum(e[k] for s in eps for e in eps[s])) for k in STAGES},
                                    "per_seed": [sum(c) / len(c) for c in success[name]]}
    pretrained = [x for c in success["pretrained"] for x in c]
    adapted = [x for c in success["adapted"] for x in c]
    pairs = list(zip(pretrained, adapted, strict=True))
    wins, losses = sum(b > a for a, b in pairs), sum(b < a for a, b in pairs)
    diff, low, high = paired_cluster_difference_ci(success["adapted"], success["pretrained"])
    out["adapted_minus_pretrained"] = {"difference": diff, "ci95": [low, high], "adapted_wins": wins,
                                       "adapted_losses": losses, "sign_test_p": sign_test_p(wins, losses)}
    (HERE / "prior_tie_ur5e_mild_shift.json").write_text(json.dumps(out, indent=1) + "\n")
    for name, c in out["checkpoints"].items():
        print(f"{name:10s} {c['success_rate']:.3f} [{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}]  funnel {c['funnel']}")
    d = out["adapted_minus_pretrained"]
    print(f"adapted - pretrained {d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]; "
          f"wins {wins}, losses {losses}, sign test p = {d['sign_test_p']:.2g}")


if __name__ == "__main__":
    main()
