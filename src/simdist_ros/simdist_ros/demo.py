"""``simdist demo``: the simulated robot adapting live, with progress in the terminal and a plot at the end.

Starts the robot's whole node graph (``simdist_ros.graph`` + the pip launcher): the MuJoCo robot on the
hard task (Go2: PTFE slope; UR5e: peg insertion), the shipped checkpoint (``checkpoints/<robot>``),
encoder, planner, replay buffer and finetuner. It listens to ``/diagnostics``, ``odom`` and
``model/update`` and prints every ``--print-every-s`` wall seconds: simulated time, model version,
progress in the last simulated minute, deadline misses and missed ticks of the planner, finetune
rounds. At the end (``--minutes`` of simulated time, or Ctrl-C) it stops the graph cleanly and writes
``progress.png`` (progress over simulated time, model swaps marked) and ``summary.json`` into the
run folder.

Progress: Go2 = forward distance along +x from ``odom`` (jumps at task resets are not counted);
UR5e = successful insertions (episodes whose ``metric/success`` reached 1).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEMOS = {
    "go2": {"task": "go2/foam", "unit": "m forward", "progress": "odom"},  # where adaptation is shown to help
    "ur5e": {"task": "ur5e/peg", "unit": "insertions", "progress": "success"},
}
"""Robot -> demo task and progress measure."""


@dataclass
class Progress:
    """Progress bookkeeping in simulated time (bounded: one sample per diagnostics/odom message kept)."""

    kind: str
    samples: list[tuple[float, float]] = field(default_factory=list)
    """(sim time s, cumulative progress)."""
    swaps: list[tuple[float, str]] = field(default_factory=list)
    """(sim time s, model version) of each hot swap seen in the planner's diagnostics."""
    total: float = 0.0
    sim_time_s: float = 0.0
    _last_x: float | None = None
    _episode: int = -1
    _episode_success: bool = False
    planner: dict[str, str] = field(default_factory=dict)
    finetuner: dict[str, str] = field(default_factory=dict)
    robot: dict[str, str] = field(default_factory=dict)

    def on_odom_x(self, t_s: float, x_m: float) -> None:
        """Go2: add forward motion; a jump larger than 0.5 m in one sample is a task reset."""
        if self._last_x is not None and abs(x_m - self._last_x) < 0.5:
            self.total += x_m - self._last_x
        self._last_x = x_m
        self.sim_time_s = max(self.sim_time_s, t_s)
        if not self.samples or t_s - self.samples[-1][0] >= 0.5:
            self.samples.append((t_s, self.total))

    def on_robot(self, values: dict[str, str]) -> None:
        """Sim robot diagnostics: sim time, and (UR5e) success per episode."""
        self.robot = values
        t_s = float(values.get("sim_time_s", self.sim_time_s))
        self.sim_time_s = max(self.sim_time_s, t_s)
        if self.kind == "success" and "successes" in values:  # a cumulative counter, if the sim robot has one
            self.total = float(values["successes"])
            self.samples.append((t_s, self.total))
        elif self.kind == "success":
            # Sampled at the diagnostics rate: a success whose episode resets between two samples is missed.
            episode = int(float(values.get("episodes", 0)))
            if episode != self._episode:
                self._episode, self._episode_success = episode, False
            if not self._episode_success and float(values.get("metric/success", 0.0)) >= 1.0:
                self._episode_success = True
                self.total += 1
            self.samples.append((t_s, self.total))

    def on_planner(self, values: dict[str, str]) -> None:
        """Planner diagnostics: record a swap whenever the model version changes."""
        version = values.get("model_version", "?")
        if self.planner and version != self.planner.get("model_version"):
            self.swaps.append((self.sim_time_s, version))
        self.planner = values

    def last_minute(self) -> float:
        """Progress over the last simulated minute."""
        recent = [p for t, p in self.samples if t >= self.sim_time_s - 60.0]
        return self.total - recent[0] if recent else 0.0


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="simdist demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", choices=sorted(DEMOS), default="go2")
    p.add_argument("--minutes", type=float, default=5.0, help="simulated minutes to run (default 5)")
    p.add_argument("--task", help="override the demo task")
    p.add_argument("--checkpoint", type=Path, help="default: checkpoints/<robot> at the repo root")
    p.add_argument("--rtf", type=float, default=0.25,
                   help="sim real-time factor; 0.25 lets a shared 2-core CPU keep most 50 Hz ticks (see missed ticks)")
    p.add_argument("--lockstep", action="store_true",
                   help="step the sim only after each planner command: a late CPU tick slows sim time instead of "
                        "leaving the robot unplanned, but the run is ~5x slower in wall time")
    p.add_argument("--output-dir", type=Path, help="default: runs/demo-<robot>-<UTC time>")
    p.add_argument("--no-adapt", action="store_true", help="zero-shot baseline: no replay buffer / finetuner")
    p.add_argument("--print-every-s", type=float, default=10.0, help="wall seconds between progress lines")
    return p.parse_args(argv)


