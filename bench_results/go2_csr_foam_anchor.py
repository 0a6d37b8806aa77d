"""Reading of ``GO2_CSR_FOAM_ANCHOR.md``: foam adaptation of the PTFE model with the action-effect anchor.

Reads the merged report ``bench_results/adaptation_go2_csr_foam_anchor.json``, its per-seed reports and those of
the 3,000-update runs without the anchor (``adaptation_go2_csr_foam_ft3000_seedK.json``), and writes
``bench_results/go2_csr_foam_anchor.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_foam_anchor.py``.
"""

import json
from pathlib import Path

from eval_arms import rounded_difference
from go2_csr_foam import SEEDS, at_10, episodes_at_10, load


def main() -> None:
    """The anchored runs at 10 minutes against zero-shot, and against no anchor on the same episodes."""
    out = {"protocol": "bench_results/GO2_CSR_FOAM_ANCHOR.md",
           "anchor_3000": at_10(load(Path("bench_results/adaptation_go2_csr_foam_anchor.json"), 3000, 1.0))}
    zero = [[load(Path(f"bench_results/adaptation_go2_csr_foam_{name}_seed{k}.json"), 3000, weight)["results"]
             ["zero_shot"]["episode_metric"][0] for k in SEEDS] for name, weight in (("anchor", 1.0), ("ft3000", 0.0))]
    # The unanchored runs predate the benchmark's frozen pretrained model (last-bit differences), so the same
    # episode seeds need not give the same zero-shot episodes or the same experience: say so, pair on the seeds.
    out["zero_shot_same_as_unanchored_runs"] = zero[0] == zero[1]
    out["zero_shot_minus_unanchored_runs_zero_shot"] = rounded_difference(zero[0], zero[1])
    out["anchor_minus_no_anchor_at_10"] = rounded_difference(episodes_at_10(3000, "anchor", 1.0), episodes_at_10(3000))
    Path("bench_results/go2_csr_foam_anchor.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
