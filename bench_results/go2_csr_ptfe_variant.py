"""Shared reading of a variant of the PTFE 3,000-update finetune on the confirmation's 60 episodes.

Used by the readers of ``GO2_CSR_PTFE_REPLAY.md`` (simulation data replayed) and ``GO2_CSR_PTFE_ANCHOR.md`` (an
action-effect anchor): each variant's three final models against zero-shot and against the 3,000-update models of
the same seeds without the variant (``bench_results/go2_csr_ptfe_ft3000_confirm/``), plus its merged benchmark.
"""

import json
from collections.abc import Callable
from pathlib import Path

from eval_arms import early_falls, gain_verdict, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_ft3000 import TASK, dynamics_only_at, load_plain
from go2_csr_ptfe_graph import CONFIRM
from simdist_core.eval.stats import episode_values

SEEDS = (3, 4, 5)


def checked_benchmark(path: Path, is_protocols: Callable[[dict], bool]) -> dict:
    """The merged benchmark at 10 and 30 minutes, after ``is_protocols(finetune config)`` and the seeds check out."""
    bench = json.loads(path.read_text())
    if not is_protocols(bench["config"]["finetune"]) or sorted(bench["seeds"]) != list(SEEDS):
        raise SystemExit(f"{path}: not the protocol's benchmark")
    return dynamics_only_at(bench)


def read_variant(name: str, runs: Path, benchmark: dict, protocol: str, win: str) -> dict:
    """The protocol's four readings for the variant ``name`` (its runs ``runs/adapted_seedK_plain.json``).

    Keys name the variant (``<name>_seedK``, ``<name>_minus_no_<name>``) so that each reader's output keeps its
    own words; ``win`` is the verdict when the pooled gain clears 0 with a ratio of at least 1.5.
    """
    variant = {f"{name}_seed{k}": load_plain(runs / f"adapted_seed{k}_plain.json", 60) for k in SEEDS}
    plain = {k: load_plain(CONFIRM / f"adapted_seed{k}_plain.json", 60) for k in SEEDS}
    zero = load_plain(CONFIRM / "zero_shot_plain.json", 60)
    rows, diffs, zero_values = progress_against_zero_shot({"zero_shot": zero, **variant}, TASK)
    ratio = ratio_of_pooled_means(diffs, zero_values)
    falls = [early_falls(variant[f"{name}_seed{k}"]["per_episode"]) for k in SEEDS]
    share = rounded_difference(falls, [early_falls(zero["per_episode"])] * len(SEEDS))
    return {
        "protocol": protocol, "seeds": [67000, 67059], **rows,
        "ratio_of_pooled_means": ratio,
        "verdict": gain_verdict(rows["pooled_minus_zero_shot"], ratio, win, "walks further, short of 1.5x",
                                "walks less", "not shown"),
        "early_fall_share_minus_zero_shot": share,
        "start_harm": "gone" if share["ci95"][0] <= 0 else "still there",
        f"{name}_minus_no_{name}": {
            "progress": rounded_difference(
                [episode_values(variant[f"{name}_seed{k}"]["per_episode"], TASK) for k in SEEDS],
                [episode_values(plain[k]["per_episode"], TASK) for k in SEEDS]),
            "early_fall_share": rounded_difference(falls, [early_falls(plain[k]["per_episode"]) for k in SEEDS]),
        },
        "benchmark": benchmark,
    }  # fmt: skip
