"""What PTFE progress is made of: the share of episodes that never fall, and how far those and the others walk.

Exploratory, written after the anchored runs (no protocol fixed it, no run is made for it). On every committed
60-episode reading of the PTFE models on seeds 67000-67059 (zero-shot ``go2_csr_dagger2_pretrained``, the 3,000-update
models, the anchored models, the live-schedule models), ``simdist eval`` in-process and the free-running graph, it
splits the episodes into those that walked the whole 10 s and those that fell, with when they fell. Mean progress is
the fall-free share times their progress plus the fallen share times theirs; if fall-free episodes walk about the
same in every arm, a ratio to zero-shot is set by the fall-free share alone. Writes
``bench_results/go2_csr_ptfe_survival.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_survival.py``.
"""

import itertools
import json
from pathlib import Path

from eval_arms import pooled_ci
from go2_csr_ptfe_ft3000 import TASK, load_plain
from go2_csr_ptfe_graph import CONFIRM, MODELS, load_parity
from go2_csr_ptfe_graph_variant import checkpoints_of
from simdist_core.eval.stats import episode_values

FALL_BINS_S = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 10.0)
"""Edges of the fall-time histogram (s since the standing start; an episode lasts 10 s)."""


def arms() -> dict[str, dict[str, list[list[dict]]]]:
    """Per arm and path, each model's 60 episodes (the arm's three models, or zero-shot alone)."""
    anchor = checkpoints_of("anchor")
    live = checkpoints_of("live")
    graph = {
        "zero_shot": [load_parity("zero_shot")],
        "3000_updates": [load_parity(f"adapted_seed{k}") for k in (3, 4, 5)],
        "anchor": [load_parity(f"anchor_seed{k}", Path("bench_results/parity_go2_csr_ptfe_anchor"),
                               checkpoint=anchor[f"anchor_seed{k}"]) for k in (3, 4, 5)],
        "live_schedule": [load_parity(f"live_seed{k}", Path("bench_results/parity_go2_csr_ptfe_live"),
                                      checkpoint=live[f"live_seed{k}"]) for k in (3, 4, 5)],
    }  # fmt: skip
    in_process = {
        "zero_shot": [load_plain(CONFIRM / "zero_shot_plain.json", 60)],
        "3000_updates": [load_plain(CONFIRM / f"adapted_seed{k}_plain.json", 60) for k in (3, 4, 5)],
        "anchor": [load_plain(Path(f"bench_results/go2_csr_ptfe_anchor/adapted_seed{k}_plain.json"), 60)
                   for k in (3, 4, 5)],
    }  # fmt: skip
    return {
        "simdist_eval": {arm: [r["per_episode"] for r in reports] for arm, reports in in_process.items()},
        "graph_free_running": {arm: [r["graph"]["per_episode"] for r in rows] for arm, rows in graph.items()},
    }


def mean(values: list[float]) -> float | None:
    """Rounded mean, or None for no values."""
    return round(sum(values) / len(values), 3) if values else None


def survival(models: list[list[dict]]) -> dict:
    """One arm's fall-free share (with its interval over models and episodes) and what each part walks."""
    fall_free = [[1.0 - float(bool(e["fell"])) for e in episodes] for episodes in models]
    flat = [e for episodes in models for e in episodes]
    progress = episode_values(flat, TASK)
    up = [p for p, e in zip(progress, flat, strict=True) if not e["fell"]]
    down = [p for p, e in zip(progress, flat, strict=True) if e["fell"]]
    times = [e["duration_s"] for e in flat if e["fell"]]
    histogram = {f"{low:g}-{high:g}s": round(sum(low < t <= high for t in times) / len(flat), 3)
                 for low, high in itertools.pairwise(FALL_BINS_S)}  # fmt: skip
    return {"episodes": len(flat), "fall_free_share": pooled_ci(fall_free), "progress_mean_m": mean(progress),
            "progress_fall_free_m": mean(up), "progress_fallen_m": mean(down), "fall_time_share": histogram}


def main() -> None:
    """Every arm on every path, printed and written."""
    out: dict = {"exploratory": "written after the anchored runs; no protocol", "seeds": [67000, 67059],
                 "models": {"zero_shot": MODELS["zero_shot"], "3000_updates": "go2_csr_ptfe_ft3000_adapted_seed{3,4,5}",
                            "anchor": "go2_csr_ptfe_anchor_adapted_seed{3,4,5}",
                            "live_schedule": "go2_csr_ptfe_live_adapted_seed{3,4,5}"}, "paths": {}}  # fmt: skip
    for path, by_arm in arms().items():
        out["paths"][path] = {arm: survival(models) for arm, models in by_arm.items()}
        for arm, row in out["paths"][path].items():
            print(f"{path:<19} {arm:<14} fall-free {row['fall_free_share']}  progress {row['progress_mean_m']} "
                  f"(fall-free {row['progress_fall_free_m']}, fallen {row['progress_fallen_m']})  "
                  f"falls by time {row['fall_time_share']}")
    Path("bench_results/go2_csr_ptfe_survival.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
