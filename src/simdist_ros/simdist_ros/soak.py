"""``simdist bench soak``: run the simulated node graph for a while and measure every node's memory.

Starts the robot's whole graph with the pip launcher (:class:`simdist_ros.launcher.GraphProcess`):
MuJoCo robot on the demo task, encoder, planner, replay buffer and finetuner (live adaptation), and
with ``--record`` the rosbag2 recorder. Every ``--sample-s`` wall seconds it reads each node's
process tree from ``/proc`` (:mod:`simdist_ros.procmem`: VmRSS, VmHWM, PSS, the finetuner's spawn
worker included). It also listens to ``/diagnostics`` so the report shows that the graph did work
(planner commands, finetune rounds, model version, simulated time).

At the end it prints one row per node: RSS at the end of warm-up, peak (the largest sum of the tree's
VmHWM seen, so a peak between two samples of a live process is not missed), RSS at the end, growth
slope in MiB/min (least squares over the second half of the post-warm-up samples; also for the root
process alone, without its short-lived workers), the bound the
node's module docstring documents (``Memory bound: <N> MiB ...``; ``undocumented`` if none) and
PASS/FAIL of peak <= bound; then the whole graph's total against 8 GiB. Totals: the sum of the
per-node peaks (an upper bound, used for the verdict), the largest simultaneous RSS sum, and the
largest simultaneous PSS sum (shared pages counted once). The monitor (this process) is in the totals.

``--minutes`` is wall time (memory growth is a function of how long processes live); the simulated
time reached is reported. Exit status: 0 all documented bounds and the 8 GiB total hold, 1 a bound or
the total is exceeded or a node died, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from simdist_core.cliargs import ArgumentParser, UsageError, check_positive, cli_main

from simdist_ros import procmem
from simdist_ros.graph import GraphError, check_parameter_value
from simdist_ros.procmem import MIB

TOTAL_BOUND_MIB = 8 * 1024.0
"""The whole simulated demo must fit in 8 GiB."""
ROBOTS = ("go2", "ur5e")


@dataclass
class Series:
    """Samples of one node's process tree."""

    name: str
    module: str
    bound_mib: float | None
    times_s: list[float] = field(default_factory=list)
    rss_bytes: list[int] = field(default_factory=list)
    hwm_bytes: list[int] = field(default_factory=list)
    pss_bytes: list[int] = field(default_factory=list)
    root_rss_bytes: list[int] = field(default_factory=list)
    max_processes: int = 0

    def add(self, t_s: float, mem: procmem.TreeMemory) -> None:
        """Append one sample (a tree that is gone is not sampled)."""
        if not mem.pids:
            return
        self.times_s.append(t_s)
        self.rss_bytes.append(mem.rss_bytes)
        self.hwm_bytes.append(mem.hwm_bytes)
        self.pss_bytes.append(mem.pss_bytes)
        self.root_rss_bytes.append(mem.root_rss_bytes)
        self.max_processes = max(self.max_processes, len(mem.pids))


def _slope(times_s: list[float], values: list[int]) -> float | None:
    if len(times_s) < 2 or times_s[-1] <= times_s[0]:
        return None
    return round(procmem.slope_per_min(times_s, [v / MIB for v in values]), 2)


