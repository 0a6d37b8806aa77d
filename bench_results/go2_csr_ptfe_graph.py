"""Reading of ``GO2_CSR_PTFE_GRAPH.md``: the 3,000-update PTFE adaptation through the live ROS graph.

Reads the four parity reports ``bench_results/parity_go2_csr_ptfe/<name>.json`` (zero-shot and the three adapted
models, each in-process and through the graph on seeds 67000-67059) and the in-process confirmation's runs of the
same models on the same seeds (``bench_results/go2_csr_ptfe_ft3000_confirm/<name>_plain.json``), and writes
``bench_results/go2_csr_ptfe_graph.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_graph.py``.
"""

import json
from pathlib import Path

from eval_arms import gain_verdict, minus, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_ft3000 import TASK, load_plain
from simdist_core.eval.stats import episode_values

DIR = Path("bench_results/parity_go2_csr_ptfe")
CONFIRM = Path("bench_results/go2_csr_ptfe_ft3000_confirm")
MODELS = {"zero_shot": "bench_results/go2_csr_dagger2_pretrained",
          **{f"adapted_seed{k}": f"bench_results/go2_csr_ptfe_ft3000_adapted_seed{k}" for k in (3, 4, 5)}}
SETS = ["encoder.heading_hold=true", 'planner.planner_overrides=["prior_weight=0"]']
SEEDS = list(range(67000, 67060))


def load_parity(name: str, folder: Path = DIR, lockstep: bool = False, checkpoint: str | None = None,
                task: str = TASK, seed: int = 66999) -> dict:
    """One model's parity report (the protocol's task, model, seeds, settings), its task row.

    ``checkpoint``: the model the report must have run (default ``MODELS[name]``); ``task`` and ``seed`` (the
    ``--seed`` of the 60-episode run, episodes ``seed + 1`` onwards): the PTFE protocols' unless given.

    Raises:
        SystemExit: the report is not the protocol's run.
    """
    path = folder / f"{name}.json"
    report = json.loads(path.read_text())
    row = report["tasks"][0]
    episodes = list(range(seed + 1, seed + 61))
    if (report["checkpoint"] != (checkpoint or MODELS[name]) or report["episodes"] != 60 or report["seed"] != seed
            or report["lockstep"] != lockstep or report["rtf"] != 1.0 or report["set"] != SETS or row["task"] != task
            or row["graph"]["diagnostics_end"]["planner"]["prior_weight"] != "0"
            or any([e["seed"] for e in row[side]["per_episode"]] != episodes for side in ("in_process", "graph"))):
        raise SystemExit(f"{path}: not the protocol's run")
    return row


def main() -> None:
    """Each side's adaptation (adapted minus zero-shot, pooled), the gain's change between sides, the checks."""
    rows = {name: load_parity(name) for name in MODELS}
    out: dict = {"protocol": "bench_results/GO2_CSR_PTFE_GRAPH.md", "seeds": [SEEDS[0], SEEDS[-1]]}
    diffs = {}
    for side in ("graph", "in_process"):
        readings, diffs[side], zero = progress_against_zero_shot(
            {name: {"per_episode": row[side]["per_episode"]} for name, row in rows.items()}, TASK)
        ratio = ratio_of_pooled_means(diffs[side], zero)
        out[side] = {**readings, "ratio_of_pooled_means": ratio}
    out["verdict"] = gain_verdict(out["graph"]["pooled_minus_zero_shot"], out["graph"]["ratio_of_pooled_means"],
                                  "the PTFE adaptation holds through the graph",
                                  "walks further through the graph, short of 1.5x", "walks less through the graph",
                                  "not shown through the graph")
    out["graph_gain_minus_in_process_gain"] = rounded_difference(diffs["graph"], diffs["in_process"])
    out["per_model"] = {}
    for name, row in rows.items():
        graph = row["graph"]
        confirm = episode_values(load_plain(CONFIRM / f"{name}_plain.json", 60)["per_episode"], TASK)
        here = episode_values(row["in_process"]["per_episode"], TASK)
        out["per_model"][name] = {
            "graph_over_in_process": row.get("ratio"), "graph_over_in_process_ci95": row.get("ratio_ci95"),
            "graph_minus_in_process": rounded_difference([episode_values(graph["per_episode"], TASK)], [here]),
            "robot_steps_fresh_delay_0": graph["delay_zero_fraction"], "ticks_kept": graph["ticks_kept"],
            "achieved_rtf": graph["achieved_rtf"], "planner_tick_p50_ms": graph["planner_tick_p50_ms"],
            "in_process_vs_confirmation_max_abs_m": round(max(map(abs, minus(here, confirm))), 4)}
    Path("bench_results/go2_csr_ptfe_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
