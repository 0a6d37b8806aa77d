"""Reading of ``GO2_CSR_PTFE_ANCHOR.md``: PTFE adaptation with an action-effect anchor, on the 60 episodes.

Reads the three anchored models' runs (``bench_results/go2_csr_ptfe_anchor/adapted_seedK_plain.json``), zero-shot's
and the 3,000-update models' runs without the anchor on the same episodes
(``bench_results/go2_csr_ptfe_ft3000_confirm/``) and the merged benchmark, and writes
``bench_results/go2_csr_ptfe_anchor.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_anchor.py``.
"""

import json
from pathlib import Path

from go2_csr_ptfe_variant import checked_benchmark, read_variant

CALIBRATION = Path("bench_results/go2_csr_ptfe_anchor_calibration.json")


def calibrated_weight() -> float:
    """The protocol's rule on the calibration: smallest of 1, 3, 10 with drift <= 0.25x unanchored, else 10."""
    rows = json.loads(CALIBRATION.read_text())["rows"]
    unanchored = rows["w0"]["action_effect_drift"]
    return next((w for w in (1.0, 3.0, 10.0) if rows[f"w{w:g}"]["action_effect_drift"] <= 0.25 * unanchored), 10.0)


def main() -> None:
    """The protocol's four readings, printed and written."""
    weight = calibrated_weight()
    bench = checked_benchmark(Path("bench_results/adaptation_go2_csr_ptfe_anchor.json"),
                              lambda ft: ft["steps"] == 3000 and ft["anchor_weight"] == weight
                              and ft["replay_fraction"] == 0.0)  # fmt: skip
    out = read_variant("anchor", Path("bench_results/go2_csr_ptfe_anchor"), bench,
                       "bench_results/GO2_CSR_PTFE_ANCHOR.md", "anchor wins on PTFE")  # fmt: skip
    Path("bench_results/go2_csr_ptfe_anchor.json").write_text(json.dumps({"anchor_weight": weight, **out}, indent=1)
                                                              + "\n")  # fmt: skip
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
