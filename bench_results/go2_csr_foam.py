"""Reading of ``GO2_CSR_FOAM.md``: foam adaptation of the PTFE model at 300 and 3,000 finetuning updates per round.

Reads the merged reports ``bench_results/adaptation_go2_csr_foam_ft{300,3000}.json`` and their per-seed reports,
and writes ``bench_results/go2_csr_foam.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_foam.py``.
"""

import json
from pathlib import Path

from eval_arms import rounded_difference

CHECKPOINT = "bench_results/go2_csr_dagger2_pretrained"
STEPS = (300, 3000)
SEEDS = (0, 1, 2)
READ_AT_10 = ("metric", "metric_ci95", "metric_ratio_vs_zero_shot", "metric_ratio_vs_zero_shot_ci95",
              "metric_minus_zero_shot", "metric_minus_zero_shot_ci95", "falls_per_min", "zero_shot_falls_per_min",
              "latent_error_ratio_zero_shot_over_method")  # fmt: skip


def load(path: Path, steps: int, anchor_weight: float = 0.0) -> dict:
    """One report of the protocol (task, model, updates, anchor weight, heading hold, 10 episodes), checked.

    Raises:
        SystemExit: the report is not the protocol's run.
    """
    report = json.loads(path.read_text())
    config = report["config"]
    if (report["task"] != "go2/foam" or report["checkpoint"] != CHECKPOINT or config["finetune"]["steps"] != steps
            or config["finetune"].get("anchor_weight", 0.0) != anchor_weight or not config["heading_hold"]
            or config["eval_episodes"] != 10 or config["minutes"] != [0.0, 10.0]):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def at_10(report: dict) -> dict:
    """The merged report's zero-shot, its dynamics-only readings at 10 minutes and the goal's verdict."""
    rows = {r["minutes"]: r for r in report["summary"]["dynamics_only"]["by_minute"]}
    row = rows[10.0]
    ratio, (low, _) = row["metric_ratio_vs_zero_shot"], row["metric_ratio_vs_zero_shot_ci95"]
    return {"zero_shot_metric": rows[0.0]["metric"], "zero_shot_metric_ci95": rows[0.0]["metric_ci95"],
            **{key: row[key] for key in READ_AT_10},
            "foam_stays_at_least_1_5x": "holds" if ratio >= 1.5 and low > 1 else "does not hold"}


def episodes_at_10(steps: int, name: str = "", anchor_weight: float = 0.0) -> list[list[float]]:
    """Per seed, the 10-minute model's per-episode progress (the same episodes at either update count).

    ``name``: the runs' name (default ``ft<steps>``), ``anchor_weight`` the one they must have used.
    """
    name = name or f"ft{steps}"
    reports = [load(Path(f"bench_results/adaptation_go2_csr_foam_{name}_seed{k}.json"), steps, anchor_weight)
               for k in SEEDS]  # fmt: skip
    return [r["results"]["dynamics_only"]["episode_metric"][r["results"]["dynamics_only"]["minutes"].index(10.0)]
            for r in reports]  # fmt: skip


def main() -> None:
    """Each update count at 10 minutes against zero-shot, and 3,000 against 300 on the same episodes."""
    out = {"protocol": "bench_results/GO2_CSR_FOAM.md"}
    for steps in STEPS:
        out[f"updates_{steps}"] = at_10(load(Path(f"bench_results/adaptation_go2_csr_foam_ft{steps}.json"), steps))
    zero = {steps: [load(Path(f"bench_results/adaptation_go2_csr_foam_ft{steps}_seed{k}.json"), steps)["results"]
                    ["zero_shot"]["episode_metric"][0] for k in SEEDS] for steps in STEPS}  # fmt: skip
    if zero[300] != zero[3000]:
        raise SystemExit("the two update counts evaluated zero-shot on different episodes")
    out["updates_3000_minus_300_at_10"] = rounded_difference(episodes_at_10(3000), episodes_at_10(300))
    Path("bench_results/go2_csr_foam.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
