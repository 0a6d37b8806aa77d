"""The policy prior improved through the adapted model, UR5e milder stand-in (``UR5E_MILD_SHIFT_PRIOR_IMPROVE.md``).

Two steps:

``python bench_results/prior_improve_ur5e_mild_shift.py train --runs <folder of the mild-shift adaptation runs>``
    For seed S in 0, 1, 2: load that seed's dynamics-only checkpoint (``<runs>/adaptation_ur5e_peg_mild_shift_cf_seedS
    _work/dynamics_only/final``), train its policy prior on its own lived experience (the ``dynamics_only`` step store
    beside it) with ``simdist_core.training.prior_improve.improve_prior`` and the checkpoint's planner (prior_weight
    1000), and save it as ``<runs>/prior_improved_seedS`` (if the gate fails, nothing is saved and the adapted
    checkpoint stands for it, as a robot would keep its prior). Reports: ``prior_improve_ur5e_mild_shift/train.json``.
``python bench_results/prior_improve_ur5e_mild_shift.py summary``
    Joins the nine ``simdist bench budget`` reports of the protocol (pretrained, adapted, improved x 3 seeds; the
    same 20 episodes for the three checkpoints of a seed) into ``prior_improve_ur5e_mild_shift.json``.
``python bench_results/prior_improve_ur5e_mild_shift.py shift --runs <folder>``
    Looked at after the result: how the improved prior's plan differs from the adapted one's on 512 lived states
    (mean per action dimension over the first five steps, and the RMS), printed.
"""

import argparse
import json
import logging
from pathlib import Path

import torch
from simdist_core.checkpoint import load_checkpoint, save_checkpoint
from simdist_core.data.dataset import Dataset
from simdist_core.eval.stats import cluster_mean_ci, paired_cluster_difference_ci, sign_test_p
from simdist_core.planning.mppi import PlannerConfig
from simdist_core.training.prior_improve import PriorImprovementConfig, improve_prior

HERE = Path(__file__).parent
RUNS = HERE / "prior_improve_ur5e_mild_shift"
STAGES = ("reached_hole", "centred_at_hole", "aligned_at_hole", "entered_hole", "success")
SEEDS = (0, 1, 2)
NAMES = ("pretrained", "adapted", "improved")


