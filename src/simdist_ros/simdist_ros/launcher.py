"""``simdist launch <robot>``: start the node graph without ros2launch (which pip cannot install).

Starts the same :class:`~simdist_ros.graph.LaunchPlan` as the ROS launch files: every node as its own
process with ``--ros-args`` (the robot's params file, then a generated overrides file with the plan's
typed parameters, then remappings), forwards SIGINT/SIGTERM, and shuts everything down as ``launch``
does: SIGINT, wait, SIGTERM, wait, SIGKILL. Nothing is restarted silently: a node with
``on_exit: shutdown`` that exits stops the whole graph; one with ``on_exit: log`` is reported, and
restarted after its delay only if the graph says ``respawn: true``.

Exit status: 0 if every node exited 0 after a requested shutdown, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml
from simdist_core.checkpoint_auth import KeyFileError
from simdist_core.cliargs import ArgumentParser, HelpFormatter, UsageError, cli_main

from simdist_ros.graph import (
    KILL_GRACE_S,
    SHUTDOWN_GRACE_S,
    Graph,
    GraphError,
    ProcessSpec,
    create_key_files,
    load_graph,
)
from simdist_ros.secure_launch import secure_plan

# SIGINT is deferred before the node's imports (simdist_ros.boot): a graph stopped while a node is still
# importing gets exit code 0 from it, not a KeyboardInterrupt traceback and -2.
NODE_BOOT = ("import sys; from simdist_ros.boot import defer_stop_signal; defer_stop_signal(); "
             "from {module} import {func} as _m; sys.exit(_m())")


def repo_root() -> Path:
    """The repository root (parent of ``src/``), where ``checkpoints/`` and ``runs/`` live."""
    return Path(__file__).resolve().parents[3]


def default_checkpoint(robot: str) -> Path:
    """The shipped checkpoint of ``robot`` (``checkpoints/<robot>`` at the repo root)."""
    return repo_root() / "checkpoints" / robot


def entry_point(executable: str) -> tuple[str, str]:
    """``(module, function)`` of a console script.

    Raises:
        GraphError: no installed distribution declares it (the message says how to install).
    """
    matches = importlib.metadata.entry_points(group="console_scripts", name=executable)
    for ep in matches:
        module, _, func = ep.value.partition(":")
        return module, func or "main"
    raise GraphError(f"executable {executable!r} is not a console_scripts entry point of any installed package; "
                     "install the ROS packages with `pip install -e src/simdist_ros` (or run scripts/setup_env.sh)")


def node_command(node: ProcessSpec, overrides_file: Path) -> list[str]:
    """The argv that starts ``node`` in a fresh interpreter with its ROS arguments.

    The order is ``launch_ros``'s: params file, then the typed parameters (here one overrides file
    holding every node's section), then remappings.
    """
    module, func = entry_point(node.executable)
    cmd = [sys.executable, "-c", NODE_BOOT.format(module=module, func=func), *node.arguments, "--ros-args",
           "-r", f"__node:={node.name}"]
    if node.params_file is not None:
        cmd += ["--params-file", node.params_file]
    if node.parameters:
        cmd += ["--params-file", str(overrides_file)]
    for src, dst in node.remappings:
        cmd += ["-r", f"{src}:={dst}"]
    return cmd


def write_overrides(nodes: Sequence[ProcessSpec], path: Path) -> Path:
    """One params YAML with every node's graph parameters (typed, unlike ``-p name:=value``)."""
    data = {n.name: {"ros__parameters": dict(n.parameters)} for n in nodes if n.parameters}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=True))
    return path


@dataclass
class _Child:
    node: ProcessSpec
    proc: subprocess.Popen
    log: IO[bytes] | None


