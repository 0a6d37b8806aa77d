"""``simdist bench graph``: does the live ROS graph keep its control loop? Measured from outside, per executor.

Starts the robot's simulated graph (the pip launcher, as ``simdist launch``) once per ``--executor`` kind,
lets it warm up for ``--warmup-s`` simulated seconds, then measures ``--seconds`` simulated seconds:

* per node: CPU % of its process tree (``/proc``; the finetuner's worker processes included) and, for
  the single-threaded executor, executor passes per executed callback (1 = every wake-up did work);
* the loop, judged by the simulated robot: **ticks kept** = control steps that applied a command that
  arrived since the previous step; the **observation-to-command delay** in control periods (0 = the
  command answers the state the step starts from, as in the in-process evaluation); watchdog holds;
* the planner's own view: tick latency p50/p99 (wall ms, its last ``runtime.STAT_WINDOW`` ticks), ticks
  it missed, plans, model swaps;
* the task: falls and forward progress (Go2, the simulated robot's ``progress_m`` in its diagnostics;
  resets excluded) or insertions (UR5e) per simulated minute; finetune rounds and what the last one cost in wall time.

Every ratio is taken from counters of one node's own diagnostics message, so messages that arrive at
different times cannot skew it. Prints one table (a column per executor) and writes JSON with the
machine, the commit and every window's raw counters. Exit status: 0 measured, 1 a node died or the
window was not reached in time, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from simdist_core.cliargs import ArgumentParser, check_list, check_positive, cli_main

from simdist_ros import procmem
from simdist_ros.runtime import EXECUTORS

NODE_STATUS = {"sim robot": "sim_robot", "encoder": "encoder", "planner": "planner",
               "replay buffer": "replay_buffer", "finetuner": "finetuner"}
"""Diagnostics status name suffix -> node name."""


@dataclass
class Snapshot:
    """Everything read at one instant: newest diagnostics per node, CPU seconds per node, progress."""

    wall_s: float
    diagnostics: dict[str, dict[str, str]]
    cpu_s: dict[str, float]
    progress: float
    swaps: int


@dataclass
class Monitor:
    """Listens to ``/diagnostics`` and ``episode_result`` in a private rclpy context (nothing at 50 Hz)."""

    robot: str
    diagnostics: dict[str, dict[str, str]] = field(default_factory=dict)
    series: list[tuple[float, ...]] = field(default_factory=list)
    """Per robot diagnostics message: (sim s, steps, fresh-command steps, delay-0 steps, finetuner running)."""
    episodes: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The simulated robot's ``episode_result`` reports by episode index (malformed ones are skipped)."""

    def __post_init__(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from std_msgs.msg import String

        from simdist_ros import msgs, qos, topics
        from simdist_ros.demo import Progress
        from simdist_ros.listener import Listener

        self.progress = Progress(kind="distance" if self.robot == "go2" else "success")
        self.listener = Listener("graph_bench_monitor")

        def on_diag(msg: DiagnosticArray) -> None:
            for status in msg.status:
                node = next((n for suffix, n in NODE_STATUS.items() if status.name.endswith(suffix)), None)
                if node is None:
                    continue
                values = msgs.status_values(status)
                if node == "planner":
                    self.progress.on_planner(values)  # records a swap when the model version changes
                if node == "sim_robot":
                    self.progress.on_robot(values)
                    running = self.diagnostics.get("finetuner", {}).get("running") == "True"
                    self.series.append((_num(values, "sim_time_s"), _num(values, "steps"),
                                        _num(values, "fresh_command_steps"),
                                        _num(values, "command_delay_periods_0"), float(running)))
                self.diagnostics[node] = values

        def on_result(msg: String) -> None:
            try:
                result = json.loads(msg.data)
                self.episodes[int(result["episode"])] = result
            except (ValueError, KeyError, TypeError):
                print(f"[graph bench] ignoring a malformed episode_result: {msg.data[:200]!r}", flush=True)

        self.listener.subscribe(DiagnosticArray, topics.DIAGNOSTICS, on_diag, qos.RELIABLE)
        self.listener.subscribe(String, topics.EPISODE_RESULT, on_result, qos.EPISODE_RESULT)

    @property
    def swaps(self) -> int:
        """Hot swaps seen so far (model version changes in the planner's diagnostics)."""
        return len(self.progress.swaps)

    @property
    def sim_time_s(self) -> float:
        """Newest simulated time the robot reported."""
        return float(self.diagnostics.get("sim_robot", {}).get("sim_time_s", 0.0))

    def spin(self, seconds: float) -> None:
        """Handle messages for ``seconds`` of wall time."""
        self.listener.spin(seconds)

    def close(self) -> None:
        """Destroy the node and the private context."""
        self.listener.close()


def snapshot(monitor: Monitor, graph: Any) -> Snapshot:  # noqa: ANN401  (launcher.GraphProcess)
    """Read the monitor and every node's CPU time now."""
    parents = procmem.ppid_map()
    cpu = {name: procmem.tree_cpu_seconds(child.proc.pid, parents) for name, child in graph.children.items()}
    return Snapshot(wall_s=time.monotonic(), diagnostics={k: dict(v) for k, v in monitor.diagnostics.items()},
                    cpu_s=cpu, progress=monitor.progress.total, swaps=monitor.swaps)


def _num(values: dict[str, str], key: str) -> float:
    try:
        return float(values.get(key, "nan"))
    except ValueError:
        return float("nan")


def _delta(a: Snapshot, b: Snapshot, node: str, key: str) -> float:
    return _num(b.diagnostics.get(node, {}), key) - _num(a.diagnostics.get(node, {}), key)


def window_report(a: Snapshot, b: Snapshot) -> dict[str, Any]:
    """What happened between two snapshots (see the module docstring for each figure)."""
    from simdist_ros.sim_robot_node import DELAY_BINS, _delay_key, delay_percentiles

    wall = b.wall_s - a.wall_s
    sim = _delta(a, b, "sim_robot", "sim_time_s")
    steps = _delta(a, b, "sim_robot", "steps")
    histogram = {n: _delta(a, b, "sim_robot", _delay_key(n)) for n in range(DELAY_BINS + 1)}
    histogram = {n: (0.0 if math.isnan(v) else v) for n, v in histogram.items()}  # a bin never reported: empty
    p50, p99 = delay_percentiles(histogram)
    stamped = sum(histogram.values())
    planner_ticks = _delta(a, b, "planner", "ticks")
    planner_missed = _delta(a, b, "planner", "missed_ticks")
    nodes = {}
    for name in b.cpu_s:
        row: dict[str, Any] = {"cpu_percent": round(100.0 * (b.cpu_s[name] - a.cpu_s.get(name, 0.0)) / wall, 1)}
        passes = _delta(a, b, name, "executor_passes")
        callbacks = _delta(a, b, name, "executor_callbacks")
        if callbacks > 0:
            row["executor_passes_per_callback"] = round(passes / callbacks, 2)
            row["executor_callbacks_per_s"] = round(callbacks / wall, 1)
        nodes[name] = row
    minutes = sim / 60.0 if sim > 0 else float("nan")
    planner = b.diagnostics.get("planner", {})
    finetuner = b.diagnostics.get("finetuner", {})
    return {
        "wall_s": round(wall, 1), "sim_s": round(sim, 1), "achieved_rtf": round(sim / wall, 3) if wall > 0 else None,
        "steps": steps,
        "ticks_kept": round(_delta(a, b, "sim_robot", "fresh_command_steps") / steps, 4) if steps > 0 else None,
        "delay_periods_histogram": {str(k): v for k, v in histogram.items()},
        "delay_periods_p50": p50, "delay_periods_p99": p99,
        "delay_zero_fraction": round(histogram[0] / stamped, 4) if stamped > 0 else None,
        "watchdog_holds": _delta(a, b, "sim_robot", "watchdog_holds"),
        "planner_tick_p50_ms": round(_num(planner, "tick_latency_p50_ms"), 2),
        "planner_tick_p99_ms": round(_num(planner, "tick_latency_p99_ms"), 2),
        "planner_ticks_kept": round(planner_ticks / (planner_ticks + planner_missed), 4)
        if planner_ticks + planner_missed > 0 else None,
        "planner_missed_ticks": planner_missed,
        "planner_plans": _delta(a, b, "planner", "plans"),
        "planner_holds_stale": _delta(a, b, "planner", "holds_stale"),
        "model_swaps": b.swaps - a.swaps, "model_version_end": planner.get("model_version"),
        "falls": _delta(a, b, "sim_robot", "falls"),
        "falls_per_min": round(_delta(a, b, "sim_robot", "falls") / minutes, 2) if sim > 0 else None,
        "progress": round(b.progress - a.progress, 3),
        "progress_per_min": round((b.progress - a.progress) / minutes, 3) if sim > 0 else None,
        "finetune_rounds": _delta(a, b, "finetuner", "rounds"),
        "finetune_last_round_wall_s": _num(finetuner, "last_round_wall_s") if finetuner else None,
        "finetune_cpu_policy": finetuner.get("cpu_policy"),
        "nodes": nodes,
    }


def run_one(args: argparse.Namespace, executor: str, out: Path, checkpoint: Path,
            label: str, parameters: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Start the graph with ``executor`` and these node parameters (:func:`run_parameters`), measure, stop."""
    from simdist_ros.graph import load_graph
    from simdist_ros.launcher import GraphProcess
    launch = {"sim": "true", "task": args.task, "checkpoint": str(checkpoint), "output_dir": str(out / label),
              "adapt": "false" if args.no_adapt else "true"}
    graph = GraphProcess(load_graph(args.robot), launch, log_dir=out / label / "logs", parameters=parameters,
                         env={"SIMDIST_EXECUTOR": executor})
    monitor = Monitor(args.robot)
    timeout_s = 120.0 + 2.0 * (args.warmup_s + args.seconds) / max(args.rtf, 0.05)
    report: dict[str, Any] = {"label": label, "executor": executor, "launch": launch, "parameters": parameters}
    machine_cpu = procmem.MachineCpu()  # the whole machine's busy / idle / stolen shares over the window
    t0 = time.monotonic()
    try:
        graph.start()
        for phase, reached in _phases(args, monitor):
            while not reached() and not graph.poll() and time.monotonic() - t0 < timeout_s:
                monitor.spin(0.2)
            if graph.failed or not reached():
                report["error"] = (f"{phase} not reached: sim time {monitor.sim_time_s:.1f} s, "
                                   f"{len(monitor.episodes)} episodes ended after {time.monotonic() - t0:.0f} s wall; "
                                   f"nodes exited: {list(graph.failed)}")
                return report
            if phase == "warm-up":
                start = snapshot(monitor, graph)
                machine_cpu.start()
                print(f"[graph bench] {label}: measuring {_window_text(args)}", flush=True)
        report.update(window_report(start, snapshot(monitor, graph)))
        report["machine_cpu_in_window"] = machine_cpu.shares()
        if args.episodes:
            report["episodes"] = [monitor.episodes[k] for k in range(1, args.episodes + 1)]
        report["diagnostics_end"] = {k: dict(v) for k, v in monitor.diagnostics.items()}
        report["robot_series"] = {"columns": ["sim_s", "steps", "fresh_command_steps", "delay_0_steps",
                                              "finetuner_running"], "rows": monitor.series}
    finally:
        report["exit_codes"] = graph.stop()
        monitor.close()
    return report


def _phases(args: argparse.Namespace, monitor: Monitor) -> list[tuple[str, Any]]:
    """(phase name, reached?) for the warm-up and the window.

    By simulated time (``--warmup-s``, ``--seconds``; ``args.episodes`` = 0), or, with ``args.episodes`` = N,
    by episodes: the warm-up is episode 0 (the graph coming up while the robot already runs), the window episodes 1..N,
    so a comparison can use exactly the same episodes as an in-process evaluation.
    """
    if args.episodes:
        # The window's robot counters are differences of two diagnostics snapshots: the robot must have reported
        # once before the window opens (episode 0 can end by a fall before its first diagnostics; the robot-side
        # figures of such a run were all missing).
        return [("warm-up", lambda: 0 in monitor.episodes and "sim_robot" in monitor.diagnostics),
                ("window", lambda: all(k in monitor.episodes for k in range(1, args.episodes + 1)))]
    return [("warm-up", lambda: monitor.sim_time_s >= args.warmup_s),
            ("window", lambda: monitor.sim_time_s >= args.warmup_s + args.seconds)]


def _window_text(args: argparse.Namespace) -> str:
    return f"episodes 1..{args.episodes}" if args.episodes else f"{args.seconds:g} simulated s"


ROWS = (("achieved rtf", "achieved_rtf"), ("ticks kept (robot)", "ticks_kept"),
        ("delay 0 periods", "delay_zero_fraction"),
        ("delay p50 / p99 (periods)", ("delay_periods_p50", "delay_periods_p99")),
        ("planner ticks kept", "planner_ticks_kept"),
        ("planner tick p50 / p99 ms", ("planner_tick_p50_ms", "planner_tick_p99_ms")),
        ("watchdog holds", "watchdog_holds"), ("falls / min", "falls_per_min"), ("progress / min", "progress_per_min"),
        ("model swaps", "model_swaps"), ("finetune rounds", "finetune_rounds"),
        ("last round wall s", "finetune_last_round_wall_s"))  # fmt: skip


def format_table(reports: list[dict[str, Any]]) -> str:
    """One column per executor run, one row per figure, then CPU % (and passes per callback) per node."""
    def cell(r: dict[str, Any], key: str | tuple[str, str]) -> str:
        if "error" in r:
            return "error"
        if isinstance(key, tuple):
            return " / ".join("-" if r.get(k) is None else f"{r[k]:g}" for k in key)
        v = r.get(key)
        return "-" if v is None else (f"{v:g}" if isinstance(v, (int, float)) else str(v))

    width = 22
    lines = [f"{'':<28}" + "".join(f"{r['label'][-width + 1:]:>{width}}" for r in reports)]
    lines += [f"{label:<28}" + "".join(f"{cell(r, key):>{width}}" for r in reports) for label, key in ROWS]
    names = sorted({n for r in reports for n in r.get("nodes", {})})
    for name in names:
        def node_cell(r: dict[str, Any], name: str = name) -> str:
            row = r.get("nodes", {}).get(name)
            if row is None:
                return "-"
            ppc = row.get("executor_passes_per_callback")
            return f"{row['cpu_percent']:g} %" + (f" ({ppc:g} p/cb)" if ppc is not None else "")

        lines.append(f"{'CPU ' + name:<28}" + "".join(f"{node_cell(r):>{width}}" for r in reports))

    def steal_cell(r: dict[str, Any]) -> str:
        shares = r.get("machine_cpu_in_window")
        return "-" if not shares else f"{100 * shares['steal']:.1f} %"

    lines.append(f"{'CPU stolen (hypervisor)':<28}" + "".join(f"{steal_cell(r):>{width}}" for r in reports))
    return "\n".join(lines)


def _parse(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(prog="simdist bench graph", description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", choices=("go2", "ur5e"), default="go2", help="robot whose graph runs")
    p.add_argument("--task", help="simulated task (default: the graph's default task, as the demo)")
    p.add_argument("--rtf", type=float, default=1.0, help="sim real-time factor")
    p.add_argument("--seconds", type=float, default=60.0, help="simulated seconds measured")
    p.add_argument("--warmup-s", type=float, default=15.0, help="simulated seconds before the window")
    p.set_defaults(episodes=0)  # a window of simulated time; `simdist bench parity` measures episodes instead
    p.add_argument("--executor", default="single", help=f"comma list of {', '.join(EXECUTORS)}: one run each")
    p.add_argument("--compare", metavar="NODE.NAME=V1,V2,...",
                   help="one run per value of a node parameter (with the first executor), e.g. "
                        "finetuner.cpu_duty=1,0.5,0.2")
    p.add_argument("--no-adapt", action="store_true", help="no replay buffer / finetuner")
    p.add_argument("--lockstep", action="store_true",
                   help="the sim waits for each command (delay 0 by design); the planner's sample count is fixed")
    p.add_argument("--set", action="append", default=[], metavar="NODE.NAME=VALUE",
                   help="node parameter override (YAML value), e.g. finetuner.min_new_steps=500")
    p.add_argument("--checkpoint", type=Path, help="default: checkpoints/<robot> of the repository")
    p.add_argument("--output-dir", type=Path, help="default: runs/graph-bench-<robot>-<UTC time>")
    p.add_argument("--json", type=Path, help="write the reports here")
    ns = p.parse_args(argv)
    from simdist_ros.cli_checks import check_node_parameters, check_sim_task, checkpoint_or_default
    from simdist_ros.graph import default_task, load_graph

    ns.task = check_sim_task(ns.robot, ns.task or default_task(ns.robot))
    ns.executors = check_list("--executor", ns.executor, EXECUTORS)
    check_positive("--seconds", ns.seconds)
    check_positive("--warmup-s", ns.warmup_s, allow_zero=True)
    check_positive("--rtf", ns.rtf)
    for pair in [*ns.set, *([ns.compare] if ns.compare else [])]:
        key, sep, _ = pair.partition("=")
        if not sep or "." not in key:
            p.error(f"--set/--compare {pair!r} is not NODE.NAME=VALUE")
    ns.configs = configurations(ns.executors, ns.compare)
    ns.checkpoint = checkpoint_or_default(ns.checkpoint, ns.robot)
    launch = {"sim": "true", "task": ns.task, "adapt": "false" if ns.no_adapt else "true"}
    # Every run's whole parameter set, checked (and typed as the nodes declare them) before the first run starts.
    ns.configs = [(label, executor, check_node_parameters(load_graph(ns.robot), launch, run_parameters(ns, extra)))
                  for label, executor, extra in ns.configs]
    return ns


def run_parameters(args: argparse.Namespace, extra: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Node parameters of one run: the real-time factor and lockstep, ``--set``, then the ``--compare`` value.

    Lockstep also fixes the planner's sample count (``plan_time_fraction`` 0) unless ``--set`` says otherwise: it
    compares the pipeline's logic without its timing, and a count that follows plan times makes the plans depend on
    the machine (two identical lockstep UR5e runs with the adaptive count differed on 8 of 30 episodes).
    """
    from simdist_ros.soak import node_overrides

    parameters = node_overrides(args.set, args.rtf)  # NODE.NAME=VALUE pairs, as `simdist bench soak --set`
    parameters["sim_robot"]["lockstep"] = args.lockstep
    if args.lockstep:
        parameters.setdefault("planner", {}).setdefault("plan_time_fraction", 0.0)
    for node, values in extra.items():
        parameters.setdefault(node, {}).update(values)
    return parameters


def configurations(executors: list[str], compare: str | None) -> list[tuple[str, str, dict[str, dict[str, Any]]]]:
    """``(label, executor, extra node parameters)`` per run: one per executor, or one per ``--compare`` value."""
    if not compare:
        return [(e, e, {}) for e in executors]
    key, _, values = compare.partition("=")
    node, _, name = key.partition(".")
    return [(f"{executors[0]} {name}={v.strip()}", executors[0], {node: {name: yaml.safe_load(v)}})
            for v in values.split(",") if v.strip()]


@cli_main("simdist bench graph")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench graph``."""
    args = _parse(argv)
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randrange(1, 100)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    from simdist_ros.graph import GraphError
    from simdist_ros.soak import git_commit

    checkpoint = args.checkpoint
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = (args.output_dir or Path("runs") / f"graph-bench-{args.robot}-{stamp}").resolve()
    commit = git_commit()
    reports = []
    for label, executor, parameters in args.configs:
        print(f"[graph bench] {args.robot} on {args.task}, {label}, rtf {args.rtf:g}, "
              f"{'no adaptation' if args.no_adapt else 'replay buffer + finetuner'}; logs in {out / label}",
              flush=True)
        try:
            reports.append(run_one(args, executor, out, checkpoint, label.replace(" ", "_"), parameters))
        except (GraphError, ValueError) as exc:  # e.g. --set for a node this graph does not start
            print(f"simdist bench graph: {exc}", file=sys.stderr)
            return 2
        reports[-1]["label"] = label
        if "error" in reports[-1]:
            print(f"[graph bench] {label}: {reports[-1]['error']}", file=sys.stderr)
    print(format_table(reports))
    result = {"robot": args.robot, "task": args.task, "rtf": args.rtf, "seconds": args.seconds,
              "warmup_s": args.warmup_s, "adapt": not args.no_adapt, "lockstep": args.lockstep,
              "checkpoint": str(checkpoint), "machine": procmem.machine_info(), "git_commit": commit,
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": reports}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
        print(f"simdist bench graph: wrote {args.json}")
    return 1 if any("error" in r for r in reports) else 0
