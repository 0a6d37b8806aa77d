"""Reading of ``GO2_CSR_PTFE_GRAPH_SAMPLES.md``: the PTFE adaptation in-process at 18 samples and in lockstep.

Reads ``bench_results/go2_csr_ptfe_samples18/<name>.json`` (``simdist eval`` at 18 samples),
``bench_results/parity_go2_csr_ptfe_lockstep/<name>.json`` (lockstep parity) and ``go2_csr_ptfe_graph.json``, and
writes ``bench_results/go2_csr_ptfe_graph_samples.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_graph_samples.py``.
"""

import json
from pathlib import Path

from eval_arms import progress_against_zero_shot, ratio_of_pooled_means
from go2_csr_ptfe_ft3000 import TASK, load_plain
from go2_csr_ptfe_graph import MODELS, SEEDS, load_parity

SAMPLES18 = Path("bench_results/go2_csr_ptfe_samples18")
LOCKSTEP = Path("bench_results/parity_go2_csr_ptfe_lockstep")


def load_18(name: str) -> dict:
    """One ``simdist eval`` report of the plain planner at 18 samples, checked.

    Raises:
        SystemExit: the report is not the protocol's run.
    """
    report = load_plain(SAMPLES18 / f"{name}.json", 60)
    if report["planner"]["num_samples"] != 18 or report["checkpoint"] != MODELS[name]:
        raise SystemExit(f"{SAMPLES18 / name}.json: not the protocol's run")
    return report


def adaptation(reports: dict[str, dict]) -> dict:
    """Each adapted model minus zero-shot, pooled, and the ratio of pooled means."""
    rows, diffs, zero = progress_against_zero_shot(reports, TASK)
    return {**rows, "ratio_of_pooled_means": ratio_of_pooled_means(diffs, zero)}


def below_zero(reading: dict) -> bool:
    """Whether the pooled adapted-minus-zero-shot interval lies below 0."""
    return reading["pooled_minus_zero_shot"]["ci95"][1] < 0


def main() -> None:
    """Both readings beside the free-running graph's and the in-process side's, and the protocol's attribution."""
    in_process_18 = adaptation({name: load_18(name) for name in MODELS})
    lock_rows = {name: load_parity(name, LOCKSTEP, lockstep=True) for name in MODELS}
    lockstep = adaptation({name: {"per_episode": row["graph"]["per_episode"]} for name, row in lock_rows.items()})
    lockstep["planner_samples_end"] = {name: row["graph"]["diagnostics_end"]["planner"]["num_samples"]
                                       for name, row in lock_rows.items()}  # fmt: skip
    lockstep_in_process = adaptation({name: {"per_episode": row["in_process"]["per_episode"]}
                                      for name, row in lock_rows.items()})  # fmt: skip
    free = json.loads(Path("bench_results/go2_csr_ptfe_graph.json").read_text())
    if below_zero(in_process_18) and not below_zero(lockstep):
        attribution = "the sample count turns it round"
    elif below_zero(lockstep) and not below_zero(in_process_18):
        attribution = "the graph's timing turns it round"
    else:
        attribution = "no attribution"
    out = {"protocol": "bench_results/GO2_CSR_PTFE_GRAPH_SAMPLES.md", "seeds": [SEEDS[0], SEEDS[-1]],
           "in_process_18_samples": in_process_18, "graph_lockstep": lockstep,
           "lockstep_reports_in_process_side": lockstep_in_process,
           "free_running_graph_pooled": free["graph"]["pooled_minus_zero_shot"],
           "in_process_32_samples_pooled": free["in_process"]["pooled_minus_zero_shot"],
           "attribution": attribution}  # fmt: skip
    Path("bench_results/go2_csr_ptfe_graph_samples.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
