"""Score a finished `simdist bench adaptation` report's models again on its own held-out sets.

Why: reports written before the benchmark recorded ``reward_error_task`` (the reward head's held-out error in
task units) hold only ``reward_error``, the head's loss in its own normalised units, which cannot be compared
between checkpoints pretrained on different data (the ``--compare`` ablations). The held-out set of each seed
and each method's final model stay in the run's workdir, so the task-unit error can be measured afterwards.

For every seed of a (merged) report: read ``<workdir>/heldout`` with the seed's windows, score each pretrained
checkpoint (the main one and every ``--compare`` one: the zero-shot point) and each method's final model (its
last minute mark) with ``reward_error`` and ``reward_error_task``, and check that the recomputed ``reward_error``
equals the report's, which shows that the held-out set and the models are the ones the report measured.

    python scripts/diagnostics/rescore_heldout.py --report bench_results/ablation_expert_only_go2_foam_s2.json \
        --json bench_results/ablation_expert_only_go2_foam_s2_reward_task_units.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.eval.adaptation import REWARD_ONLY, heldout_batches, reward_rollout_error
from simdist_core.eval.adaptation_report import PER_METHOD_LISTS
from simdist_core.training.trainer import evaluate_loss


def per_seed_reports(report: dict) -> list[tuple[int, dict, dict]]:
    """(seed, final checkpoints by method, that seed's results) for a merged or a single-seed report."""
    if "seeds" in report:
        out = []
        for k, seed in enumerate(report["seeds"]):
            results = {m: {"minutes": res["minutes"],
                           **{key[: -len("_per_seed")]: [point[k] for point in value] for key, value in res.items()
                              if key.endswith("_per_seed") and key[: -len("_per_seed")] not in PER_METHOD_LISTS
                              and isinstance(value, list) and value and isinstance(value[0], list)}}
                       for m, res in report["results"].items()}  # fmt: skip
            out.append((seed, report["final_checkpoints_per_seed"][k], results))
        return out
    return [(report["config"]["seed"], report["final_checkpoints"], report["results"])]


def main(argv: list[str] | None = None) -> int:
    """Score every seed and write the JSON; exit 1 when a recomputed `reward_error` differs from the report's."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, required=True, help="adaptation report (merged or one seed)")
    parser.add_argument("--json", type=Path, required=True, help="where to write the scores")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report = json.loads(args.report.read_text())
    paths = {"": report["checkpoint"], **{f"@{label}": path for label, path in report["compare"].items()}}
    pretrained = {f"zero_shot{suffix}": load_checkpoint(path)[0] for suffix, path in paths.items()}  # every seed's
    spec = pretrained["zero_shot"].spec
    windows = report["config"]["heldout_windows"]
    rows = []
    for seed, finals, results in per_seed_reports(report):
        workdir = Path(next(iter(finals.values()))).parents[1]
        models = {**pretrained, **{method: load_checkpoint(path)[0] for method, path in finals.items()}}
        batches = heldout_batches(workdir / "heldout", spec, windows, seed)
        for method, model in models.items():
            model.eval()
            loss = evaluate_loss(model, batches, REWARD_ONLY)["reward"]
            recorded = results[method]["reward_error"][-1]
            rows.append({"seed": seed, "method": method, "minutes": results[method]["minutes"][-1],
                         "reward_error": loss, "reward_error_recorded": recorded,
                         "reproduced": math.isclose(loss, recorded, rel_tol=1e-5, abs_tol=1e-9),
                         "reward_error_task": reward_rollout_error(model, batches),
                         "reward_target_std": float(model.reward_head.target_std)})  # fmt: skip
            print(f"seed {seed} {method:<28} min {rows[-1]['minutes']:>5} reward_error {loss:.4f} "
                  f"(report {recorded:.4f}) task units {rows[-1]['reward_error_task']:.4f}")
    methods = list(dict.fromkeys(r["method"] for r in rows))
    mean = {m: {key: float(np.mean([r[key] for r in rows if r["method"] == m]))
                for key in ("reward_error", "reward_error_task")} for m in methods}  # fmt: skip
    out = {"report": str(args.report), "rows": rows, "mean_over_seeds": mean,
           "all_reproduced": all(r["reproduced"] for r in rows)}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    for m in methods:
        print(f"{m:<28} reward_error {mean[m]['reward_error']:.4f}  task units {mean[m]['reward_error_task']:.4f}")
    print("recomputed reward_error equals the report's for every row:", out["all_reproduced"])
    return 0 if out["all_reproduced"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
