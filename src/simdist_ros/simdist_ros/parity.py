"""``simdist bench parity``: the same checkpoint in-process and through the live ROS graph, side by side.

Per task: ``simdist eval`` in-process (sense, plan and act in one loop, no delay) for ``--episodes``
episodes of ``--seconds`` simulated seconds, seeds from ``--seed``; then the ROS graph (sim robot,
encoder, planner as separate processes over DDS, free-running at ``--rtf``, zero-shot: no replay
buffer or finetuner) for the same number of simulated seconds, with the same episode length and the
same episode seeds (the simulated robot resets episode k with ``seed + k``, as the evaluation does), so
both sides face the same commands and terrain draws. The planner config is the one the graph deploys
(the checkpoint's stored config, else the ``cpu`` preset); the planner's sampling noise differs.

Figures per simulated minute, so episodes cut short by falls compare fairly: forward progress (Go2) or
insertions (UR5e), falls; the graph's ticks kept and observation-to-command delay. The ratio graph /
in-process is the parity; the goal is within 10 % on each task. Prints a table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from simdist_core.cliargs import ArgumentParser, check_list, check_positive, cli_main

from simdist_ros import procmem


def in_process(task: str, checkpoint: Path, episodes: int, seconds: float, seed: int) -> dict[str, Any]:
    """``simdist eval`` of the deployed planner config; progress and falls per simulated minute."""
    from simdist_core.checkpoint import load_checkpoint
    from simdist_core.eval.closed_loop import EvalConfig, evaluate

    model, manifest = load_checkpoint(checkpoint)
    preset = "checkpoint" if isinstance(getattr(manifest, "planner_config", None), dict) else "cpu"
    result = evaluate(model, EvalConfig(task=task, episodes=episodes, seconds=seconds, seed=seed, preset=preset),
                      manifest=manifest)
    minutes = result["sim_s"] / 60.0
    per_episode = result["per_episode"]
    if task.startswith("ur5e"):
        progress = sum(float(m.get("success", 0.0)) for m in per_episode)
    else:
        progress = sum(float(m.get("forward_progress_m", 0.0)) for m in per_episode)
    falls = sum(float(m.get("fell", 0.0)) for m in per_episode)
    return {"preset": preset, "sim_s": result["sim_s"], "wall_s": round(result["wall_s"], 1),
            "progress_per_min": round(progress / minutes, 3), "falls_per_min": round(falls / minutes, 3),
            "plan_ms_p50": result["plan_ms_p50"], "plan_ms_p99": result["plan_ms_p99"], "per_episode": per_episode}


def through_graph(args: argparse.Namespace, task: str, checkpoint: Path, sim_s: float, out: Path) -> dict[str, Any]:
    """One zero-shot window of the live graph (``simdist bench graph``) as long as the in-process run."""
    from simdist_ros.graph_bench import run_one

    robot = task.split("/")[0]
    bench_args = argparse.Namespace(robot=robot, task=task, rtf=args.rtf, lockstep=False, no_adapt=True,
                                    warmup_s=args.warmup_s, seconds=sim_s, set=[])
    overrides = [f"episode_length_s={args.seconds}"] if robot == "go2" else []
    extra = {"sim_robot": {"seed": args.seed, "episode_seeds": True, **({"overrides": overrides} if overrides else {})}}
    return run_one(bench_args, "single", out, checkpoint, task.replace("/", "_"), extra)


def _parse(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(prog="simdist bench parity", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="go2/flat,go2/foam", help="comma list of task ids (one robot)")
    p.add_argument("--episodes", type=int, default=10, help="in-process episodes per task")
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per episode")
    p.add_argument("--seed", type=int, default=1000, help="first episode seed")
    p.add_argument("--rtf", type=float, default=1.0, help="the graph's real-time factor")
    p.add_argument("--warmup-s", type=float, default=2.0, help="graph: simulated seconds before the window")
    p.add_argument("--checkpoint", type=Path, help="default: checkpoints/<robot> of the repository")
    p.add_argument("--output-dir", type=Path, help="default: runs/parity-<UTC time>")
    p.add_argument("--json", type=Path, help="write the report here")
    ns = p.parse_args(argv)
    from simdist_core.sim.base import task_ids

    ns.tasks = check_list("--task", ns.task, task_ids())
    robots = {t.split("/")[0] for t in ns.tasks}
    if len(robots) != 1:
        p.error(f"--task {ns.task!r}: give tasks of one robot, e.g. go2/flat,go2/foam")
    for option, value in (("--episodes", ns.episodes), ("--seconds", ns.seconds), ("--rtf", ns.rtf)):
        check_positive(option, value)
    check_positive("--warmup-s", ns.warmup_s, allow_zero=True)
    ns.robot = robots.pop()
    from simdist_ros.cli_checks import checkpoint_or_default

    ns.checkpoint = checkpoint_or_default(ns.checkpoint, ns.robot)
    return ns


def format_table(rows: list[dict[str, Any]]) -> str:
    """One line per task: in-process, graph, ratio."""
    head = (f"{'task':<16}{'in-process /min':>18}{'falls/min':>11}{'graph /min':>12}{'falls/min':>11}"
            f"{'graph/in-proc':>15}{'ticks kept':>12}{'delay p50/p99':>15}")
    lines = [head, "-" * len(head)]
    for r in rows:
        g, i = r["graph"], r["in_process"]
        if "error" in g:
            lines.append(f"{r['task']:<16}{i['progress_per_min']:>18.2f}{i['falls_per_min']:>11.2f}"
                         f"  graph: {g['error']}")
            continue
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(f"{r['task']:<16}{i['progress_per_min']:>18.2f}{i['falls_per_min']:>11.2f}"
                     f"{g['progress_per_min']:>12.2f}{g['falls_per_min']:>11.2f}{ratio:>15}"
                     f"{g['ticks_kept']:>12.4f}{g['delay_periods_p50']:>8g}/{g['delay_periods_p99']:g}")
    return "\n".join(lines)


@cli_main("simdist bench parity")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench parity``."""
    args = _parse(argv)
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randrange(1, 100)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    import torch

    from simdist_ros.soak import git_commit

    torch.set_num_threads(1)  # as the planner node: one torch thread
    checkpoint = args.checkpoint
    out = (args.output_dir or Path("runs") / time.strftime("parity-%Y%m%d-%H%M%S", time.gmtime())).resolve()
    commit = git_commit()
    rows = []
    for task in args.tasks:
        print(f"[parity] {task}: in-process, {args.episodes} x {args.seconds:g} s", flush=True)
        local = in_process(task, checkpoint, args.episodes, args.seconds, args.seed)
        print(f"[parity] {task}: through the ROS graph, {local['sim_s']:g} simulated s at rtf {args.rtf:g}", flush=True)
        graph = through_graph(args, task, checkpoint, local["sim_s"], out)
        ratio = None
        if "error" not in graph and local["progress_per_min"]:
            ratio = round(graph["progress_per_min"] / local["progress_per_min"], 3)
        rows.append({"task": task, "in_process": local, "graph": graph, "ratio": ratio})
    print(format_table(rows))
    report = {"robot": args.robot, "episodes": args.episodes, "seconds": args.seconds, "seed": args.seed,
              "rtf": args.rtf, "checkpoint": str(checkpoint), "machine": procmem.machine_info(), "git_commit": commit,
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tasks": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
        print(f"simdist bench parity: wrote {args.json}")
    return 1 if any("error" in r["graph"] for r in rows) else 0
