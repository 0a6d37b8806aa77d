"""Reading of ``GO2_CAUTIOUS_REPLAY.md``: the capped expert's relabelling with replay of its own data.

Reads ``bench_results/go2_cautious_replay/replay_hold_*.json`` and pairs them on the same seeds with the low-friction
slope model (``bench_results/go2_lf_slope/lf_hold_*.json``) and the relabelled model without replay
(``bench_results/go2_lf_cautious/cautious_hold_*.json``); writes ``bench_results/go2_cautious_replay.json``. Run from
the repository root: ``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_cautious_replay.py``.
"""

import json
from pathlib import Path

from go2_lf_lowgrip import read_arms

DIR = Path("bench_results/go2_cautious_replay")


def main() -> None:
    """Every reading of stage 4, and its verdicts."""
    vs_lf = read_arms(DIR, "replay_hold_")
    vs_no_replay = read_arms(DIR, "replay_hold_", (Path("bench_results/go2_lf_cautious"), "cautious_hold_"))
    ptfe = vs_lf["ptfe_slope"]
    out = {"protocol": "bench_results/GO2_CAUTIOUS_REPLAY.md", "seeds": [65500, 65529],
           "against_go2_lf_dagger2": vs_lf, "against_no_replay": vs_no_replay,
           "verdict": {
               "with_replay_it_still_starts_on_ptfe":
                   ptfe["minus_model_before"]["ci95"][0] > 0 and ptfe["fell_within_2s"] < 15,
               "replay_gives_back_ordinary_ground":
                   all(vs_no_replay[t]["minus_model_before"]["ci95"][0] > 0 for t in ("flat", "slope"))}}
    Path("bench_results/go2_cautious_replay.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
