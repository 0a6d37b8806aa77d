"""Shared reading of a variant's PTFE models through the free-running ROS graph, beside a zero-shot rerun.

Used by the readers of ``GO2_CSR_PTFE_LIVE_GRAPH.md`` (the live finetuner's schedule) and
``GO2_CSR_PTFE_ANCHOR_GRAPH.md`` (the action-effect anchor): a zero-shot run of the same session and the variant's
three models, each in-process and through the graph on seeds 67000-67059 (``simdist bench parity``), against
that zero-shot, against the earlier zero-shot graph run and against the 3,000-update models through the graph
(``bench_results/parity_go2_csr_ptfe/``).
"""

import json
from pathlib import Path

from eval_arms import gain_verdict, minus, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_ft3000 import TASK
from go2_csr_ptfe_graph import MODELS, load_parity
from simdist_core.eval.stats import episode_values

SEEDS = (3, 4, 5)


def checkpoints_of(name: str) -> dict[str, str]:
    """Zero-shot and the variant's three final models (``bench_results/go2_csr_ptfe_<name>_adapted_seedK``)."""
    return {"zero_shot": MODELS["zero_shot"],
            **{f"{name}_seed{k}": f"bench_results/go2_csr_ptfe_{name}_adapted_seed{k}" for k in SEEDS}}


def write_graph_variant(name: str, protocol: str, holds: str) -> None:
    """Read the variant ``name`` and write (and print) ``bench_results/go2_csr_ptfe_<name>_graph.json``.

    Its runs are in ``bench_results/parity_go2_csr_ptfe_<name>/``; ``holds`` is the verdict when it wins through
    the graph.
    """
    verdicts = (holds, "walks further through the graph, short of 1.5x", "walks less through the graph",
                "not shown through the graph")
    out = read_graph_variant(name, protocol, verdicts)
    Path(f"bench_results/go2_csr_ptfe_{name}_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


def graph_values(row: dict) -> list[float]:
    """The graph side's per-episode progress."""
    return episode_values(row["graph"]["per_episode"], TASK)


def read_graph_variant(name: str, protocol: str, verdicts: tuple[str, str, str, str]) -> dict:
    """The readings for the variant ``name``: models :func:`checkpoints_of`, runs in its parity folder.

    The folder is ``bench_results/parity_go2_csr_ptfe_<name>/``; ``verdicts``: (wins, walks further short of
    1.5x, walks less, not shown) through the graph.
    """
    folder = Path(f"bench_results/parity_go2_csr_ptfe_{name}")
    runs = {model: load_parity(model, folder, checkpoint=path) for model, path in checkpoints_of(name).items()}
    earlier = {model: load_parity(model) for model in MODELS}
    out: dict = {"protocol": protocol, "seeds": [67000, 67059]}
    for side in ("graph", "in_process"):
        rows, diffs, zero = progress_against_zero_shot(
            {model: {"per_episode": row[side]["per_episode"]} for model, row in runs.items()}, TASK)
        out[side] = {**rows, "ratio_of_pooled_means": ratio_of_pooled_means(diffs, zero)}
    out["verdict"] = gain_verdict(out["graph"]["pooled_minus_zero_shot"], out["graph"]["ratio_of_pooled_means"],
                                  *verdicts)  # fmt: skip
    variant_graph = [graph_values(runs[f"{name}_seed{k}"]) for k in SEEDS]
    earlier_zero = graph_values(earlier["zero_shot"])
    against_earlier = [minus(v, earlier_zero) for v in variant_graph]
    out["against_earlier_zero_shot_graph"] = {
        "pooled_minus_zero_shot": rounded_difference(against_earlier, [[0.0] * len(earlier_zero)] * len(SEEDS)),
        "ratio_of_pooled_means": ratio_of_pooled_means(against_earlier, earlier_zero)}
    out["zero_shot_graph_this_minus_earlier"] = rounded_difference([graph_values(runs["zero_shot"])], [earlier_zero])
    out[f"{name}_minus_3000_updates_graph"] = rounded_difference(
        variant_graph, [graph_values(earlier[f"adapted_seed{k}"]) for k in SEEDS])
    out["per_model"] = {model: {"robot_steps_fresh_delay_0": row["graph"]["delay_zero_fraction"],
                                "ticks_kept": row["graph"]["ticks_kept"], "achieved_rtf": row["graph"]["achieved_rtf"],
                                "planner_samples_end": row["graph"]["diagnostics_end"]["planner"]["num_samples"]}
                        for model, row in runs.items()}  # fmt: skip
    return out
