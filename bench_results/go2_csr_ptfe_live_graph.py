"""Reading of ``GO2_CSR_PTFE_LIVE_GRAPH.md``: the live-schedule PTFE models through the free-running ROS graph.

Reads ``bench_results/parity_go2_csr_ptfe_live/<name>.json`` (this protocol's zero-shot and live-schedule runs) and
``bench_results/parity_go2_csr_ptfe/<name>.json`` (the earlier zero-shot and 3,000-update runs, same episodes), and
writes ``bench_results/go2_csr_ptfe_live_graph.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_live_graph.py``.
"""

import json
from pathlib import Path

from go2_csr_ptfe_graph import MODELS
from go2_csr_ptfe_graph_variant import SEEDS, read_graph_variant

LIVE = {"zero_shot": MODELS["zero_shot"],
        **{f"live_seed{k}": f"bench_results/go2_csr_ptfe_live_adapted_seed{k}" for k in SEEDS}}


def main() -> None:
    """The protocol's readings, printed and written."""
    out = read_graph_variant("live", LIVE, Path("bench_results/parity_go2_csr_ptfe_live"),
                             "bench_results/GO2_CSR_PTFE_LIVE_GRAPH.md",
                             ("the live schedule holds through the graph",
                              "walks further through the graph, short of 1.5x", "walks less through the graph",
                              "not shown through the graph"))  # fmt: skip
    Path("bench_results/go2_csr_ptfe_live_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
