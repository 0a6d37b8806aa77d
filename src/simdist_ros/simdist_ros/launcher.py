"""``simdist launch <robot>``: start the node graph without ros2launch (which pip cannot install).

Reads the same graph YAML as the ROS launch files (:mod:`simdist_ros.graph`), starts every node as
its own process with ``--ros-args`` (the robot's params file, then a generated overrides file with
the graph's parameters, then remappings), forwards SIGINT/SIGTERM, and shuts everything down
cleanly: SIGINT, wait, SIGTERM, wait, SIGKILL. Nothing is restarted silently: a node with
``on_exit: shutdown`` that exits stops the whole graph; one with ``on_exit: log`` is reported.

Exit status: 0 if every node exited 0 after a requested shutdown, 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
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

from simdist_ros.graph import Graph, GraphError, ResolvedNode, create_key_files, load_graph
from simdist_ros.secure_launch import launch_plan

_BOOT = "import sys; from {module} import {func} as _m; sys.exit(_m())"


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


def node_command(node: ResolvedNode, params_file: Path | None, overrides_file: Path) -> list[str]:
    """The argv that starts ``node`` in a fresh interpreter with its ROS arguments."""
    module, func = entry_point(node.executable)
    cmd = [sys.executable, "-c", _BOOT.format(module=module, func=func), *node.arguments, "--ros-args",
           "-r", f"__node:={node.name}"]
    if params_file is not None and params_file.is_file():
        cmd += ["--params-file", str(params_file)]
    cmd += ["--params-file", str(overrides_file)]
    for src, dst in node.remappings:
        cmd += ["-r", f"{src}:={dst}"]
    return cmd


def write_overrides(nodes: Sequence[ResolvedNode], path: Path) -> Path:
    """One params YAML with every node's graph parameters (typed, unlike ``-p name:=value``)."""
    data = {n.name: {"ros__parameters": dict(n.parameters)} for n in nodes if n.parameters}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=True))
    return path


@dataclass
class _Child:
    node: ResolvedNode
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
    """

    def __init__(self, graph: Graph, arguments: Mapping[str, str] | None = None, log_dir: Path | None = None,
                 env: Mapping[str, str] | None = None,
                 parameters: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.graph = graph
        self.arguments = dict(arguments or {})
        if "checkpoint" in graph.defaults() and not self.arguments.get("checkpoint"):
            self.arguments["checkpoint"] = str(default_checkpoint(graph.robot))
        if "output_dir" in graph.defaults():
            out = Path(self.arguments.get("output_dir") or graph.defaults()["output_dir"])
            self.arguments["output_dir"] = str(out if out.is_absolute() else Path.cwd() / out)
        extra = {k: dict(v) for k, v in (parameters or {}).items()}
        resolved = graph.resolve(self.arguments)
        unknown = set(extra) - {n.name for n in resolved}
        if unknown:
            raise GraphError(f"parameters for nodes {sorted(unknown)} that this graph does not start; "
                             f"nodes: {[n.name for n in resolved]}")
        self.nodes = [dataclasses.replace(n, parameters={**n.parameters, **extra.get(n.name, {})})
                      for n in resolved if not n.external]
        self.skipped = [n.name for n in graph.resolve(self.arguments) if n.external]
        self.log_dir = log_dir
        self.env = {**os.environ, **(env or {})}
        plan = launch_plan(graph.argument_values(self.arguments), self.nodes, self.env)  # security, discovery
        self.nodes, self.env = plan.nodes, {**self.env, **plan.env}
        self.children: dict[str, _Child] = {}
        self.exit_codes: dict[str, int] = {}
        self.failed: list[str] = []

    def start(self) -> None:
        """Start every node (in file order), each in its own session so signals are ours to forward."""
        run_dir = Path(self.arguments.get("output_dir", Path.cwd() / "runs")) / "launch"
        overrides = write_overrides(self.nodes, run_dir / f"{self.graph.robot}_overrides.yaml")
        params_file = self.graph.params_file_path()
        create_key_files(self.nodes)  # before any node starts: planner and finetuner read it at start
        for node in self.nodes:
            self.start_node(node.name, params_file, overrides)

    def start_node(self, name: str, params_file: Path | None = None, overrides: Path | None = None) -> None:
        """Start (or restart, explicitly) one node by name."""
        node = next(n for n in self.nodes if n.name == name)
        run_dir = Path(self.arguments.get("output_dir", Path.cwd() / "runs")) / "launch"
        overrides = overrides or write_overrides(self.nodes, run_dir / f"{self.graph.robot}_overrides.yaml")
        cmd = node_command(node, params_file or self.graph.params_file_path(), overrides)
        log = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log = (self.log_dir / f"{node.name}.log").open("ab")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT if log else None, env=self.env,
                                start_new_session=True)
        self.children[name] = _Child(node, proc, log)
        self.exit_codes.pop(name, None)

    def poll(self) -> list[str]:
        """Collect nodes that exited on their own; returns the names of those that should stop the graph."""
        fatal = []
        for name, child in list(self.children.items()):
            code = child.proc.poll()
            if code is None or name in self.exit_codes:
                continue
            self.exit_codes[name] = code
            self.failed.append(name)
            print(f"[simdist launch] node {name} exited with code {code} (on_exit={child.node.on_exit})",
                  file=sys.stderr, flush=True)
            if child.node.on_exit == "shutdown":
                fatal.append(name)
        return fatal

    def signal_node(self, name: str, sig: int) -> None:
        """Send ``sig`` to one node's process group (tests use it for fault injection)."""
        proc = self.children[name].proc
        if proc.poll() is None:
            os.killpg(proc.pid, sig)

    def stop(self, grace_s: float = 20.0) -> dict[str, int]:
        """SIGINT every running node, then SIGTERM, then SIGKILL; returns ``{node: exit code}``."""
        for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
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
            if child.log is not None:
                child.log.close()
        return dict(self.exit_codes)

    def run(self, duration_s: float | None = None) -> int:
        """Start, supervise until SIGINT/SIGTERM, a fatal node exit or ``duration_s``; stop; exit status."""
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
                time.sleep(0.1)
        finally:
            codes = self.stop()
            for sig, handler in old.items():
                signal.signal(sig, handler)
        clean = not self.failed and all(code == 0 for code in codes.values())
        print(f"[simdist launch] exit codes: {json.dumps(codes)}", file=sys.stderr, flush=True)
        return 0 if clean else 1


