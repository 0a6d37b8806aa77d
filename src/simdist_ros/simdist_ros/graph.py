"""The node graph of one robot, read from ``simdist_ros/graphs/<robot>.yaml`` (no ROS imports here).

Both the ROS launch files (``<robot>_bringup/launch/simdist.launch.py``, through
:mod:`simdist_ros.launch_description`) and the pip starter (``simdist launch``,
:mod:`simdist_ros.launcher`) start exactly the processes of one :class:`LaunchPlan`
(:meth:`Graph.plan`): which nodes, their parameters (params file first, then the graph's typed
parameters), remappings, arguments, what their exit does (``on_exit``), whether they are restarted
(``respawn``) and how long a shutdown waits before escalating. The starters only translate a plan
(into ``launch_ros`` ``Node`` actions, or into processes and a supervisor loop), so they cannot drift.

Schema of a graph YAML (unknown keys are errors)::

    robot: go2                      # a name in simdist_core.robots.ROBOTS
    description: one line
    bringup_package: go2_bringup    # holds config/<params_file> and rviz/
    params_file: go2.yaml           # one section per node name (+ optional "/**" global keys)
    arguments:                      # launch arguments (``name:=value`` / ``--name value``)
      - {name: sim, default: "true", choices: ["true", "false"], description: "..."}
      - {name: output_dir, default: "runs/go2", path: true, description: "..."}  # path: see below
    global_parameters:              # applied to every node before its own parameters
      use_sim_time: $(sim)
    nodes:
      - name: planner               # ROS node name (``-r __node:=planner``)
        package: simdist_ros
        executable: planner_node    # console_scripts entry point of ``package``
        if: sim                     # optional: started only if argument ``sim`` is true
        unless: sim                 # optional: started only if ``sim`` is false
        parameters: {checkpoint: $(checkpoint)}
        remappings: {from: to}
        arguments: []               # extra command-line arguments (external tools such as rviz2)
        external: false             # true: not one of ours (rviz2); the pip starter skips it
        on_exit: shutdown           # shutdown: its exit stops the graph; log: only reported
        respawn: false              # true: restarted after respawn_delay_s (needs on_exit: log)
        respawn_delay_s: 1.0

A ``path: true`` argument is a file or folder: a relative value is made absolute against the
starter's working directory, so every node sees the same place whatever its own; empty stays empty
(the nodes then use their documented default).

``$(name)`` in a string is replaced by the argument's value; a string that is exactly ``$(name)``
with value ``true``/``false`` becomes a bool. ``$(share)`` is the bringup package's share folder.

Key files: a node parameter named in :data:`KEY_FILE_PARAMETERS` (``update_key_file``) names a secret
that nodes share (the planner and the finetuner authenticate model updates with it). Both starters call
:func:`create_key_files` on the resolved nodes before starting any: each such file is created with a
random key, owner-only (mode 0600), or reused if it is already there and safe.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from simdist_core.cliargs import did_you_mean

GRAPHS_DIR = Path(__file__).resolve().parent / "graphs"
_SUBST = re.compile(r"\$\((\w+)\)")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_NODE_KEYS = {"name", "package", "executable", "if", "unless", "parameters", "remappings", "arguments",
              "external", "on_exit", "respawn", "respawn_delay_s"}
KEY_FILE_PARAMETERS = ("update_key_file",)
"""Node parameters that name a shared secret file the starter creates (see the module docstring)."""
_ARGUMENT_KEYS = {"name", "default", "description", "choices", "path"}

SHUTDOWN_GRACE_S = 20.0
"""After SIGINT, how long a stopping graph waits before SIGTERM (the finetuner may be mid-round)."""
KILL_GRACE_S = 5.0
"""After SIGTERM, how long a stopping graph waits before SIGKILL."""
_GRAPH_KEYS = {"robot", "description", "bringup_package", "params_file", "arguments", "global_parameters", "nodes"}


class GraphError(ValueError):
    """A graph YAML or a launch argument is invalid; the message names the file, key and value."""


def check_parameter_value(node: str, name: str, value: Any) -> None:  # noqa: ANN401  (any YAML value)
    """Refuse a parameter value that a ROS 2 params file cannot carry over the robot's parameter file.

    Why: an empty list has no element type, and rcl drops it when it parses the overrides file, so the node keeps
    the value of the file loaded before it (``--set planner.planner_overrides=[]`` left ``prior_weight=100`` in the
    planner while ``simdist bench parity``'s in-process side ran without it).

    Raises:
        GraphError: an empty list, with what to give instead.
    """
    if isinstance(value, list | tuple) and not value:
        raise GraphError(f"{node}.{name}=[]: a ROS 2 params file cannot carry an empty list (rcl drops it and the "
                         f"node keeps its parameter file's value); list the entries you want instead, e.g. "
                         f"planner.planner_overrides=[\"prior_weight=0\"]")


@dataclass(frozen=True, kw_only=True)
class LaunchArgument:
    """One launch argument shared by the launch file and the pip starter."""

    name: str
    """Argument name (``sim``, ``task``, ...)."""
    default: str
    """Default value (launch arguments are strings)."""
    description: str
    """Shown by ``ros2 launch --show-args`` and ``simdist launch --help``."""
    choices: tuple[str, ...] | None = None
    """Allowed values, or None for free text."""
    path: bool = False
    """A file or folder: a relative value is resolved against the starter's working directory."""

    def __post_init__(self) -> None:
        if self.choices is not None and self.default not in self.choices:
            raise GraphError(f"argument {self.name}: default {self.default!r} not in choices {list(self.choices)}")


@dataclass(frozen=True, kw_only=True)
class NodeSpec:
    """One process of the graph, before argument substitution."""

    name: str
    """ROS node name."""
    package: str
    """Package providing ``executable``."""
    executable: str
    """Console-script entry point name."""
    if_arg: str | None = None
    """Start only if this argument is true."""
    unless_arg: str | None = None
    """Start only if this argument is false."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """Parameter overrides (after the params file), values may contain ``$(arg)``."""
    remappings: Mapping[str, str] = field(default_factory=dict)
    """Topic remappings ``from -> to``."""
    arguments: tuple[str, ...] = ()
    """Extra command-line arguments."""
    external: bool = False
    """Not a SimDist executable (e.g. rviz2): the pip starter skips it."""
    on_exit: str = "shutdown"
    """``shutdown`` (its exit stops the whole graph) or ``log`` (reported only)."""
    respawn: bool = False
    """Restart the node ``respawn_delay_s`` after it exits (unless the graph is stopping)."""
    respawn_delay_s: float = 1.0
    """Wait before a respawn."""

    def __post_init__(self) -> None:
        if self.on_exit not in ("shutdown", "log"):
            raise GraphError(f"node {self.name}: on_exit must be 'shutdown' or 'log', got {self.on_exit!r}")
        if self.respawn and self.on_exit == "shutdown":
            # ROS launch runs on_exit actions on every exit, respawned or not: the first exit would stop the graph.
            raise GraphError(f"node {self.name}: respawn: true needs on_exit: log (a shutdown exit cannot respawn)")
        if self.respawn_delay_s < 0:
            raise GraphError(f"node {self.name}: respawn_delay_s must be >= 0, got {self.respawn_delay_s}")


@dataclass(frozen=True, kw_only=True)
class ResolvedNode:
    """A node with arguments substituted: what a launcher starts."""

    name: str
    """ROS node name."""
    package: str
    """Package providing ``executable``."""
    executable: str
    """Console-script entry point name."""
    parameters: dict[str, Any]
    """Typed parameter overrides (global parameters first, then the node's own)."""
    remappings: tuple[tuple[str, str], ...]
    """Topic remappings."""
    arguments: tuple[str, ...]
    """Extra command-line arguments."""
    external: bool
    """Not one of ours (skipped by the pip starter)."""
    on_exit: str
    """``shutdown`` or ``log``."""
    respawn: bool = False
    """Restarted after ``respawn_delay_s`` when it exits."""
    respawn_delay_s: float = 1.0
    """Wait before a respawn."""


@dataclass(frozen=True, kw_only=True)
class ProcessSpec:
    """One process exactly as both starters start it: the shared intermediate representation.

    ``launch_description`` turns it into a ``launch_ros.actions.Node``, the pip launcher into a command
    line and a supervisor rule; a test compares the two translations field by field.
    """

    name: str
    """ROS node name (``__node:=``)."""
    package: str
    """Package providing ``executable``."""
    executable: str
    """Console-script entry point name."""
    params_file: str | None
    """The robot's parameter YAML, loaded first (None for external tools, or when the file is absent)."""
    parameters: dict[str, Any]
    """Typed parameters loaded after ``params_file`` (global parameters, the node's, then extra ones)."""
    remappings: tuple[tuple[str, str], ...]
    """Topic remappings ``(from, to)``."""
    arguments: tuple[str, ...]
    """Command-line arguments before ``--ros-args``."""
    external: bool
    """Not a SimDist executable (rviz2): ``ros2 launch`` starts it, the pip starter cannot and skips it."""
    on_exit: str
    """``shutdown``: its exit stops the graph; ``log``: its exit is reported."""
    respawn: bool
    """Restarted ``respawn_delay_s`` after it exits, unless the graph is stopping."""
    respawn_delay_s: float
    """Wait before a respawn."""
    sigterm_after_s: float = SHUTDOWN_GRACE_S
    """On shutdown: SIGINT first, SIGTERM after this."""
    sigkill_after_s: float = KILL_GRACE_S
    """Then SIGKILL after this."""


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """What one start of a graph runs, for given launch arguments (see :meth:`Graph.plan`)."""

    robot: str
    """Robot of the graph."""
    arguments: dict[str, str]
    """Launch-argument values after defaults, checks and path resolution."""
    processes: tuple[ProcessSpec, ...]
    """The processes whose conditions hold, in file order."""

    def process(self, name: str) -> ProcessSpec:
        """The process called ``name``.

        Raises:
            GraphError: no such process in this plan.
        """
        for proc in self.processes:
            if proc.name == name:
                return proc
        raise GraphError(f"no node {name!r} in this plan; nodes: {[p.name for p in self.processes]}")


def _truthy(value: str, what: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise GraphError(f"{what}={value!r} is not a boolean; use true or false")


@dataclass(frozen=True, kw_only=True)
class Graph:
    """A robot's node graph (see the module docstring for the YAML schema)."""

    robot: str
    """Robot name (``simdist_core.robots``)."""
    description: str
    """One line."""
    bringup_package: str
    """Package with ``config/`` and ``rviz/``."""
    params_file: str
    """File name in the bringup package's ``config/``."""
    arguments: tuple[LaunchArgument, ...]
    """Launch arguments."""
    global_parameters: Mapping[str, Any]
    """Parameters set on every node."""
    nodes: tuple[NodeSpec, ...]
    """All nodes, conditional ones included."""
    source: Path | None = None
    """The YAML it was read from."""

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise GraphError(f"{self.source}: duplicate node names {dupes}")
        known = {a.name for a in self.arguments}
        for node in self.nodes:
            for cond in (node.if_arg, node.unless_arg):
                if cond is not None and cond not in known:
                    raise GraphError(f"{self.source}: node {node.name} condition on unknown argument {cond!r}; "
                                     f"arguments: {sorted(known)}")
            for ref in _SUBST.findall(yaml.safe_dump(dict(node.parameters)) + " ".join(node.arguments)):
                if ref not in known and ref != "share":
                    raise GraphError(f"{self.source}: node {node.name} uses $({ref}) but no such argument; "
                                     f"arguments: {sorted(known)}")

    def defaults(self) -> dict[str, str]:
        """Argument name -> default value."""
        return {a.name: a.default for a in self.arguments}

    def argument_values(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """Defaults with ``overrides`` applied and checked against names and choices.

        Raises:
            GraphError: unknown argument (lists the valid ones) or a value outside its choices.
        """
        values = self.defaults()
        by_name = {a.name: a for a in self.arguments}
        for key, value in (overrides or {}).items():
            if key not in by_name:
                raise GraphError(f"unknown launch argument {key!r} for {self.robot}; valid: {sorted(by_name)}"
                                 f"{did_you_mean(key, by_name)}")
            choices = by_name[key].choices
            if choices is not None and str(value) not in choices:
                raise GraphError(f"launch argument {key}={value!r} not in {list(choices)}"
                                 f"{did_you_mean(value, choices)}")
            values[key] = str(value)
        return values

    def plan(self, overrides: Mapping[str, str] | None = None,
             parameters: Mapping[str, Mapping[str, Any]] | None = None, share_dir: str | None = None,
             cwd: Path | None = None) -> LaunchPlan:
        """The processes one start of this graph runs: what ``ros2 launch`` and ``simdist launch`` both start.

        Args:
            overrides: launch-argument values over the defaults.
            parameters: extra per-node parameters ``{node: {name: value}}``, applied last.
            share_dir: what ``$(share)`` expands to (default: :func:`bringup_share_dir`).
            cwd: what relative ``path`` arguments are resolved against (default: the working directory).

        Raises:
            GraphError: a bad argument, or parameters for a node this plan does not start.
        """
        values = self.argument_values(overrides)
        base = Path.cwd() if cwd is None else cwd
        for arg in self.arguments:
            if arg.path and values[arg.name]:
                path = Path(values[arg.name]).expanduser()
                values[arg.name] = str(path if path.is_absolute() else base / path)
        resolved = self.resolve(values, share_dir=share_dir)
        extra = {k: dict(v) for k, v in (parameters or {}).items()}
        names = [n.name for n in resolved]
        unknown = sorted(set(extra) - set(names))
        if unknown:
            raise GraphError(f"parameters for nodes {unknown} that this graph does not start; nodes: {names}"
                             f"{did_you_mean(unknown[0], names)}")
        for node, params in extra.items():
            for name, value in params.items():
                check_parameter_value(node, name, value)
        params_file = self.params_file_path()
        return LaunchPlan(robot=self.robot, arguments=values, processes=tuple(
            ProcessSpec(
                name=n.name, package=n.package, executable=n.executable,
                params_file=str(params_file) if params_file.is_file() and not n.external else None,
                parameters={**n.parameters, **extra.get(n.name, {})}, remappings=n.remappings,
                arguments=n.arguments, external=n.external, on_exit=n.on_exit, respawn=n.respawn,
                respawn_delay_s=n.respawn_delay_s,
            ) for n in resolved))

    def resolve(self, overrides: Mapping[str, str] | None = None, share_dir: str | None = None) -> list[ResolvedNode]:
        """The nodes to start for these argument values, with parameters substituted.

        Args:
            overrides: argument values (strings) over the defaults.
            share_dir: what ``$(share)`` expands to (default: :func:`bringup_share_dir`).

        Returns:
            The nodes whose conditions hold, in file order.
        """
        values = self.argument_values(overrides)
        values["share"] = share_dir if share_dir is not None else str(bringup_share_dir(self.bringup_package))
        out: list[ResolvedNode] = []
        for node in self.nodes:
            if node.if_arg is not None and not _truthy(values[node.if_arg], node.if_arg):
                continue
            if node.unless_arg is not None and _truthy(values[node.unless_arg], node.unless_arg):
                continue
            params = {k: _substitute(v, values) for k, v in {**self.global_parameters, **node.parameters}.items()}
            out.append(ResolvedNode(
                name=node.name, package=node.package, executable=node.executable, parameters=params,
                remappings=tuple((k, str(_substitute(v, values))) for k, v in node.remappings.items()),
                arguments=tuple(str(_substitute(a, values)) for a in node.arguments),
                external=node.external, on_exit=node.on_exit, respawn=node.respawn,
                respawn_delay_s=node.respawn_delay_s,
            ))
        return out

    def params_file_path(self) -> Path:
        """The robot's parameter YAML (``<bringup share>/config/<params_file>``)."""
        return bringup_share_dir(self.bringup_package) / "config" / self.params_file


def _substitute(value: Any, values: Mapping[str, str]) -> Any:  # noqa: ANN401  (YAML scalar or container)
    if isinstance(value, str):
        whole = _SUBST.fullmatch(value)
        if whole:
            text = values[whole.group(1)]
            if text.lower() in ("true", "false"):
                return text.lower() == "true"
            return text
        return _SUBST.sub(lambda m: values[m.group(1)], value)
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    return value


def create_key_files(nodes: list[ResolvedNode] | list[ProcessSpec]) -> list[Path]:
    """Create (or check and reuse) every key file the nodes' parameters name; returns their paths.

    Raises:
        KeyFileError: an existing key file is unsafe (group/world access, a symlink, another owner).
    """
    from simdist_core.checkpoint_auth import create_key_file

    paths = sorted({Path(str(n.parameters[name])).expanduser() for n in nodes for name in KEY_FILE_PARAMETERS
                    if n.parameters.get(name)})
    return [create_key_file(path) for path in paths]


def bringup_share_dir(package: str) -> Path:
    """Where a bringup package's ``config/``, ``launch/`` and ``rviz/`` live.

    A colcon install (``AMENT_PREFIX_PATH`` set) wins; otherwise the source tree of the pip-installed
    package (``src/<package>/``), which is what ``simdist launch`` uses.

    Raises:
        GraphError: the package is neither in an ament prefix nor importable.
    """
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        share = Path(prefix) / "share" / package
        if (share / "config").is_dir():
            return share
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise GraphError(f"package {package!r} not found: source the colcon install or `pip install -e src/{package}`")
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def _parse_node(raw: Mapping[str, Any], source: Path) -> NodeSpec:
    unknown = set(raw) - _NODE_KEYS
    if unknown:
        raise GraphError(f"{source}: node {raw.get('name')!r} has unknown keys {sorted(unknown)}; "
                         f"valid: {sorted(_NODE_KEYS)}")
    for key in ("name", "package", "executable"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise GraphError(f"{source}: every node needs a string {key!r}, got {raw.get(key)!r} in {dict(raw)}")
    return NodeSpec(
        name=raw["name"], package=raw["package"], executable=raw["executable"],
        if_arg=raw.get("if"), unless_arg=raw.get("unless"),
        parameters=dict(raw.get("parameters") or {}), remappings=dict(raw.get("remappings") or {}),
        arguments=tuple(str(a) for a in raw.get("arguments") or ()),
        external=bool(raw.get("external", False)), on_exit=raw.get("on_exit", "shutdown"),
        respawn=bool(raw.get("respawn", False)), respawn_delay_s=float(raw.get("respawn_delay_s", 1.0)),
    )


def parse_graph(data: Mapping[str, Any], source: Path | None = None) -> Graph:
    """Build a :class:`Graph` from parsed YAML.

    Raises:
        GraphError: unknown or missing keys, bad conditions or substitutions.
    """
    if not isinstance(data, Mapping):
        raise GraphError(f"{source}: a graph file must be a mapping, got {type(data).__name__}")
    unknown = set(data) - _GRAPH_KEYS
    missing = {"robot", "bringup_package", "params_file", "nodes"} - set(data)
    if unknown or missing:
        raise GraphError(f"{source}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    for a in data.get("arguments") or ():
        if set(a) - _ARGUMENT_KEYS or "name" not in a:
            raise GraphError(f"{source}: argument {a.get('name')!r} has unknown keys {sorted(set(a) - _ARGUMENT_KEYS)} "
                             f"or no name; valid: {sorted(_ARGUMENT_KEYS)}")
    arguments = tuple(
        LaunchArgument(name=a["name"], default=str(a.get("default", "")), description=a.get("description", ""),
                       choices=tuple(str(c) for c in a["choices"]) if a.get("choices") else None,
                       path=bool(a.get("path", False)))
        for a in data.get("arguments") or ()
    )
    return Graph(
        robot=data["robot"], description=data.get("description", ""), bringup_package=data["bringup_package"],
        params_file=data["params_file"], arguments=arguments,
        global_parameters=dict(data.get("global_parameters") or {}),
        nodes=tuple(_parse_node(n, source) for n in data["nodes"]), source=source,
    )


def graph_path(robot: str) -> Path:
    """The shipped graph YAML of ``robot``.

    Raises:
        GraphError: no graph for that robot (the message lists the available ones).
    """
    path = GRAPHS_DIR / f"{robot}.yaml"
    if not path.is_file():
        available = sorted(p.stem for p in GRAPHS_DIR.glob("*.yaml"))
        raise GraphError(f"no graph for robot {robot!r}; available: {available}{did_you_mean(robot, available)}")
    return path


def load_graph(robot_or_path: str | Path) -> Graph:
    """Load a robot's graph by name (``"go2"``) or from a YAML path."""
    path = Path(robot_or_path)
    if not path.suffix:
        path = graph_path(str(robot_or_path))
    with path.open() as f:
        return parse_graph(yaml.safe_load(f), source=path)


def default_task(robot: str) -> str:
    """The simulated task a robot's graph starts by default (its ``task`` launch argument).

    One default for the demo, the launchers and the graph benchmarks, kept in the graph YAML.
    """
    return load_graph(robot).defaults()["task"]
