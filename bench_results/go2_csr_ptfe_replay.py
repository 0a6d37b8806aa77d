"""Reading of ``GO2_CSR_PTFE_REPLAY.md``: PTFE adaptation with simulation data replayed, on the 60 episodes.

Reads the three replay models' runs (``bench_results/go2_csr_ptfe_replay/adapted_seedK_plain.json``), zero-shot's
and the 3,000-update models' runs without replay on the same episodes
(``bench_results/go2_csr_ptfe_ft3000_confirm/``) and the merged benchmark, and writes
``bench_results/go2_csr_ptfe_replay.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_replay.py``.
"""

import json
from pathlib import Path

from go2_csr_ptfe_variant import checked_benchmark, read_variant


def main() -> None:
    """The protocol's four readings, printed and written."""
    bench = checked_benchmark(Path("bench_results/adaptation_go2_csr_ptfe_replay.json"),
                              lambda ft: ft["steps"] == 3000 and ft["replay_fraction"] == 0.5)  # fmt: skip
    out = read_variant("replay", Path("bench_results/go2_csr_ptfe_replay"), bench,
                       "bench_results/GO2_CSR_PTFE_REPLAY.md", "replay wins on PTFE")  # fmt: skip
    Path("bench_results/go2_csr_ptfe_replay.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
