#!/usr/bin/env python3
"""What does verifying a model update cost the control tick beside it: building a model vs loading into a spare?

The planner node verifies an announced checkpoint on a worker thread (sha256, safetensors, tensor names,
shapes and finiteness, part hashes, then the weights go into a model) while its control tick keeps planning.
Both share the GIL. This runs the two side by side in one process, without DDS: a loop that plans with the
checkpoint's MPPI planner back to back, and a thread that verifies the same checkpoint once per round,
alternating between

    build   ``load_checkpoint`` building a new ``WorldModel`` (what every swap did before)
    spare   ``load_checkpoint(..., into=spare)``, loading into a model built at start-up (what the swapper does)
    none    no verification (the loop alone, for reference)

and reports the verification's wall time and the latency of the ticks that ran while it did. The start-up heap
is frozen first, as in a node, so full garbage collections do not blur the comparison.

    python scripts/diagnostics/swap_verify.py --rounds 30 --json bench_results/swap_verify_go2.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import threading
import time
from pathlib import Path

import numpy as np
from _planner_setup import warm_planner
from simdist_core.checkpoint import ModelSlot, load_checkpoint, read_manifest
from simdist_core.models.world_model import WorldModel

CONDITIONS = ("build", "spare", "none")


def main() -> None:
    """Interleave the conditions round by round; print the table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/go2")
    p.add_argument("--task", default="go2/flat")
    p.add_argument("--rounds", type=int, default=30, help="verifications per condition")
    p.add_argument("--json", type=Path, help="write the result here")
    args = p.parse_args()

    model, _, planner, latent = warm_planner(args.checkpoint, args.task)
    spare = ModelSlot(WorldModel(model.spec, model.cfg).eval().requires_grad_(False))
    gc.collect()
    gc.freeze()

    def verify(condition: str) -> None:
        if condition != "none":
            load_checkpoint(args.checkpoint, manifest=read_manifest(args.checkpoint),
                            into=spare if condition == "spare" else None)

    verify_ms: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    tick_ms: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    for _ in range(args.rounds):
        for condition in CONDITIONS:
            done = threading.Event()

            def work(condition: str = condition, done: threading.Event = done) -> None:
                t0 = time.perf_counter()
                verify(condition)
                verify_ms[condition].append((time.perf_counter() - t0) * 1e3)
                done.set()

            thread = threading.Thread(target=work)
            thread.start()
            while True:  # ticks until the verification is done, and the one that was running then
                finished = done.is_set()
                t0 = time.perf_counter()
                planner.plan_latent(latent, predict_mean=False)
                tick_ms[condition].append((time.perf_counter() - t0) * 1e3)
                if finished:
                    break
            thread.join()
    gc.unfreeze()

    result = {"checkpoint": args.checkpoint, "task": args.task, "rounds": args.rounds,
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "load_average_1min": round(os.getloadavg()[0], 2), "conditions": {}}
    for c in CONDITIONS:
        v, t = np.array(verify_ms[c]), np.array(tick_ms[c])
        result["conditions"][c] = {
            "verify_ms_p50": round(float(np.median(v)), 2), "ticks_during": int(t.size),
            "tick_ms_p50": round(float(np.median(t)), 2), "tick_ms_p90": round(float(np.percentile(t, 90)), 2),
            "tick_ms_max": round(float(t.max()), 2),
        }
    build, spare_row = result["conditions"]["build"], result["conditions"]["spare"]
    result["verify_build_over_spare_p50"] = round(build["verify_ms_p50"] / spare_row["verify_ms_p50"], 2)
    print(f"{args.checkpoint} on {args.task}, {args.rounds} rounds, {result['machine']}, "
          f"load {result['load_average_1min']}")
    print(f"{'':10s}{'verify p50 ms':>15s}{'ticks during':>14s}{'tick p50':>10s}{'tick p90':>10s}{'tick max':>10s}")
    for c in CONDITIONS:
        r = result["conditions"][c]
        print(f"{c:10s}{r['verify_ms_p50']:>15}{r['ticks_during']:>14}{r['tick_ms_p50']:>10}{r['tick_ms_p90']:>10}"
              f"{r['tick_ms_max']:>10}")
    print(f"verification, build / spare (p50): {result['verify_build_over_spare_p50']}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
