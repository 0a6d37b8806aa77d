"""Reading of ``GO2_CSR_PTFE_FT3000_FULL.md``: full finetuning against dynamics-only, 3,000 updates per round.

Reads ``bench_results/go2_csr_ptfe_ft3000_confirm/{zero_shot,adapted_seedK,full_seedK}_plain.json`` and the merged
full-finetune benchmark, and writes ``bench_results/go2_csr_ptfe_ft3000_full.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_ft3000_full.py``.
"""

import json
from pathlib import Path

from eval_arms import falls_within_2s, minus, rounded_difference
from go2_csr_ptfe_ft3000 import READ_AT_30, TASK, load_plain
from simdist_core.eval.stats import episode_summary, episode_values

DIR = Path("bench_results/go2_csr_ptfe_ft3000_confirm")
SEEDS = (3, 4, 5)
BENCH = Path("bench_results/adaptation_go2_csr_ptfe_ft3000_full.json")
MARGIN_M = 0.1
"""Dynamics-only is "not worse" if its pooled difference to full finetuning has a lower end above -MARGIN_M."""


def main() -> None:
    """Per seed and pooled: dynamics-only minus full finetuning, full finetuning minus zero-shot; the verdict."""
    zero = load_plain(DIR / "zero_shot_plain.json", 60)
    zero_values = episode_values(zero["per_episode"], TASK)
    rows, dyn_minus_full, full_minus_zero = {}, [], []
    for k in SEEDS:
        full = load_plain(DIR / f"full_seed{k}_plain.json", 60)
        dyn = episode_values(load_plain(DIR / f"adapted_seed{k}_plain.json", 60)["per_episode"], TASK)
        full_values = episode_values(full["per_episode"], TASK)
        rows[f"full_seed{k}"] = {**episode_summary(full["per_episode"], TASK), "fell_within_2s": falls_within_2s(full),
                                 "dynamics_only_minus_full": rounded_difference([dyn], [full_values])}  # fmt: skip
        dyn_minus_full.append(minus(dyn, full_values))
        full_minus_zero.append(minus(full_values, zero_values))
    zeros = [[0.0] * len(zero_values)] * len(SEEDS)
    pooled = rounded_difference(dyn_minus_full, zeros)
    low, high = pooled["ci95"]
    if low > 0:
        verdict = "dynamics-only better"
    elif high < 0:
        verdict = "dynamics-only worse"
    else:
        verdict = "dynamics-only not worse than full finetuning" if low > -MARGIN_M else "not told apart"
    bench = json.loads(BENCH.read_text())
    if bench["config"]["finetune"]["steps"] != 3000 or sorted(bench["seeds"]) != list(SEEDS):
        raise SystemExit(f"{BENCH}: not the protocol's benchmark")
    at_30 = next(r for r in bench["summary"]["full_finetune"]["by_minute"] if r["minutes"] == 30.0)
    out = {"protocol": "bench_results/GO2_CSR_PTFE_FT3000_FULL.md", "seeds": [67000, 67059], **rows,
           "pooled_dynamics_only_minus_full": pooled,
           "pooled_full_minus_zero_shot": rounded_difference(full_minus_zero, zeros), "verdict": verdict,
           "benchmark_at_30_min": {key: at_30[key] for key in READ_AT_30 if key in at_30}}  # fmt: skip
    Path("bench_results/go2_csr_ptfe_ft3000_full.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
