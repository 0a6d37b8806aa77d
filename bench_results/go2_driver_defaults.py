"""Reading of ``GO2_DRIVER_DEFAULTS.md``: the Go2 driver's new target defaults, emulated together.

Reads ``bench_results/go2_driver_defaults/{flat,foam}_defaults.json`` and the reference
``bench_results/go2_driver_ramp/{flat,foam}_step.json``; writes ``bench_results/go2_driver_defaults.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_driver_defaults.py``.
"""

import json
from pathlib import Path

from go2_driver_clamps import read_arms

DIR = Path("bench_results/go2_driver_defaults")
ARMS = {"defaults": {"target_max_step_rad": 1.0, "target_max_tracking_error_rad": 1.0}}


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    rows, below = read_arms(DIR, ARMS, ("flat", "foam"))
    out = {"protocol": "bench_results/GO2_DRIVER_DEFAULTS.md", "seeds": [65500, 65529], "terrains": rows,
           "verdict": {"defaults_cost_nothing_shown": not below["defaults"]}}
    Path("bench_results/go2_driver_defaults.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
