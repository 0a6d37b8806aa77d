"""Reading of ``GO2_CSR_PTFE_LIVE_SCHEDULE.md``: PTFE adaptation with the live finetuner's schedule, in-process.

Reads the three live-schedule models' runs on the 60 new episodes (``bench_results/go2_csr_ptfe_live/``), the
zero-shot and 3,000-update runs on the same episodes (``bench_results/go2_csr_ptfe_ft3000_confirm/``) and the merged
benchmark report, and writes ``bench_results/go2_csr_ptfe_live.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_live.py``.
"""

import json
from pathlib import Path

from eval_arms import gain_verdict, minus, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_ft3000 import TASK, dynamics_only_at, load_plain
from simdist_core.eval.stats import episode_values

DIR = Path("bench_results/go2_csr_ptfe_live")
CONFIRM = Path("bench_results/go2_csr_ptfe_ft3000_confirm")
SEEDS = (3, 4, 5)
BENCH = Path("bench_results/adaptation_go2_csr_ptfe_live.json")


def benchmark() -> dict:
    """The merged benchmark's readings at 10 and 30 minutes and the rounds its gate accepted, checked."""
    bench = json.loads(BENCH.read_text())
    config = bench["config"]
    if (config["finetune"]["steps"] != 200 or config["finetune"]["optim"]["warmup_steps"] != 50
            or config["exploration_std"] != 0.0 or len(config["minutes"]) != 61 or sorted(bench["seeds"]) != [3, 4, 5]):
        raise SystemExit(f"{BENCH}: not the protocol's benchmark")
    out = dynamics_only_at(bench)
    results = bench["results"]["dynamics_only"]
    out["rounds_per_seed"] = results["rounds_per_seed"]
    out["accepted_rounds_per_seed"] = results["accepted_rounds_per_seed"]
    return out


def main() -> None:
    """Each live-schedule model against zero-shot and against the 3,000-update model of its seed, pooled."""
    reports = {"zero_shot": load_plain(CONFIRM / "zero_shot_plain.json", 60),
               **{f"live_seed{k}": load_plain(DIR / f"adapted_seed{k}_plain.json", 60) for k in SEEDS}}
    rows, diffs, zero = progress_against_zero_shot(reports, TASK)
    ratio = ratio_of_pooled_means(diffs, zero)
    live = [episode_values(reports[f"live_seed{k}"]["per_episode"], TASK) for k in SEEDS]
    ft3000 = [episode_values(load_plain(CONFIRM / f"adapted_seed{k}_plain.json", 60)["per_episode"], TASK)
              for k in SEEDS]  # fmt: skip
    verdict = gain_verdict(rows["pooled_minus_zero_shot"], ratio, "the live schedule wins on PTFE",
                           "walks further, short of 1.5x", "walks less", "not shown")
    out = {"protocol": "bench_results/GO2_CSR_PTFE_LIVE_SCHEDULE.md", "seeds": [67000, 67059], **rows,
           "ratio_of_pooled_means": ratio, "verdict": verdict,
           "live_minus_3000_updates": rounded_difference([minus(a, b) for a, b in zip(live, ft3000, strict=True)],
                                                         [[0.0] * 60] * len(SEEDS)),
           "benchmark": benchmark()}  # fmt: skip
    Path("bench_results/go2_csr_ptfe_live.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
