"""Reading of ``GO2_CSR_PTFE_START_ANCHOR.md``: the action-effect anchor on the standing start only.

Reads the start-anchored models' runs (``bench_results/go2_csr_ptfe_start_anchor/start_anchor_seedK_S.json``, S =
67000 and 90000), zero-shot's, the anchored and the unanchored models' runs on the same two sets of 60 episodes, and
the merged benchmark; writes ``bench_results/go2_csr_ptfe_start_anchor.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_start_anchor.py``.
"""

import json
from pathlib import Path

from eval_arms import early_falls, pooled_ci, rounded_difference
from go2_csr_ptfe_anchor_confirm import FIRST, RUNS, SEEDS, against_zero_shot, load
from go2_csr_ptfe_ft3000 import TASK
from go2_csr_ptfe_variant import checked_benchmark
from simdist_core.eval.stats import episode_values

START_S = 2.0
OWN = Path("bench_results/go2_csr_ptfe_start_anchor")
ARMS = {"zero_shot": ["zero_shot"], "start_anchor": [f"start_anchor_seed{k}" for k in SEEDS],
        "anchor": [f"anchor_seed{k}" for k in SEEDS], "no_anchor": [f"adapted_seed{k}" for k in SEEDS]}


def episode_sets() -> dict[str, dict[str, list[dict]]]:
    """Per episode set (67000, 90000), every model's 60 episodes."""
    first = {name: load(path, None) for name, path in FIRST.items()}
    second = {name: load(RUNS / f"{name}_plain.json", 90000) for name in FIRST}
    for k in SEEDS:
        first[f"start_anchor_seed{k}"] = load(OWN / f"start_anchor_seed{k}_67000.json", 67000)
        second[f"start_anchor_seed{k}"] = load(OWN / f"start_anchor_seed{k}_90000.json", 90000)
    return {"67000": first, "90000": second}


def late_falls(episodes: list[dict]) -> list[float]:
    """Per episode, 1.0 if it fell after the first 2 s (once walking), else 0.0."""
    return [float(bool(e["fell"]) and e["duration_s"] > START_S) for e in episodes]


def minus_arm(episodes: dict[str, list[dict]], other: str) -> dict:
    """Start-anchored minus ``other`` (paired by seed K): progress, falls within 2 s, falls after 2 s."""
    mine, theirs = ARMS["start_anchor"], ARMS[other]
    return {"progress": rounded_difference([episode_values(episodes[n], TASK) for n in mine],
                                           [episode_values(episodes[n], TASK) for n in theirs]),
            "early_fall_share": rounded_difference([early_falls(episodes[n]) for n in mine],
                                                   [early_falls(episodes[n]) for n in theirs]),
            "late_fall_share": rounded_difference([late_falls(episodes[n]) for n in mine],
                                                  [late_falls(episodes[n]) for n in theirs])}  # fmt: skip


def main() -> None:
    """The protocol's readings, printed and written."""
    sets = episode_sets()
    both = {name: sets["67000"][name] + sets["90000"][name] for name in sets["67000"]}
    bench = checked_benchmark(Path("bench_results/adaptation_go2_csr_ptfe_start_anchor.json"),
                              lambda ft: ft["steps"] == 3000 and ft["anchor_weight"] == 1.0
                              and ft["anchor_start_s"] == START_S and ft["replay_fraction"] == 0.0)  # fmt: skip
    against_anchor = minus_arm(both, "anchor")
    out = {
        "protocol": "bench_results/GO2_CSR_PTFE_START_ANCHOR.md", "episodes_per_model": 120,
        "start_anchor": against_zero_shot(both, "start_anchor", win="start anchor wins on PTFE"),
        "start_anchor_minus_anchor": against_anchor,
        "start_window_verdict": ("the start window adds to the anchor" if against_anchor["progress"]["ci95"][0] > 0
                                 else "no better than the anchor everywhere"),
        "start_anchor_minus_no_anchor": minus_arm(both, "no_anchor"),
        "fall_free_share": {arm: pooled_ci([[1.0 - float(bool(e["fell"])) for e in both[n]] for n in names])
                            for arm, names in ARMS.items()},
        "early_fall_share": {arm: pooled_ci([early_falls(both[n]) for n in names]) for arm, names in ARMS.items()},
        "late_fall_share": {arm: pooled_ci([late_falls(both[n]) for n in names]) for arm, names in ARMS.items()},
        "each_set_alone": {s: {k: v for k, v in against_zero_shot(eps, "start_anchor").items() if k != "verdict"}
                           for s, eps in sets.items()},
        "benchmark": bench,
    }  # fmt: skip
    Path("bench_results/go2_csr_ptfe_start_anchor.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
