"""Reading of ``GO2_CR_PTFE_LONGER_FT.md``: the capped-recipe model's PTFE adaptation with 3,000 updates per round.

Reads the three 3,000-update models' runs on the 30 episodes of ``GO2_CR_PTFE_VALUE.md``
(``bench_results/go2_cr_ptfe_ft3000/``), that protocol's zero-shot and 300-update runs
(``bench_results/go2_cr_ptfe_value/``, terminal value on) and the two benchmark reports, and writes
``bench_results/go2_cr_ptfe_ft3000.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_cr_ptfe_ft3000.py``.
"""

from pathlib import Path

from go2_csr_ptfe_ft3000 import SEEDS, write_reading


def main() -> None:
    """The capped-recipe model on the 30 episodes of ``GO2_CR_PTFE_VALUE.md``."""
    value, new = Path("bench_results/go2_cr_ptfe_value"), Path("bench_results/go2_cr_ptfe_ft3000")
    write_reading("go2_cr_ptfe_ft3000", "bench_results/GO2_CR_PTFE_LONGER_FT.md", [65500, 65529],
                  value / "zero_shot_value_true.json", [value / f"adapted_seed{k}_value_true.json" for k in SEEDS],
                  [new / f"adapted_seed{k}_value_true.json" for k in SEEDS],
                  ("adaptation_go2_cr_ptfe_ft3000", "adaptation_go2_cr_ptfe_plain"))  # fmt: skip


if __name__ == "__main__":
    main()
