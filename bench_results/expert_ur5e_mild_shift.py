"""The UR5e's privileged expert on the candidate mild shifts of ``UR5E_MILD_SHIFT.md`` (peg and table leg).

Run: ``python bench_results/expert_ur5e_mild_shift.py --episodes 20 --json bench_results/expert_ur5e_mild_shift.json``
"""

import argparse
import json
import time
from pathlib import Path

from simdist_core.experts.ur5e_expert import measure_expert

CANDIDATES = ((1, 0.75, 3.0, 1.5), (1, 0.75, 2.0, 1.25), (0, 0.75, 3.0, 1.5))
"""(latency steps, servo gain scale, part mass scale, friction scale), in the protocol's order."""


def main() -> None:
    """Measure every candidate on every task and write one JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--tasks", default="peg,table_leg")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    out: dict = {"_meta": {"episodes_per_cell": args.episodes, "seeds": f"0-{args.episodes - 1}",
                           "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
    start = time.monotonic()
    for latency, servo, mass, friction in CANDIDATES:
        shift = {"shift.latency_steps": str(latency), "shift.servo_gain_scale": str(servo),
                 "shift.part_mass_scale": str(mass), "shift.friction_scale": str(friction)}
        for task in args.tasks.split(","):
            key = f"{task}/latency{latency}_servo{servo}_mass{mass}_friction{friction}"
            out[key] = {**measure_expert(f"ur5e/{task}", args.episodes, shift), "shift": shift}
            print(f"{key}: success {out[key]['success_rate']:.2f}", flush=True)
    out["_meta"]["wall_s"] = round(time.monotonic() - start, 1)
    args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
