"""Reading of ``GO2_CSR_PTFE_REPLAY.md``: PTFE adaptation with simulation data replayed, on the 60 episodes.

Reads the three replay models' runs (``bench_results/go2_csr_ptfe_replay/adapted_seedK_plain.json``), zero-shot's
and the 3,000-update models' runs without replay on the same episodes
(``bench_results/go2_csr_ptfe_ft3000_confirm/``) and the merged benchmark, and writes
``bench_results/go2_csr_ptfe_replay.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_replay.py``.
"""

import json
from pathlib import Path

from eval_arms import early_falls, gain_verdict, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_ft3000 import TASK, dynamics_only_at, load_plain
from go2_csr_ptfe_graph import CONFIRM
from simdist_core.eval.stats import episode_values

DIR = Path("bench_results/go2_csr_ptfe_replay")
BENCH = Path("bench_results/adaptation_go2_csr_ptfe_replay.json")
SEEDS = (3, 4, 5)


def benchmark() -> dict:
    """The merged benchmark at 10 and 30 minutes, checked against the protocol's settings."""
    bench = json.loads(BENCH.read_text())
    finetune = bench["config"]["finetune"]
    if finetune["steps"] != 3000 or finetune["replay_fraction"] != 0.5 or sorted(bench["seeds"]) != list(SEEDS):
        raise SystemExit(f"{BENCH}: not the protocol's benchmark")
    return dynamics_only_at(bench)


def main() -> None:
    """The protocol's four readings, printed and written."""
    replay = {f"replay_seed{k}": load_plain(DIR / f"adapted_seed{k}_plain.json", 60) for k in SEEDS}
    plain = {k: load_plain(CONFIRM / f"adapted_seed{k}_plain.json", 60) for k in SEEDS}
    zero = load_plain(CONFIRM / "zero_shot_plain.json", 60)
    rows, diffs, zero_values = progress_against_zero_shot({"zero_shot": zero, **replay}, TASK)
    ratio = ratio_of_pooled_means(diffs, zero_values)
    falls = [early_falls(replay[f"replay_seed{k}"]["per_episode"]) for k in SEEDS]
    share = rounded_difference(falls, [early_falls(zero["per_episode"])] * len(SEEDS))
    out = {
        "protocol": "bench_results/GO2_CSR_PTFE_REPLAY.md", "seeds": [67000, 67059], **rows,
        "ratio_of_pooled_means": ratio,
        "verdict": gain_verdict(rows["pooled_minus_zero_shot"], ratio, "replay wins on PTFE",
                                "walks further, short of 1.5x", "walks less", "not shown"),
        "early_fall_share_minus_zero_shot": share,
        "start_harm": "gone" if share["ci95"][0] <= 0 else "still there",
        "replay_minus_no_replay": {
            "progress": rounded_difference(
                [episode_values(replay[f"replay_seed{k}"]["per_episode"], TASK) for k in SEEDS],
                [episode_values(plain[k]["per_episode"], TASK) for k in SEEDS]),
            "early_fall_share": rounded_difference(falls, [early_falls(plain[k]["per_episode"]) for k in SEEDS]),
        },
        "benchmark": benchmark(),
    }
    Path("bench_results/go2_csr_ptfe_replay.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
