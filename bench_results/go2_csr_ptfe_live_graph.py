"""Reading of ``GO2_CSR_PTFE_LIVE_GRAPH.md``: the live-schedule PTFE models through the free-running ROS graph.

Reads ``bench_results/parity_go2_csr_ptfe_live/<name>.json`` (this protocol's zero-shot and live-schedule runs) and
``bench_results/parity_go2_csr_ptfe/<name>.json`` (the earlier zero-shot and 3,000-update runs, same episodes), and
writes ``bench_results/go2_csr_ptfe_live_graph.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_live_graph.py``.
"""

import json
from pathlib import Path

from eval_arms import gain_verdict, minus, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_ft3000 import TASK
from go2_csr_ptfe_graph import MODELS, load_parity
from simdist_core.eval.stats import episode_values

DIR = Path("bench_results/parity_go2_csr_ptfe_live")
SEEDS = (3, 4, 5)
LIVE = {"zero_shot": MODELS["zero_shot"],
        **{f"live_seed{k}": f"bench_results/go2_csr_ptfe_live_adapted_seed{k}" for k in SEEDS}}


def graph_values(row: dict) -> list[float]:
    """The graph side's per-episode progress."""
    return episode_values(row["graph"]["per_episode"], TASK)


def main() -> None:
    """The protocol's readings, printed and written."""
    live = {name: load_parity(name, DIR, checkpoint=path) for name, path in LIVE.items()}  # the earlier settings
    earlier = {name: load_parity(name) for name in MODELS}
    out: dict = {"protocol": "bench_results/GO2_CSR_PTFE_LIVE_GRAPH.md", "seeds": [67000, 67059]}
    for side in ("graph", "in_process"):
        rows, diffs, zero = progress_against_zero_shot(
            {name: {"per_episode": row[side]["per_episode"]} for name, row in live.items()}, TASK)
        out[side] = {**rows, "ratio_of_pooled_means": ratio_of_pooled_means(diffs, zero)}
    out["verdict"] = gain_verdict(out["graph"]["pooled_minus_zero_shot"], out["graph"]["ratio_of_pooled_means"],
                                  "the live schedule holds through the graph",
                                  "walks further through the graph, short of 1.5x", "walks less through the graph",
                                  "not shown through the graph")
    live_graph = [graph_values(live[f"live_seed{k}"]) for k in SEEDS]
    earlier_zero = graph_values(earlier["zero_shot"])
    against_earlier = [minus(v, earlier_zero) for v in live_graph]
    out["against_earlier_zero_shot_graph"] = {
        "pooled_minus_zero_shot": rounded_difference(against_earlier, [[0.0] * len(earlier_zero)] * len(SEEDS)),
        "ratio_of_pooled_means": ratio_of_pooled_means(against_earlier, earlier_zero)}
    out["zero_shot_graph_this_minus_earlier"] = rounded_difference([graph_values(live["zero_shot"])], [earlier_zero])
    out["live_minus_3000_updates_graph"] = rounded_difference(
        live_graph, [graph_values(earlier[f"adapted_seed{k}"]) for k in SEEDS])
    out["per_model"] = {name: {"robot_steps_fresh_delay_0": row["graph"]["delay_zero_fraction"],
                               "ticks_kept": row["graph"]["ticks_kept"], "achieved_rtf": row["graph"]["achieved_rtf"],
                               "planner_samples_end": row["graph"]["diagnostics_end"]["planner"]["num_samples"]}
                        for name, row in live.items()}  # fmt: skip
    Path("bench_results/go2_csr_ptfe_live_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