def train(runs: Path) -> None:
    """Improve each seed's adapted prior; write the checkpoints and ``train.json``."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    reports = {}
    for seed in SEEDS:
        work = runs / f"adaptation_ur5e_peg_mild_shift_cf_seed{seed}_work" / "dynamics_only"
        model, manifest = load_checkpoint(work / "final")
        planner_cfg = PlannerConfig(**manifest.planner_config)
        new, report = improve_prior(model, Dataset(work), planner_cfg, PriorImprovementConfig())
        reports[seed] = {**report.to_json(), "adapted": str(work / "final"), "experience": str(work)}
        if report.passed:
            out = runs / f"prior_improved_seed{seed}"
            save_checkpoint(out, new, version=manifest.version + 1, parent_version=manifest.version,
                            parts_changed=("policy",), planner_config=planner_cfg,
                            extra={"what": "policy prior improved through the adapted model "
                                           "(simdist_core.training.prior_improve)",
                                   "parent_checkpoint": str(work / "final"), "report": report.to_json()})  # fmt: skip
            reports[seed]["improved"] = str(out)
        print(seed, reports[seed])
    RUNS.mkdir(exist_ok=True)
    (RUNS / "train.json").write_text(json.dumps(reports, indent=1) + "\n")


def episodes(name: str, seed: int) -> list[dict]:
    """Per-episode metrics of one report (one point: 32x1 MPPI with prior_weight 1000)."""
    report = json.loads((RUNS / f"{name}_seed{seed}.json").read_text())
    (point,) = report["points"]
    if point["budget"] != "32x1:prior_weight=1000" or point["task"] != "ur5e/peg_mild_shift":
        raise ValueError(f"{name}_seed{seed}: not a run of the protocol ({point['task']}, {point['budget']})")
    return point["per_episode"]


def compare(success: dict, new: str, old: str) -> dict:
    """Paired difference ``new - old`` with its two-level interval, wins, losses and a sign test."""
    pairs = [(a, b) for s in range(len(SEEDS)) for a, b in zip(success[old][s], success[new][s], strict=True)]
    wins, losses = sum(b > a for a, b in pairs), sum(b < a for a, b in pairs)
    diff, low, high = paired_cluster_difference_ci(success[new], success[old])
    return {"difference": diff, "ci95": [low, high], "wins": wins, "losses": losses,
            "sign_test_p": sign_test_p(wins, losses)}


def summary() -> None:
    """Write ``prior_improve_ur5e_mild_shift.json`` and print it."""
    out: dict = {"task": "ur5e/peg_mild_shift", "planner": "32x1 MPPI, prior_weight 1000",
                 "protocol": "bench_results/UR5E_MILD_SHIFT_PRIOR_IMPROVE.md", "seeds": list(SEEDS),
                 "train": json.loads((RUNS / "train.json").read_text()), "checkpoints": {}}
    success = {}
    for name in NAMES:
        eps = {s: episodes(name, s) for s in SEEDS}
        success[name] = [[e["success"] for e in eps[s]] for s in SEEDS]
        mean, low, high = cluster_mean_ci(success[name])
        out["checkpoints"][name] = {"success_rate": mean, "ci95": [low, high],
                                    "funnel": {k: int(sum(e[k] for s in eps for e in eps[s])) for k in STAGES},
                                    "per_seed": [sum(c) / len(c) for c in success[name]]}
    out["improved_minus_adapted"] = compare(success, "improved", "adapted")
    out["improved_minus_pretrained"] = compare(success, "improved", "pretrained")
    out["adapted_minus_pretrained"] = compare(success, "adapted", "pretrained")
    (HERE / "prior_improve_ur5e_mild_shift.json").write_text(json.dumps(out, indent=1) + "\n")
    for name, c in out["checkpoints"].items():
        print(f"{name:10s} {c['success_rate']:.3f} [{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}]  funnel {c['funnel']}")
    for key in ("improved_minus_adapted", "improved_minus_pretrained", "adapted_minus_pretrained"):
        d = out[key]
        print(f"{key:26s} {d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]; "
              f"wins {d['wins']}, losses {d['losses']}, sign test p = {d['sign_test_p']:.2g}")


def shift(runs: Path) -> None:
    """Print the improved prior's plan minus the adapted prior's, per action dimension, on lived states."""
    from simdist_core.data.sampler import WindowSampler

    torch.set_num_threads(1)
    for seed in SEEDS:
        work = runs / f"adaptation_ur5e_peg_mild_shift_cf_seed{seed}_work" / "dynamics_only"
        adapted, manifest = load_checkpoint(work / "final")
        improved, _ = load_checkpoint(runs / f"prior_improved_seed{seed}")
        h = manifest.planner_config["horizon"]
        batch = WindowSampler(Dataset(work), adapted.spec, batch_size=512, seed=1).sample()
        with torch.no_grad():
            latent = adapted.encode({k: v[:, 0] for k, v in batch["obs"].items()})
            diff = improved.pi(latent)[:, :h] - adapted.pi(latent)[:, :h]
        means = [round(x, 3) for x in diff[:, :5].mean((0, 1)).tolist()]
        print(f"seed {seed}: mean shift over the first 5 steps {means} (action dims "
              f"{adapted.spec.action_names}), RMS {float(diff.pow(2).mean().sqrt()):.3f}")


def main() -> None:
    """``train``, ``summary`` or ``shift``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("train").add_argument("--runs", type=Path, required=True)
    sub.add_parser("summary")
    sub.add_parser("shift").add_argument("--runs", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    {"train": lambda: train(args.runs), "summary": summary, "shift": lambda: shift(args.runs)}[args.step]()


if __name__ == "__main__":
    main()