def _line(prog: Progress, unit: str) -> str:
    pl = prog.planner
    return (f"t_sim {prog.sim_time_s:7.1f} s | model v{pl.get('model_version', '?'):>3} | "
            f"last min {prog.last_minute():6.2f} {unit} | total {prog.total:7.2f} | "
            f"deadline misses {pl.get('deadline_misses', '?')} | missed ticks {pl.get('missed_ticks', '?')} | "
            f"finetune rounds {prog.finetuner.get('rounds', '0')} (accepted {prog.finetuner.get('accepted', '0')}) | "
            f"falls/episodes {prog.robot.get('falls', '?')}/{prog.robot.get('episodes', '?')}")


def plot_progress(prog: Progress, unit: str, title: str, path: Path) -> Path:
    """Cumulative progress over simulated time with model swaps marked; written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    if prog.samples:
        t, p = zip(*prog.samples, strict=True)
        ax.plot([x / 60.0 for x in t], p, label="progress")
    for t_s, version in prog.swaps:
        ax.axvline(t_s / 60.0, color="tab:orange", alpha=0.5, linestyle="--")
        ax.text(t_s / 60.0, ax.get_ylim()[1], f"v{version}", rotation=90, va="top", fontsize=7)
    ax.set_xlabel("simulated time (min)")
    ax.set_ylabel(f"cumulative progress ({unit})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _listen(prog: Progress, context: Any) -> Any:  # noqa: ANN401  (rclpy objects)
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry

    from simdist_ros import msgs, qos, topics

    node = rclpy.create_node("demo_monitor", context=context)

    def on_diag(msg: DiagnosticArray) -> None:
        for status in msg.status:
            values = msgs.status_values(status)
            if status.name.endswith("sim robot"):
                prog.on_robot(values)
            elif status.name.endswith("planner"):
                prog.on_planner(values)
            elif status.name.endswith("finetuner"):
                prog.finetuner = values

    def on_odom(msg: Odometry) -> None:
        if prog.kind == "odom":
            prog.on_odom_x(msgs.stamp_to_ns(msg.header.stamp) * 1e-9, msg.pose.pose.position.x)

    node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, on_diag, qos.RELIABLE)
    node.create_subscription(Odometry, topics.ODOM, on_odom, qos.SENSOR)
    return node


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``simdist demo``; 0 on a clean run, 1 if a node failed, 2 on bad arguments."""
    args = _parse(list(sys.argv[1:] if argv is None else argv))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    from simdist_ros.graph import load_graph
    from simdist_ros.launcher import GraphProcess, default_checkpoint

    demo = DEMOS[args.robot]
    checkpoint = args.checkpoint or default_checkpoint(args.robot)
    if not (checkpoint / "manifest.json").is_file():
        print(f"simdist demo: no checkpoint at {checkpoint}; train one (`simdist pretrain`) or pass --checkpoint",
              file=sys.stderr)
        return 2
    out = (args.output_dir or Path("runs") / time.strftime(f"demo-{args.robot}-%Y%m%d-%H%M%S", time.gmtime())).resolve()
    task = args.task or demo["task"]
    launch_args = {"sim": "true", "task": task, "checkpoint": str(checkpoint), "output_dir": str(out),
                   "adapt": "false" if args.no_adapt else "true"}
    graph = GraphProcess(load_graph(args.robot), launch_args, log_dir=out / "logs",
                         parameters={"sim_robot": {"real_time_factor": args.rtf, "lockstep": args.lockstep}})
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    prog = Progress(kind=demo["progress"])
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(_listen(prog, context))
    print(f"simdist demo: {args.robot} on {task}, checkpoint {checkpoint}, {args.minutes:g} simulated minutes at "
          f"real-time factor {args.rtf:g}; node logs in {out / 'logs'} (Ctrl-C stops early)", flush=True)
    failed: list[str] = []

    def _terminate(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (timeout, systemd, a launcher) stops the graph like Ctrl-C does

    previous_term = signal.signal(signal.SIGTERM, _terminate)
    try:
        graph.start()
        next_print = time.monotonic() + args.print_every_s
        while prog.sim_time_s < args.minutes * 60.0 and not failed:
            executor.spin_once(timeout_sec=0.1)
            failed = graph.poll()
            if time.monotonic() >= next_print:
                print(_line(prog, demo["unit"]), flush=True)
                next_print += args.print_every_s
    except KeyboardInterrupt:
        print("simdist demo: interrupted (SIGINT/SIGTERM), stopping the graph", flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        codes = graph.stop()
        executor.shutdown()
        rclpy.shutdown(context=context)
    title = f"SimDist demo: {args.robot} on {task} ({'live adaptation' if not args.no_adapt else 'zero-shot'})"
    png = plot_progress(prog, demo["unit"], title, out / "progress.png")
    summary = {"robot": args.robot, "task": task, "checkpoint": str(checkpoint), "sim_time_s": prog.sim_time_s,
               "progress_total": prog.total, "unit": demo["unit"], "swaps": prog.swaps, "planner": prog.planner,
               "finetuner": prog.finetuner, "robot_diagnostics": prog.robot, "exit_codes": codes}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(_line(prog, demo["unit"]))
    print(f"simdist demo: wrote {png} and {out / 'summary.json'}; exit codes {codes}")
    return 1 if failed or any(codes.values()) else 0