def _parser(graph: Graph | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simdist launch", description=__doc__.split("\n\n")[0])
    p.add_argument("robot", help="robot name (graph YAML in simdist_ros/graphs/) or a graph YAML path")
    p.add_argument("--sim", action="store_true", help="simulated robot (sim:=true; the default)")
    p.add_argument("--real", action="store_true", help="the real robot driver (sim:=false)")
    p.add_argument("--record", action="store_true", help="record a rosbag2 (record:=true)")
    p.add_argument("--no-adapt", action="store_true", help="no replay buffer / finetuner (adapt:=false)")
    p.add_argument("--task", help="simulated task id (task:=...)")
    p.add_argument("--checkpoint", help="checkpoint directory (checkpoint:=...)")
    p.add_argument("--output-dir", help="output directory (output_dir:=...)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="any other launch argument")
    p.add_argument("--param", action="append", default=[], metavar="NODE.NAME=VALUE",
                   help="override a node parameter (YAML value), e.g. sim_robot.real_time_factor=0.5")
    p.add_argument("--duration-s", type=float, help="stop after this many seconds")
    p.add_argument("--log-dir", type=Path, help="write each node's output to <log-dir>/<node>.log")
    p.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    if graph is not None:
        p.epilog = "launch arguments: " + "; ".join(f"{a.name} (default {a.default!r}): {a.description}"
                                                    for a in graph.arguments)
    return p


def _arguments(ns: argparse.Namespace) -> dict[str, str]:
    args: dict[str, str] = {}
    for pair in ns.arg:
        key, sep, value = pair.partition("=")
        if not sep:
            raise GraphError(f"--arg {pair!r} is not NAME=VALUE")
        args[key] = value
    if ns.sim and ns.real:
        raise GraphError("--sim and --real exclude each other")
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
            raise GraphError(f"--param {pair!r} is not NODE.NAME=VALUE (e.g. sim_robot.real_time_factor=0.5)")
        out.setdefault(node, {})[name] = yaml.safe_load(value)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``simdist launch``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = _parser(None).parse_args(argv)
    try:
        graph = load_graph(ns.robot)
        proc = GraphProcess(graph, _arguments(ns), log_dir=ns.log_dir, parameters=_parameters(ns.param))
    except (GraphError, KeyError) as exc:
        print(f"simdist launch: {exc}", file=sys.stderr)
        return 2
    if proc.skipped:
        print(f"[simdist launch] not started (external tools, use ros2 launch): {proc.skipped}", file=sys.stderr)
    if ns.dry_run:
        overrides = Path(proc.arguments["output_dir"]) / "launch" / f"{graph.robot}_overrides.yaml"
        for node in proc.nodes:
            print(" ".join(node_command(node, graph.params_file_path(), overrides)))
        return 0
    try:
        return proc.run(ns.duration_s)
    except KeyFileError as exc:  # an unsafe key file left from an earlier run: say how to fix it, start nothing
        print(f"simdist launch: {exc}", file=sys.stderr)
        return 2
