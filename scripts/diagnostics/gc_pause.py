#!/usr/bin/env python3
"""How long does a full garbage collection stop a planner node, with and without a frozen start-up heap?

A full (generation-2) collection walks every tracked object while holding the GIL, so every thread of the
process, the control tick included, waits for it. Python starts one on its own when enough long-lived
objects have accumulated (building a model for a hot swap allocates thousands). This loads what the planner
node holds (rclpy, the node modules, the checkpoint, an MPPI planner that has planned) and times forced full
collections, alternating between the heap as it is and the heap frozen as ``runtime.freeze_startup_heap``
(which every SimDist node calls once its constructor returned) leaves it:

    python scripts/diagnostics/gc_pause.py --json bench_results/gc_pause_go2.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import rclpy  # noqa: F401  (a node-sized heap: the planner node has these modules loaded)
import simdist_ros.planner_node  # noqa: F401  (same reason)
from _planner_setup import warm_planner


def main() -> None:
    """Time forced full collections, frozen and not, interleaved; print the table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/go2")
    p.add_argument("--task", default="go2/flat")
    p.add_argument("--rounds", type=int, default=20, help="collections per condition")
    p.add_argument("--json", type=Path, help="write the result here")
    args = p.parse_args()

    node_state = warm_planner(args.checkpoint, args.task)  # noqa: F841  (kept alive: what a planner node holds)

    ms: dict[str, list[float]] = {"as_started": [], "frozen": []}
    for _ in range(args.rounds):
        for condition in ms:
            if condition == "frozen":
                gc.freeze()
            t0 = time.perf_counter()
            gc.collect()
            ms[condition].append((time.perf_counter() - t0) * 1e3)
            gc.unfreeze()
    result = {"checkpoint": args.checkpoint, "tracked_objects": len(gc.get_objects()),
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "load_average_1min": round(os.getloadavg()[0], 2), "rounds": args.rounds,
              **{c: {"full_collection_ms_p50": round(float(np.median(v)), 4),
                     "full_collection_ms_max": round(float(np.max(v)), 4)} for c, v in ms.items()}}
    result["ratio_p50"] = round(float(np.median(ms["as_started"]) / np.median(ms["frozen"])), 1)
    print(f"{args.checkpoint}: {result['tracked_objects']} tracked objects, {args.rounds} full collections each, "
          f"{result['machine']}")
    for c in ms:
        print(f"  {c:<11s} p50 {result[c]['full_collection_ms_p50']:10.4f} ms   "
              f"max {result[c]['full_collection_ms_max']:10.4f} ms")
    print(f"  as started / frozen (p50): {result['ratio_p50']}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
