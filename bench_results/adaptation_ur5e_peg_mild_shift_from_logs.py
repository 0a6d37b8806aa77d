"""Success per point of the UR5e mild-shift adaptation run, read from its logs (the run was stopped before its report).

The run (``UR5E_MILD_SHIFT.md``) writes its JSON only when every method is done; on the 2-vCPU VM the three
seeds finished zero-shot and dynamics-only (0, 5, 15 minutes) and were stopped during full finetuning. Every
evaluation episode is logged by the benchmark itself (``closed_loop: episode i/20: {...}``), in the order
zero-shot, dynamics-only @ 5 min, dynamics-only @ 15 min; held-out latent errors are in the ``@ N min`` lines.

Run: ``python bench_results/adaptation_ur5e_peg_mild_shift_from_logs.py``
"""

import ast
import json
import re
from pathlib import Path

from simdist_core.eval.stats import cluster_mean_ci, paired_cluster_difference_ci

HERE = Path(__file__).parent
LOGS = HERE / "adaptation_ur5e_peg_mild_shift_logs"
POINTS = ("zero_shot", "dynamics_only@5min", "dynamics_only@15min")


def read_seed(path: Path) -> dict:
    """Per-point episode successes and the logged latent errors of one seed."""
    successes = [float(ast.literal_eval(m.group(1))["success"])
                 for m in re.finditer(r"episode \d+/20: (\{.*\})", path.read_text())]
    latent = [float(x) for x in re.findall(r"dynamics_only @ [\d.]+ min: .*?latent_error=([\d.e-]+)",
                                           path.read_text())]
    points = {name: successes[20 * i:20 * (i + 1)] for i, name in enumerate(POINTS)}
    if any(len(v) != 20 for v in points.values()):
        raise ValueError(f"{path}: expected 3 x 20 evaluation episodes, got {len(successes)}")
    return {"episode_success": points, "dynamics_only_latent_error": latent}


def main() -> None:
    """Write the pooled success per point with two-level bootstrap intervals and the paired differences."""
    seeds = {s: read_seed(LOGS / f"seed{s}.log") for s in (0, 1, 2)}
    out: dict = {"task": "ur5e/peg_mild_shift", "protocol": "bench_results/UR5E_MILD_SHIFT.md",
                 "source": "benchmark logs (run stopped during full finetuning; no report JSON)",
                 "code_commit": "c9f5044 (clean worktree)", "seeds": seeds, "points": {}}
    for name in POINTS:
        clusters = [seeds[s]["episode_success"][name] for s in seeds]
        mean, low, high = cluster_mean_ci(clusters)
        out["points"][name] = {"success_rate": mean, "ci95": [low, high],
                               "successes": int(sum(map(sum, clusters))), "episodes": 60,
                               "per_seed": [sum(c) / len(c) for c in clusters]}
    zero = [seeds[s]["episode_success"]["zero_shot"] for s in seeds]
    for name in POINTS[1:]:
        diff, low, high = paired_cluster_difference_ci([seeds[s]["episode_success"][name] for s in seeds], zero)
        out["points"][name]["minus_zero_shot"] = {"difference": diff, "ci95": [low, high]}
        zs = out["points"]["zero_shot"]["success_rate"]
        out["points"][name]["ratio_vs_zero_shot"] = out["points"][name]["success_rate"] / zs if zs else None
    (HERE / "adaptation_ur5e_peg_mild_shift_dynamics_only.json").write_text(json.dumps(out, indent=1) + "\n")
    for name, p in out["points"].items():
        print(f"{name:22s} {p['successes']:2d}/60 = {p['success_rate']:.3f} [{p['ci95'][0]:.3f}, {p['ci95'][1]:.3f}]"
              + (f"  minus zero-shot {p['minus_zero_shot']['difference']:+.3f} "
                 f"[{p['minus_zero_shot']['ci95'][0]:+.3f}, {p['minus_zero_shot']['ci95'][1]:+.3f}]"
                 if "minus_zero_shot" in p else ""))


if __name__ == "__main__":
    main()
