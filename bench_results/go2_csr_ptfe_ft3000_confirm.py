"""Reading of ``GO2_CSR_PTFE_FT3000_CONFIRM.md``: the 3,000-update PTFE adaptation on seeds 3-5, read on new episodes.

Reads ``bench_results/go2_csr_ptfe_ft3000_confirm/<name>_plain.json`` and the merged benchmark report, and writes
``bench_results/go2_csr_ptfe_ft3000_confirm.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_ft3000_confirm.py``.
"""

import json
from pathlib import Path

from eval_arms import gain_verdict, progress_against_zero_shot, ratio_of_pooled_means
from go2_csr_ptfe_ft3000 import READ_AT_30, TASK, load_plain

DIR = Path("bench_results/go2_csr_ptfe_ft3000_confirm")
ADAPTED = ("adapted_seed3", "adapted_seed4", "adapted_seed5")
BENCH = Path("bench_results/adaptation_go2_csr_ptfe_ft3000_confirm.json")


def main() -> None:
    """Each adapted model against zero-shot on the same 60 episodes, pooled, the verdict, the benchmark beside."""
    reports = {name: load_plain(DIR / f"{name}_plain.json", 60) for name in ("zero_shot", *ADAPTED)}
    rows, diffs, zero = progress_against_zero_shot(reports, TASK)
    ratio = ratio_of_pooled_means(diffs, zero)
    verdict = gain_verdict(rows["pooled_minus_zero_shot"], ratio, "confirmed: the adaptation wins on PTFE",
                           "confirmed that it walks further, short of 1.5x", "walks less", "not confirmed")
    bench = json.loads(BENCH.read_text())
    if bench["config"]["finetune"]["steps"] != 3000 or sorted(bench["seeds"]) != [3, 4, 5]:
        raise SystemExit(f"{BENCH}: not the protocol's benchmark")
    at_30 = next(r for r in bench["summary"]["dynamics_only"]["by_minute"] if r["minutes"] == 30.0)
    out = {"protocol": "bench_results/GO2_CSR_PTFE_FT3000_CONFIRM.md", "seeds": [67000, 67059], **rows,
           "ratio_of_pooled_means": ratio, "verdict": verdict,
           "benchmark_at_30_min": {key: at_30[key] for key in READ_AT_30}}  # fmt: skip
    Path("bench_results/go2_csr_ptfe_ft3000_confirm.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
