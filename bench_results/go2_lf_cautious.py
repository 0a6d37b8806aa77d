"""Reading of ``GO2_LF_CAUTIOUS_START.md``: the prior relabelled by an expert with one start, against the model before.

Reads ``bench_results/go2_lf_cautious/cautious_hold_*.json`` (the relabelled model) and the model before it on the
same seeds (``bench_results/go2_lf_slope/lf_hold_*.json``); writes ``bench_results/go2_lf_cautious.json``. Run from
the repository root: ``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_lf_cautious.py``.
"""

import json
from pathlib import Path

from go2_lf_lowgrip import read_arms


def main() -> None:
    """Every reading of stage 3, and its verdicts."""
    rows = read_arms(Path("bench_results/go2_lf_cautious"), "cautious_hold_")
    mu03, ptfe = rows["ptfe_mu0.3"], rows["ptfe_slope"]
    out = {"protocol": "bench_results/GO2_LF_CAUTIOUS_START.md", "seeds": [65500, 65529], "arms": rows,
           "verdict": {
               "one_start_lets_it_start_on_ptfe":
                   ptfe["minus_model_before"]["ci95"][0] > 0 and ptfe["fell_within_2s"] < 15,
               "one_start_fixes_low_grip_inside_the_range":
                   mu03["minus_model_before"]["ci95"][0] > 0 and mu03["falls"] <= 9}}
    Path("bench_results/go2_lf_cautious.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