def summarize(series: Series, warmup_s: float) -> dict[str, Any]:
    """One table row: start (after warm-up), peak, end, second-half slope, bound and verdict (MiB).

    ``root_slope_mib_per_min`` is the same fit on the root process alone: the node's own growth, without
    the saw-tooth of workers that come and go (the finetuner's).
    """
    after = [i for i, t in enumerate(series.times_s) if t >= warmup_s]
    row: dict[str, Any] = {"node": series.name, "module": series.module, "samples": len(series.times_s),
                           "max_processes": series.max_processes, "bound_mib": series.bound_mib}
    if not after:
        return {**row, "start_mib": None, "peak_mib": None, "end_mib": None, "slope_mib_per_min": None,
                "root_end_mib": None, "root_slope_mib_per_min": None, "verdict": "NO DATA"}
    half = after[len(after) // 2:]
    t = [series.times_s[i] for i in half]
    slope = _slope(t, [series.rss_bytes[i] for i in half])
    root_slope = _slope(t, [series.root_rss_bytes[i] for i in half]) if series.root_rss_bytes else None
    peak = max(max(series.hwm_bytes), max(series.rss_bytes)) / MIB
    verdict = "undocumented" if series.bound_mib is None else ("PASS" if peak <= series.bound_mib else "FAIL")
    return {**row, "start_mib": round(series.rss_bytes[after[0]] / MIB, 1), "peak_mib": round(peak, 1),
            "end_mib": round(series.rss_bytes[-1] / MIB, 1),
            "slope_mib_per_min": slope,
            "root_end_mib": round(series.root_rss_bytes[-1] / MIB, 1) if series.root_rss_bytes else None,
            "root_slope_mib_per_min": root_slope, "verdict": verdict}


def totals(all_series: list[Series], monitor: Series) -> dict[str, Any]:
    """Whole-graph totals (MiB) and the verdict against 8 GiB."""
    per_node_peaks = sum(max(s.hwm_bytes + s.rss_bytes, default=0) for s in [*all_series, monitor]) / MIB
    by_time: dict[float, list[int]] = {}
    for s in [*all_series, monitor]:
        for t, rss, pss in zip(s.times_s, s.rss_bytes, s.pss_bytes, strict=True):
            acc = by_time.setdefault(t, [0, 0])
            acc[0] += rss
            acc[1] += pss
    peak_rss = max((a[0] for a in by_time.values()), default=0) / MIB
    peak_pss = max((a[1] for a in by_time.values()), default=0) / MIB
    return {"sum_of_node_peaks_mib": round(per_node_peaks, 1), "peak_simultaneous_rss_mib": round(peak_rss, 1),
            "peak_simultaneous_pss_mib": round(peak_pss, 1), "bound_mib": TOTAL_BOUND_MIB,
            "verdict": "PASS" if per_node_peaks <= TOTAL_BOUND_MIB else "FAIL"}


def format_table(rows: list[dict[str, Any]], total: dict[str, Any]) -> str:
    """The printed report."""
    def fmt(v: Any, spec: str = ".1f") -> str:  # noqa: ANN401
        return "-" if v is None else format(v, spec)

    head = f"{'node':<16}{'procs':>6}{'start MiB':>11}{'peak MiB':>10}{'end MiB':>9}{'slope MiB/min':>15}" \
           f"{'root slope':>12}{'bound MiB':>14}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        bound = fmt(r["bound_mib"], ".0f") if r["bound_mib"] is not None else (
            "-" if r["verdict"] == "not judged" else "undocumented")
        lines.append(f"{r['node']:<16}{r['max_processes']:>6}{fmt(r['start_mib']):>11}{fmt(r['peak_mib']):>10}"
                     f"{fmt(r['end_mib']):>9}{fmt(r['slope_mib_per_min'], '+.2f'):>15}"
                     f"{fmt(r['root_slope_mib_per_min'], '+.2f'):>12}{bound:>14}  {r['verdict']}")
    lines.append("-" * len(head))
    lines.append(f"total: sum of node peaks {total['sum_of_node_peaks_mib']:.1f} MiB, peak simultaneous RSS "
                 f"{total['peak_simultaneous_rss_mib']:.1f} MiB (PSS {total['peak_simultaneous_pss_mib']:.1f} MiB) "
                 f"vs bound {total['bound_mib']:.0f} MiB: {total['verdict']}")
    return "\n".join(lines)


def node_bound(executable: str) -> tuple[str, float | None]:
    """``(module, bound MiB or None)`` of a node executable, from its module docstring (not imported)."""
    from simdist_ros.launcher import entry_point

    module, _ = entry_point(executable)
    return module, procmem.parse_memory_bound_mib(procmem.module_docstring(module))


def git_commit() -> str:
    """The repository's HEAD commit (``+dirty`` if tracked files changed), or ``unknown``."""
    from simdist_ros.launcher import repo_root

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo_root(), capture_output=True, text=True, timeout=30).stdout

    try:
        head = git("rev-parse", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("+dirty" if dirty else "")) if head else "unknown"


def random_checkpoint(robot: str, path: Path) -> Path:
    """A randomly initialised world model saved with ``save_checkpoint`` (in a subprocess: torch stays out of here)."""
    code = ("import sys, torch; torch.manual_seed(0); from simdist_core.checkpoint import save_checkpoint; "
            "from simdist_core.models.world_model import WorldModel; from simdist_core.robots import ROBOTS; "
            "save_checkpoint(sys.argv[1], WorldModel(ROBOTS[sys.argv[2]]), version=0)")
    subprocess.run([sys.executable, "-c", code, str(path), robot], check=True, timeout=600)
    return path


