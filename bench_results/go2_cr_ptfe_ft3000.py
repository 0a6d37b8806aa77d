"""Reading of ``GO2_CR_PTFE_LONGER_FT.md``: the capped-recipe model's PTFE adaptation with 3,000 updates per round.

Reads the three 3,000-update models' runs on the 30 episodes of ``GO2_CR_PTFE_VALUE.md``
(``bench_results/go2_cr_ptfe_ft3000/``), that protocol's zero-shot and 300-update runs
(``bench_results/go2_cr_ptfe_value/``, terminal value on) and the two benchmark reports, and writes
``bench_results/go2_cr_ptfe_ft3000.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_cr_ptfe_ft3000.py``.
"""

import json
from pathlib import Path

from go2_csr_ptfe_ft3000 import SEEDS, load_plain, read_longer_finetune


def main() -> None:
    """The capped-recipe model on the 30 episodes of ``GO2_CR_PTFE_VALUE.md``."""
    value, new = Path("bench_results/go2_cr_ptfe_value"), Path("bench_results/go2_cr_ptfe_ft3000")
    out = {
        "protocol": "bench_results/GO2_CR_PTFE_LONGER_FT.md",
        "seeds": [65500, 65529],
        **read_longer_finetune(
            load_plain(value / "zero_shot_value_true.json", 30),
            [load_plain(value / f"adapted_seed{k}_value_true.json", 30) for k in SEEDS],
            [load_plain(new / f"adapted_seed{k}_value_true.json", 30) for k in SEEDS],
            "adaptation_go2_cr_ptfe_ft3000",
            "adaptation_go2_cr_ptfe_plain",
        ),
    }
    Path("bench_results/go2_cr_ptfe_ft3000.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
