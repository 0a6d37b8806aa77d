"""Graph reading of ``GO2_CSR_PTFE_START_ANCHOR.md``: the start-anchored PTFE models through the free-running graph.

Reads ``bench_results/parity_go2_csr_ptfe_start_anchor/<name>.json`` (this protocol's zero-shot and start-anchored
runs) and ``bench_results/parity_go2_csr_ptfe/<name>.json`` (the earlier zero-shot and 3,000-update runs, same
episodes), and writes ``bench_results/go2_csr_ptfe_start_anchor_graph.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_start_anchor_graph.py``.
"""

from go2_csr_ptfe_graph_variant import write_graph_variant

if __name__ == "__main__":
    write_graph_variant("start_anchor", "bench_results/GO2_CSR_PTFE_START_ANCHOR.md",
                        "the start anchor holds through the graph")  # fmt: skip
