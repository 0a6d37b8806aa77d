"""Reading of ``GO2_CSR_FOAM_ANCHOR_GRAPH.md``: the anchored foam finetunes through the free-running ROS graph.

Reads ``bench_results/parity_go2_csr_foam_anchor/<name>.json`` (zero-shot and the three anchored models, each
in-process and through the graph on foam episodes 69000-69059) and writes
``bench_results/go2_csr_foam_anchor_graph.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_foam_anchor_graph.py``.
"""

import json
from pathlib import Path

from eval_arms import gain_verdict, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_graph import MODELS, load_parity
from simdist_core.eval.stats import episode_values

TASK = "go2/foam"
FOLDER = Path("bench_results/parity_go2_csr_foam_anchor")
CHECKPOINTS = {"zero_shot": MODELS["zero_shot"],
               **{f"anchor_seed{k}": f"bench_results/go2_csr_foam_anchor_adapted_seed{k}" for k in (0, 1, 2)}}


def side_verdict(reading: dict, where: str) -> str:
    """The protocol's words for one side's pooled gain (``where``: "through the graph" or "in-process")."""
    return gain_verdict(reading["pooled_minus_zero_shot"], reading["ratio_of_pooled_means"],
                        f"foam stays >= 1.5x {where}", f"walks further {where}, short of 1.5x",
                        f"walks less {where}", f"not shown {where}")


def command_ceiling(runs: dict[str, dict]) -> dict:
    """How far the ratio can go (added after the reading, no verdict): the command's metres against zero-shot's.

    Per side, the mean commanded metres of the anchored models' episodes (3 falls in 180 through the graph, so
    nearly all are full 10-s episodes) over zero-shot's mean progress: the ratio a model reaches by walking
    exactly what it is asked.
    """
    out = {}
    for side in ("graph", "in_process"):
        commanded = [e["commanded_m"] for name, row in runs.items() if name != "zero_shot"
                     for e in row[side]["per_episode"]]  # fmt: skip
        zero = episode_values(runs["zero_shot"][side]["per_episode"], TASK)
        out[side] = {"commanded_m": round(sum(commanded) / len(commanded), 3),
                     "ratio_at_the_command": round(sum(commanded) / len(commanded) / (sum(zero) / len(zero)), 3)}
    return out


def main() -> None:
    """Each side's gain over zero-shot and its verdict, the gain's change between sides, the graph's health."""
    runs = {name: load_parity(name, FOLDER, checkpoint=path, task=TASK, seed=68999)
            for name, path in CHECKPOINTS.items()}
    out: dict = {"protocol": "bench_results/GO2_CSR_FOAM_ANCHOR_GRAPH.md", "seeds": [69000, 69059]}
    diffs = {}
    for side, where in (("graph", "through the graph"), ("in_process", "in-process")):
        rows, diffs[side], zero = progress_against_zero_shot(
            {name: {"per_episode": row[side]["per_episode"]} for name, row in runs.items()}, TASK)
        out[side] = {**rows, "ratio_of_pooled_means": ratio_of_pooled_means(diffs[side], zero)}
        out[side]["verdict"] = side_verdict(out[side], where)
    out["verdict"] = out["graph"]["verdict"]
    out["graph_gain_minus_in_process_gain"] = rounded_difference(diffs["graph"], diffs["in_process"])
    out["per_model"] = {name: {"robot_steps_fresh_delay_0": row["graph"]["delay_zero_fraction"],
                               "ticks_kept": row["graph"]["ticks_kept"], "achieved_rtf": row["graph"]["achieved_rtf"],
                               "planner_samples_end": row["graph"]["diagnostics_end"]["planner"]["num_samples"]}
                        for name, row in runs.items()}  # fmt: skip
    out["command_ceiling_added_after_reading"] = command_ceiling(runs)
    Path("bench_results/go2_csr_foam_anchor_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
