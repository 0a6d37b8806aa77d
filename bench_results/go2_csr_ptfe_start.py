"""Where the PTFE adaptation's gain and loss come from: the start from rest against the gait once walking.

Exploratory, written after seeing the committed runs' falls within 2 s (``fell_within_2s`` in
``go2_csr_ptfe_graph_samples.json``: 7-14 of 60 zero-shot, 28-34 adapted, on every measurement path); no run is made
for it and no protocol fixed it beforehand. It splits each committed 60-episode reading of the PTFE models (zero-shot
``go2_csr_dagger2_pretrained`` and the three 3,000-update models, seeds 67000-67059) into the episodes that fell
within 2 s of the standing start and those that did not, on each measurement path:

* ``simdist eval`` at 32 samples (``go2_csr_ptfe_ft3000_confirm/<name>_plain.json``);
* ``simdist eval`` at 18 samples (``go2_csr_ptfe_samples18/<name>.json``);
* the parity run's in-process side and its free-running graph (``parity_go2_csr_ptfe/<name>.json``);
* the lockstep graph (``parity_go2_csr_ptfe_lockstep/<name>.json``).

For each: falls within 2 s, zero-shot and pooled adapted, and their paired difference (share of episodes); the
paired progress difference on the episodes where both models were still up at 2 s (the gait once started). Writes
``bench_results/go2_csr_ptfe_start.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_start.py``.
"""

import json
from pathlib import Path

from eval_arms import early_falls, rounded_difference
from go2_csr_ptfe_ft3000 import TASK, load_plain
from go2_csr_ptfe_graph import CONFIRM, MODELS, load_parity
from go2_csr_ptfe_graph_samples import LOCKSTEP, load_18
from simdist_core.eval.stats import episode_values

START_S = 2.0
"""An episode that fell within this long of the standing start failed to start the gait."""
ADAPTED = [name for name in MODELS if name != "zero_shot"]


def split(episodes: dict[str, list[dict]]) -> dict:
    """One measurement path: the start (falls within 2 s) and the gait (progress of episodes up at 2 s)."""
    zero_falls = early_falls(episodes["zero_shot"], START_S)
    zero_progress = episode_values(episodes["zero_shot"], TASK)
    both_up_adapted, both_up_zero = [], []
    for name in ADAPTED:
        falls = early_falls(episodes[name], START_S)
        progress = episode_values(episodes[name], TASK)
        up = [i for i in range(len(falls)) if not falls[i] and not zero_falls[i]]
        both_up_adapted.append([progress[i] for i in up])
        both_up_zero.append([zero_progress[i] for i in up])
    adapted_falls = [early_falls(episodes[name], START_S) for name in ADAPTED]
    return {
        "fell_within_2s": {"zero_shot": int(sum(zero_falls)),
                           **{name: int(sum(f)) for name, f in zip(ADAPTED, adapted_falls, strict=True)}},
        "early_fall_share_adapted_minus_zero_shot": rounded_difference(adapted_falls, [zero_falls] * len(ADAPTED)),
        "episodes_both_up_at_2s": [len(v) for v in both_up_adapted],
        "progress_both_up_adapted_minus_zero_shot": rounded_difference(both_up_adapted, both_up_zero),
        "progress_all_adapted_minus_zero_shot": rounded_difference(
            [episode_values(episodes[name], TASK) for name in ADAPTED], [zero_progress] * len(ADAPTED)),
    }


def main() -> None:
    """Every path's split, printed and written."""
    parity = {name: load_parity(name) for name in MODELS}
    lockstep = {name: load_parity(name, LOCKSTEP, lockstep=True) for name in MODELS}
    confirm = {name: load_plain(CONFIRM / f"{name}_plain.json", 60) for name in MODELS}
    paths = {
        "simdist_eval_32_samples": {name: report["per_episode"] for name, report in confirm.items()},
        "simdist_eval_18_samples": {name: load_18(name)["per_episode"] for name in MODELS},
        "parity_in_process_side": {name: row["in_process"]["per_episode"] for name, row in parity.items()},
        "graph_lockstep": {name: row["graph"]["per_episode"] for name, row in lockstep.items()},
        "graph_free_running": {name: row["graph"]["per_episode"] for name, row in parity.items()},
    }
    out = {"exploratory": "written after seeing the falls within 2 s; no protocol", "start_s": START_S,
           "paths": {path: split(episodes) for path, episodes in paths.items()}}
    for path, row in out["paths"].items():
        print(f"{path:<26} early falls {row['fell_within_2s']}  share diff "
              f"{row['early_fall_share_adapted_minus_zero_shot']}  both up {row['episodes_both_up_at_2s']}: "
              f"{row['progress_both_up_adapted_minus_zero_shot']}  all {row['progress_all_adapted_minus_zero_shot']}")
    Path("bench_results/go2_csr_ptfe_start.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
