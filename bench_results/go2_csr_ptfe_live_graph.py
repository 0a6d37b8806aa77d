"""Reading of ``GO2_CSR_PTFE_LIVE_GRAPH.md``: the live-schedule PTFE models through the free-running ROS graph.

Reads ``bench_results/parity_go2_csr_ptfe_live/<name>.json`` (this protocol's zero-shot and live-schedule runs) and
``bench_results/parity_go2_csr_ptfe/<name>.json`` (the earlier zero-shot and 3,000-update runs, same episodes), and
writes ``bench_results/go2_csr_ptfe_live_graph.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_live_graph.py``.
"""

from go2_csr_ptfe_graph_variant import write_graph_variant

if __name__ == "__main__":
    write_graph_variant("live", "bench_results/GO2_CSR_PTFE_LIVE_GRAPH.md", "the live schedule holds through the graph")
