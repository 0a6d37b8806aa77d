"""Reading of ``GO2_DRIVER_CLAMPS_SPLIT.md``: the raised Go2 driver clamps one at a time.

Reads ``bench_results/go2_driver_clamps_split/{flat,foam}_{step_wide,tracking_wide}.json`` and the reference
``bench_results/go2_driver_ramp/{flat,foam}_step.json``; writes ``bench_results/go2_driver_clamps_split.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_driver_clamps_split.py``.
"""

import json
from pathlib import Path

from go2_driver_clamps import read_arms

DIR = Path("bench_results/go2_driver_clamps_split")
ARMS = {"step_wide": {"target_max_step_rad": 0.25}, "tracking_wide": {"target_max_tracking_error_rad": 1.0}}


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    rows, below = read_arms(DIR, ARMS, ("flat", "foam"))
    out = {"protocol": "bench_results/GO2_DRIVER_CLAMPS_SPLIT.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {"step_limit_0.25_costs_distance": below["step_wide"],
                       "tracking_bound_1.0_costs_distance": below["tracking_wide"]}}
    Path("bench_results/go2_driver_clamps_split.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
