"""Reading of ``GO2_CSR_PTFE_ANCHOR_CONFIRM.md``: the anchored PTFE models on 60 other new episodes.

Reads ``bench_results/go2_csr_ptfe_anchor_confirm/<name>_plain.json`` (zero-shot, the anchored and the unanchored
3,000-update models on seeds 90000-90059) and, for the reading on both episode sets, the same models' runs on seeds
67000-67059 (``go2_csr_ptfe_ft3000_confirm/``, ``go2_csr_ptfe_anchor/``); writes
``bench_results/go2_csr_ptfe_anchor_confirm.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_anchor_confirm.py``.
"""

import json
from pathlib import Path

from eval_arms import (
    early_falls,
    gain_verdict,
    pooled_ci,
    progress_against_zero_shot,
    ratio_of_pooled_means,
    rounded_difference,
)
from go2_csr_ptfe_ft3000 import TASK, load_plain
from go2_csr_ptfe_graph import CONFIRM
from simdist_core.eval.stats import episode_values

SEEDS = (3, 4, 5)
RUNS = Path("bench_results/go2_csr_ptfe_anchor_confirm")
FIRST = {"zero_shot": CONFIRM / "zero_shot_plain.json",
         **{f"adapted_seed{k}": CONFIRM / f"adapted_seed{k}_plain.json" for k in SEEDS},
         **{f"anchor_seed{k}": Path(f"bench_results/go2_csr_ptfe_anchor/adapted_seed{k}_plain.json") for k in SEEDS}}


def load(path: Path, first_seed: int | None) -> list[dict]:
    """A 60-episode plain-planner run's episodes; with ``first_seed``, checked to have run from that seed.

    ``simdist eval`` reports record their seed from 2026-12-07 on; the earlier runs (``FIRST``) do not.
    """
    report = load_plain(path, 60)
    if first_seed is not None and report.get("seed") != first_seed:
        raise SystemExit(f"{path}: not the protocol's episodes")
    return report["per_episode"]


def against_zero_shot(episodes: dict[str, list[dict]], arm: str, win: str | None = None) -> dict:
    """Reading 1 for ``arm`` (e.g. "anchor" or "adapted"): each model and the pooled gain, ratio and verdict.

    ``win``: the verdict's words for a win (default "anchor wins on PTFE" for "anchor", else "wins on PTFE").
    """
    models = {"zero_shot": {"per_episode": episodes["zero_shot"]},
              **{f"{arm}_seed{k}": {"per_episode": episodes[f"{arm}_seed{k}"]} for k in SEEDS}}
    rows, diffs, zero = progress_against_zero_shot(models, TASK)
    ratio = ratio_of_pooled_means(diffs, zero)
    win = win or ("anchor wins on PTFE" if arm == "anchor" else "wins on PTFE")
    verdict = gain_verdict(rows["pooled_minus_zero_shot"], ratio, win, "walks further, short of 1.5x", "walks less",
                           "not shown")  # fmt: skip
    return {**rows, "ratio_of_pooled_means": ratio, "verdict": verdict}


def main() -> None:
    """The protocol's readings, printed and written."""
    names = list(FIRST)
    here = {name: load(RUNS / f"{name}_plain.json", 90000) for name in names}
    first = {name: load(path, None) for name, path in FIRST.items()}
    both = {name: first[name] + here[name] for name in names}
    falls = {name: early_falls(episodes) for name, episodes in here.items()}
    start = rounded_difference([falls[f"anchor_seed{k}"] for k in SEEDS], [falls["zero_shot"]] * len(SEEDS))
    out = {
        "protocol": "bench_results/GO2_CSR_PTFE_ANCHOR_CONFIRM.md", "seeds": [90000, 90059],
        "anchor": against_zero_shot(here, "anchor"),
        "no_anchor": against_zero_shot(here, "adapted"),
        "anchor_minus_no_anchor": {
            "progress": rounded_difference([episode_values(here[f"anchor_seed{k}"], TASK) for k in SEEDS],
                                           [episode_values(here[f"adapted_seed{k}"], TASK) for k in SEEDS]),
            "early_fall_share": rounded_difference([falls[f"anchor_seed{k}"] for k in SEEDS],
                                                   [falls[f"adapted_seed{k}"] for k in SEEDS])},
        "early_fall_share_anchor_minus_zero_shot": start,
        "start_harm": "gone" if start["ci95"][0] <= 0 else "still there",
        "fall_free_share": {arm: pooled_ci([[1.0 - float(bool(e["fell"])) for e in here[name]] for name in group])
                            for arm, group in (("zero_shot", ["zero_shot"]),
                                               ("anchor", [f"anchor_seed{k}" for k in SEEDS]),
                                               ("no_anchor", [f"adapted_seed{k}" for k in SEEDS]))},
        # beside, no verdict (the protocol's reading 4): the verdicts are those of the new episodes alone
        "both_episode_sets": {"episodes_per_model": 120,
                              **{key: {k: v for k, v in against_zero_shot(both, arm).items() if k != "verdict"}
                                 for key, arm in (("anchor", "anchor"), ("no_anchor", "adapted"))}},
    }  # fmt: skip
    Path("bench_results/go2_csr_ptfe_anchor_confirm.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
