"""The UR5e's privileged expert with 0, 1 and 2 control steps of command latency and nothing else shifted.

What a pretraining dataset with ``shift.latency_steps_max=2`` (latency drawn per episode, protocol
``UR5E_LATENCY_RANDOMISED.md``) holds of good and failed insertions.

Run: ``python bench_results/expert_ur5e_latency.py --episodes 20 --json bench_results/expert_ur5e_latency.json``
"""

import argparse
import json
import time
from pathlib import Path

from simdist_core.experts.ur5e_expert import measure_expert


def main() -> None:
    """Measure the expert at each latency on each task and write one JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--tasks", default="peg,table_leg")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    out: dict = {"_meta": {"episodes_per_cell": args.episodes, "seeds": f"0-{args.episodes - 1}",
                           "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
    start = time.monotonic()
    for latency in (0, 1, 2):
        for task in args.tasks.split(","):
            key = f"{task}/latency{latency}"
            out[key] = {**measure_expert(f"ur5e/{task}", args.episodes, {"shift.latency_steps": str(latency)}),
                        "latency_steps": latency}
            print(f"{key}: success {out[key]['success_rate']:.2f}", flush=True)
    out["_meta"]["wall_s"] = round(time.monotonic() - start, 1)
    args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