class GraphProcess:
    """A running graph: one process per node. Used by ``simdist launch``, the demo and the tests.

    Args:
        graph: the robot's graph.
        arguments: launch-argument values over the graph defaults.
        log_dir: if set, each node's stdout/stderr goes to ``<log_dir>/<node>.log``; else inherited.
        env: extra environment variables for the nodes (e.g. ``ROS_DOMAIN_ID``).
        parameters: extra per-node parameters ``{node: {name: value}}`` over the params file and graph.

    Raises:
        GraphError: a bad launch argument, or parameters for a node the graph does not start.
    """

    def __init__(self, graph: Graph, arguments: Mapping[str, str] | None = None, log_dir: Path | None = None,
                 env: Mapping[str, str] | None = None,
                 parameters: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.graph = graph
        self.plan = graph.plan(arguments, parameters)
        self.arguments = dict(self.plan.arguments)
        self.nodes = [p for p in self.plan.processes if not p.external]
        self.skipped = [p.name for p in self.plan.processes if p.external]
        self.log_dir = log_dir
        self.env = {**os.environ, **(env or {})}
        secure = secure_plan(self.arguments, self.nodes, self.env)  # security:=true, the discovery range
        self.nodes, self.env = secure.nodes, {**self.env, **secure.env}
        self.children: dict[str, _Child] = {}
        self.exit_codes: dict[str, int] = {}
        self.failed: list[str] = []
        self.starts: dict[str, int] = {}
        """How often each node was started (respawns included)."""
        self._respawn_at: dict[str, float] = {}

    def overrides_path(self) -> Path:
        """Where the typed parameters of every node are written (``<output_dir>/launch/``)."""
        run_dir = Path(self.arguments.get("output_dir") or Path.cwd() / "runs") / "launch"
        return run_dir / f"{self.graph.robot}_overrides.yaml"

    def start(self) -> None:
        """Start every node (in file order), each in its own session so signals are ours to forward."""
        overrides = write_overrides(self.nodes, self.overrides_path())
        create_key_files(self.nodes)  # before any node starts: planner and finetuner read it at start
        for node in self.nodes:
            self.start_node(node.name, overrides)

    def start_node(self, name: str, overrides: Path | None = None) -> None:
        """Start (or restart, explicitly) one node by name."""
        node = next(n for n in self.nodes if n.name == name)
        overrides = overrides or write_overrides(self.nodes, self.overrides_path())
        cmd = node_command(node, overrides)
        log = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log = (self.log_dir / f"{node.name}.log").open("ab")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT if log else None, env=self.env,
                                start_new_session=True)
        self.children[name] = _Child(node, proc, log)
        self.exit_codes.pop(name, None)
        self.starts[name] = self.starts.get(name, 0) + 1

    def poll(self) -> list[str]:
        """Collect nodes that exited on their own; returns the names of those that should stop the graph.

        A node with ``respawn`` is started again once its delay has passed (as ``launch`` does).
        """
        fatal = []
        now = time.monotonic()
        for name, child in list(self.children.items()):
            code = child.proc.poll()
            if code is None or name in self.exit_codes:
                continue
            self.exit_codes[name] = code
            if name not in self.failed:
                self.failed.append(name)
            if child.log is not None:
                child.log.close()
            node = child.node
            what = f"respawn in {node.respawn_delay_s:g} s" if node.respawn else f"on_exit={node.on_exit}"
            print(f"[simdist launch] node {name} exited with code {code} ({what})", file=sys.stderr, flush=True)
            if child.node.respawn:
                self._respawn_at[name] = now + child.node.respawn_delay_s
            elif child.node.on_exit == "shutdown":
                fatal.append(name)
        for name, due in list(self._respawn_at.items()):
            if now >= due:
                del self._respawn_at[name]
                self.start_node(name)
        return fatal

    def signal_node(self, name: str, sig: int) -> None:
        """Send ``sig`` to one node's process group (tests use it for fault injection)."""
        proc = self.children[name].proc
        if proc.poll() is None:
            os.killpg(proc.pid, sig)

    def escalation_s(self) -> tuple[float, float]:
        """(SIGINT to SIGTERM, SIGTERM to SIGKILL) waits of a stop: the plan's, as ``ros2 launch`` uses them."""
        return (max([n.sigterm_after_s for n in self.nodes], default=SHUTDOWN_GRACE_S),
                max([n.sigkill_after_s for n in self.nodes], default=KILL_GRACE_S))

    def stop(self, grace_s: float | None = None) -> dict[str, int]:
        """SIGINT every running node, then SIGTERM, then SIGKILL; returns ``{node: exit code}``.

        The waits are the plan's (``sigterm_after_s``, ``sigkill_after_s``), as ``ros2 launch`` waits;
        ``grace_s`` replaces the first.
        """
        self._respawn_at.clear()
        term_after, kill_after = self.escalation_s()
        term_after = term_after if grace_s is None else grace_s
        for sig, wait_s in ((signal.SIGINT, term_after), (signal.SIGTERM, kill_after), (signal.SIGKILL, 5.0)):
            running = [c for c in self.children.values() if c.proc.poll() is None]
            if not running:
                break
            for child in reversed(running):  # learners and planner first, the robot last
                try:
                    os.killpg(child.proc.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and any(c.proc.poll() is None for c in running):
                time.sleep(0.05)
            if sig != signal.SIGINT:
                print(f"[simdist launch] escalated to {signal.Signals(sig).name} for "
                      f"{[c.node.name for c in running]}", file=sys.stderr, flush=True)
        for name, child in self.children.items():
            self.exit_codes.setdefault(name, child.proc.wait())
            if child.log is not None and not child.log.closed:
                child.log.close()
        return dict(self.exit_codes)

    def alive(self) -> bool:
        """Whether a node still runs or waits for its respawn (``launch`` ends when none does)."""
        return bool(self._respawn_at) or any(c.proc.poll() is None for c in self.children.values())

    def run(self, duration_s: float | None = None) -> int:
        """Start, supervise until SIGINT/SIGTERM, a fatal node exit, every node gone, or ``duration_s``; stop.

        Returns:
            The exit status: 0 if every node exited 0 after a requested stop, 1 otherwise.
        """
        stop_requested: list[int] = []

        def _request(signum: int, _frame: Any) -> None:  # noqa: ANN401
            stop_requested.append(signum)

        old = {s: signal.signal(s, _request) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            t_end = None if duration_s is None else time.monotonic() + duration_s
            fatal: list[str] = []
            while not stop_requested and not fatal and (t_end is None or time.monotonic() < t_end):
                fatal = self.poll()
                if not fatal and not self.alive():
                    break
                time.sleep(0.1)
        finally:
            codes = self.stop()
            for sig, handler in old.items():
                signal.signal(sig, handler)
        clean = not self.failed and all(code == 0 for code in codes.values())
        print(f"[simdist launch] exit codes: {json.dumps(codes)}", file=sys.stderr, flush=True)
        return 0 if clean else 1


class _Formatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown, and the launch-argument table of the epilog kept as written."""


def _parser(graph: Graph | None) -> argparse.ArgumentParser:
    p = ArgumentParser(prog="simdist launch", description=__doc__.split("\n\n")[0], formatter_class=_Formatter)
    p.add_argument("robot", help="robot name (go2, ur5e) or a graph YAML path")
    p.add_argument("--sim", action="store_true", help="simulated robot (sim:=true; the default)")
    p.add_argument("--real", action="store_true", help="the real robot driver (sim:=false)")
    p.add_argument("--record", action="store_true", help="record a rosbag2 (record:=true)")
    p.add_argument("--no-adapt", action="store_true", help="no replay buffer / finetuner (adapt:=false)")
    p.add_argument("--task", help="simulated task id (task:=...)")
    p.add_argument("--checkpoint", help="checkpoint directory (checkpoint:=...)")
    p.add_argument("--output-dir", help="output directory (output_dir:=...)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="any launch argument, as ros2 launch's NAME:=VALUE (see the list below)")
    p.add_argument("--param", action="append", default=[], metavar="NODE.NAME=VALUE",
                   help="override a node parameter (YAML value), e.g. sim_robot.real_time_factor=0.5")
    p.add_argument("--duration-s", type=float, help="stop after this many seconds")
    p.add_argument("--log-dir", type=Path, help="write each node's output to <log-dir>/<node>.log")
    p.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    if graph is not None:
        width = max(len(a.name) for a in graph.arguments)
        rows = [f"  {a.name:<{width}}  {' | '.join(a.choices) if a.choices else 'text'}, default "
                f"{a.default!r}: {a.description}" for a in graph.arguments]
        p.epilog = (f"launch arguments of {graph.robot} (the same as `ros2 launch {graph.bringup_package} "
                    "simdist.launch.py NAME:=VALUE`; set with --arg NAME=VALUE or the shortcuts above):\n"
                    + "\n".join(rows))
    return p


def _graph_for_help(argv: list[str]) -> Graph | None:
    """The graph named by the first positional argument, so ``--help`` can list its launch arguments."""
    robot = next((a for a in argv if not a.startswith("-")), None)
    try:
        return load_graph(robot) if robot else None
    except (GraphError, OSError):
        return None  # the real parse reports a bad robot


def _arguments(ns: argparse.Namespace) -> dict[str, str]:
    args: dict[str, str] = {}
    for pair in ns.arg:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--arg {pair!r} is not NAME=VALUE (e.g. --arg rviz=true)")
        args[key] = value
    if ns.sim and ns.real:
        raise UsageError("--sim and --real exclude each other")
    if ns.sim or ns.real:
        args["sim"] = "true" if ns.sim else "false"
    if ns.record:
        args["record"] = "true"
    if ns.no_adapt:
        args["adapt"] = "false"
    for key in ("task", "checkpoint", "output_dir"):
        if getattr(ns, key):
            args[key] = getattr(ns, key)
    return args


def _parameters(pairs: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        node, dot, name = key.partition(".")
        if not sep or not dot or not node or not name:
            raise UsageError(f"--param {pair!r} is not NODE.NAME=VALUE (e.g. sim_robot.real_time_factor=0.5)")
        out.setdefault(node, {})[name] = yaml.safe_load(value)
    return out


def validate_task(graph: Graph, arguments: Mapping[str, str]) -> None:
    """A simulated graph's ``task`` argument names a task of the graph's robot.

    Raises:
        UsageError: unknown task (the valid ones and the closest are named) or another robot's task.
    """
    from simdist_core.sim.base import check_task

    task = arguments.get("task")
    if task is None or arguments.get("sim", graph.defaults().get("sim")) == "false":
        return
    try:
        check_task(task)
    except KeyError as exc:
        raise UsageError(str(exc)) from None
    if task.split("/")[0] != graph.robot:
        raise UsageError(f"--task {task!r} is not a {graph.robot} task")


@cli_main("simdist launch")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist launch``."""
    from simdist_ros.cli_checks import check_node_parameters

    ns = _parser(_graph_for_help(argv)).parse_args(argv)
    try:
        graph = load_graph(ns.robot)
        arguments = _arguments(ns)
        validate_task(graph, {**graph.defaults(), **arguments})
        parameters = check_node_parameters(graph, arguments, _parameters(ns.param), "--param")
        proc = GraphProcess(graph, arguments, log_dir=ns.log_dir, parameters=parameters)
        commands = [node_command(node, proc.overrides_path()) for node in proc.nodes]  # every executable installed
    except GraphError as exc:
        raise UsageError(str(exc)) from None
    if ns.duration_s is not None and ns.duration_s <= 0:
        raise UsageError(f"--duration-s {ns.duration_s:g} must be > 0")
    if proc.skipped:
        print(f"[simdist launch] not started (external tools, use ros2 launch): {proc.skipped}", file=sys.stderr)
    if ns.dry_run:
        for cmd in commands:
            print(" ".join(cmd))
        return 0
    try:
        return proc.run(ns.duration_s)
    except KeyFileError as exc:  # an unsafe key file left from an earlier run: say how to fix it, start nothing
        print(f"simdist launch: {exc}", file=sys.stderr)
        return 2