def _parse(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(prog="simdist bench soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", choices=ROBOTS, default="go2", help="robot whose graph runs")
    p.add_argument("--minutes", type=float, default=5.0, help="wall minutes to run")
    p.add_argument("--warmup-s", type=float, default=60.0, help="wall seconds before 'start' RSS")
    p.add_argument("--sample-s", type=float, default=2.0, help="sampling period in wall seconds")
    p.add_argument("--checkpoint", type=Path, help="default: checkpoints/<robot> at the repo root")
    p.add_argument("--random-init", action="store_true",
                   help="no trained checkpoint: save and use a randomly initialised model (the robot falls a lot)")
    p.add_argument("--task", help="simulated task (default: the graph's, as the demo)")
    p.add_argument("--record", action="store_true", help="also run the rosbag2 recorder")
    p.add_argument("--no-adapt", action="store_true", help="no replay buffer / finetuner")
    p.add_argument("--rtf", type=float, default=0.25, help="sim real-time factor (as the demo)")
    p.add_argument("--set", action="append", default=[], metavar="NODE.NAME=VALUE",
                   help="node parameter override (YAML value), e.g. finetuner.min_new_steps=500")
    p.add_argument("--output-dir", type=Path, help="default: runs/soak-<robot>-<UTC time>")
    p.add_argument("--json", type=Path, help="write the report here as JSON")
    ns = p.parse_args(argv)
    if ns.minutes <= 0 or ns.sample_s <= 0 or ns.warmup_s < 0 or ns.warmup_s >= ns.minutes * 60.0:
        p.error(f"need minutes > 0, sample_s > 0 and 0 <= warmup_s < minutes*60; got minutes={ns.minutes}, "
                f"sample_s={ns.sample_s}, warmup_s={ns.warmup_s}")
    return ns


def validate(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Launch arguments (checkpoint and output folder left to the caller) and typed node parameters.

    Raises:
        UsageError: bad rtf, task, checkpoint or ``--set``.
    """
    from simdist_ros.cli_checks import check_node_parameters, check_sim_task, checkpoint_or_default
    from simdist_ros.graph import default_task, load_graph

    check_positive("--rtf", args.rtf)
    task = check_sim_task(args.robot, args.task or default_task(args.robot))
    if not args.random_init:  # a random model is written into the output folder once the run starts
        checkpoint_or_default(args.checkpoint, args.robot)
    launch = {"sim": "true", "task": task, "adapt": "false" if args.no_adapt else "true",
              "record": "true" if args.record else "false"}
    return launch, check_node_parameters(load_graph(args.robot), launch, node_overrides(args.set, args.rtf))


def node_overrides(pairs: list[str], rtf: float) -> dict[str, dict[str, Any]]:
    """Per-node parameters ``{node: {name: value}}``: the sim's real-time factor, then ``NODE.NAME=VALUE`` pairs.

    Raises:
        UsageError: (a ValueError) a pair that is not ``NODE.NAME=VALUE``, or a value a params file cannot carry
            (:func:`~simdist_ros.graph.check_parameter_value`).
    """
    out: dict[str, dict[str, Any]] = {"sim_robot": {"real_time_factor": rtf}}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        node, dot, name = key.partition(".")
        if not sep or not dot or not node or not name:
            raise UsageError(f"--set {pair!r} is not NODE.NAME=VALUE (e.g. finetuner.min_new_steps=500)")
        parsed = yaml.safe_load(value)
        try:
            check_parameter_value(node, name, parsed)
        except GraphError as exc:
            raise UsageError(f"--set {exc}") from None
        out.setdefault(node, {})[name] = parsed
    return out


class _Diagnostics:
    """Newest ``/diagnostics`` values per status name, in a private rclpy context."""

    def __init__(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        from simdist_ros import msgs, qos, topics
        from simdist_ros.listener import Listener

        self.latest: dict[str, dict[str, str]] = {}
        self.listener = Listener("soak_monitor")

        def on_diag(msg: DiagnosticArray) -> None:
            for status in msg.status:
                self.latest[status.name] = msgs.status_values(status)

        self.listener.subscribe(DiagnosticArray, topics.DIAGNOSTICS, on_diag, qos.RELIABLE)

    def spin_until(self, t_end: float) -> None:
        self.listener.spin_until(t_end, step_s=0.1)

    def close(self) -> None:
        self.listener.close()


def _sample_loop(graph: Any, series: dict[str, Series], monitor: Series, diag: _Diagnostics,  # noqa: ANN401
                 args: argparse.Namespace) -> list[str]:
    """Sample until ``--minutes`` have passed or a node died; returns the names of nodes that exited."""
    t0 = time.monotonic()
    t_end = t0 + args.minutes * 60.0
    next_print = t0 + 30.0
    while True:
        now = time.monotonic()
        parents = procmem.ppid_map()
        for name, child in graph.children.items():
            series[name].add(now - t0, procmem.tree_memory(child.proc.pid, parents))
        monitor.add(now - t0, procmem.tree_memory(os.getpid(), {os.getpid(): 0}))  # this process only
        graph.poll()
        if graph.failed or now >= t_end:
            return list(graph.failed)
        if now >= next_print:
            rss = sum(s.rss_bytes[-1] for s in series.values() if s.rss_bytes) / MIB
            print(f"[soak] {now - t0:6.0f} s: graph RSS {rss:7.1f} MiB; planner "
                  f"{_pick(diag.latest, 'planner', ('commands', 'model_version'))}", flush=True)
            next_print += 30.0
        diag.spin_until(min(t_end, now + args.sample_s))


def _pick(latest: dict[str, dict[str, str]], suffix: str, keys: tuple[str, ...]) -> dict[str, str]:
    values = next((v for k, v in latest.items() if k.endswith(suffix)), {})
    return {k: values[k] for k in keys if k in values}


def build_report(args: argparse.Namespace, series: dict[str, Series], monitor: Series, launch: dict[str, str],
                 checkpoint: Path) -> dict[str, Any]:
    """The JSON report: rows, totals, verdict lists, run settings, machine, commit and the sampled series (MiB)."""
    rows = [summarize(s, args.warmup_s) for s in series.values()]
    monitor_row = {**summarize(monitor, args.warmup_s), "verdict": "not judged"}  # counted in the total only
    return {"robot": args.robot, "task": launch["task"], "minutes": args.minutes, "warmup_s": args.warmup_s,
            "sample_s": args.sample_s, "rtf": args.rtf, "checkpoint": str(checkpoint),
            "random_init": args.random_init, "record": args.record, "adapt": not args.no_adapt,
            "parameters": node_overrides(args.set, args.rtf), "machine": procmem.machine_info(),
            "load_avg_at_end": list(os.getloadavg()),
            "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "nodes": rows, "monitor": monitor_row,
            "total": totals(list(series.values()), monitor),
            "failed_bounds": [r["node"] for r in rows if r["verdict"] in ("FAIL", "NO DATA")],
            "undocumented": [r["node"] for r in rows if r["verdict"] == "undocumented"],
            "series_mib": {s.name: {"t_s": [round(t, 1) for t in s.times_s], "rss": procmem.mib(s.rss_bytes),
                                    "hwm": procmem.mib(s.hwm_bytes), "root_rss": procmem.mib(s.root_rss_bytes)}
                           for s in [*series.values(), monitor]}}


@cli_main("simdist bench soak")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench soak``."""
    args = _parse(argv)
    launch, parameters = validate(args)
    # A private DDS domain (unless set): other graphs on this machine must not feed ours.
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randrange(1, 100)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    from simdist_ros.graph import load_graph
    from simdist_ros.launcher import GraphProcess, default_checkpoint

    out = (args.output_dir or Path("runs") / time.strftime(f"soak-{args.robot}-%Y%m%d-%H%M%S", time.gmtime())).resolve()
    checkpoint = args.checkpoint or default_checkpoint(args.robot)
    if args.random_init:
        checkpoint = random_checkpoint(args.robot, out / "random_init")
    launch.update(checkpoint=str(checkpoint), output_dir=str(out))
    graph = GraphProcess(load_graph(args.robot), launch, log_dir=out / "logs", parameters=parameters)
    series = {n.name: Series(n.name, *node_bound(n.executable)) for n in graph.nodes}
    monitor = Series("soak monitor", __name__, None)
    print(f"simdist bench soak: {args.robot} on {launch['task']}, {args.minutes:g} wall minutes, nodes "
          f"{list(series)}, checkpoint {checkpoint}, logs in {out / 'logs'}", flush=True)
    commit = git_commit()  # at the start: the code (and checkpoint) that ran
    diag = _Diagnostics()
    died: list[str] = []
    try:
        graph.start()
        died = _sample_loop(graph, series, monitor, diag, args)
    except KeyboardInterrupt:
        print("simdist bench soak: interrupted; reporting what was sampled", file=sys.stderr)
    finally:
        codes = graph.stop()
        activity = {k: dict(v) for k, v in diag.latest.items()}
        diag.close()
    report = build_report(args, series, monitor, launch, checkpoint)
    report.update(exit_codes=codes, died=died, diagnostics=activity, git_commit=commit)
    print(format_table([*report["nodes"], report["monitor"]], report["total"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
        print(f"simdist bench soak: wrote {args.json}")
    if died:
        print(f"simdist bench soak: nodes exited during the soak: {died} (see {out / 'logs'})", file=sys.stderr)
    if report["undocumented"]:
        print(f"simdist bench soak: no 'Memory bound: <N> MiB' in the docstring of {report['undocumented']}",
              file=sys.stderr)
    if report["failed_bounds"]:
        print(f"simdist bench soak: bound exceeded (or no samples) for {report['failed_bounds']}", file=sys.stderr)
    return 1 if died or report["failed_bounds"] or report["total"]["verdict"] == "FAIL" else 0
