"""Reading of ``GO2_CSR_PTFE_ANCHOR_GRAPH.md``: the anchored PTFE models through the free-running ROS graph.

Reads ``bench_results/parity_go2_csr_ptfe_anchor/<name>.json`` (this protocol's zero-shot and anchored runs) and
``bench_results/parity_go2_csr_ptfe/<name>.json`` (the earlier zero-shot and 3,000-update runs, same episodes), and
writes ``bench_results/go2_csr_ptfe_anchor_graph.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_anchor_graph.py``.
"""

import json
from pathlib import Path

from go2_csr_ptfe_graph import MODELS
from go2_csr_ptfe_graph_variant import SEEDS, read_graph_variant

ANCHOR = {"zero_shot": MODELS["zero_shot"],
          **{f"anchor_seed{k}": f"bench_results/go2_csr_ptfe_anchor_adapted_seed{k}" for k in SEEDS}}


def main() -> None:
    """The protocol's readings, printed and written."""
    out = read_graph_variant("anchor", ANCHOR, Path("bench_results/parity_go2_csr_ptfe_anchor"),
                             "bench_results/GO2_CSR_PTFE_ANCHOR_GRAPH.md",
                             ("the anchor holds through the graph", "walks further through the graph, short of 1.5x",
                              "walks less through the graph", "not shown through the graph"))  # fmt: skip
    Path("bench_results/go2_csr_ptfe_anchor_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
