"""The node graph of one robot, read from ``simdist_ros/graphs/<robot>.yaml`` (no ROS imports here).

Both the ROS launch files (``<robot>_bringup/launch/simdist.launch.py``) and the pip starter
(``simdist launch``, :mod:`simdist_ros.launcher`) build their processes from :meth:`Graph.resolve`,
so the two cannot drift apart.

Schema of a graph YAML (unknown keys are errors)::

    robot: go2                      # a name in simdist_core.robots.ROBOTS
    description: one line
    bringup_package: go2_bringup    # holds config/<params_file> and rviz/
    params_file: go2.yaml           # one section per node name (+ optional "/**" global keys)
    arguments:                      # launch arguments (``name:=value`` / ``--name value``)
      - {name: sim, default: "true", choices: ["true", "false"], description: "..."}
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

GRAPHS_DIR = Path(__file__).resolve().parent / "graphs"
_SUBST = re.compile(r"\$\((\w+)\)")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_NODE_KEYS = {"name", "package", "executable", "if", "unless", "parameters", "remappings", "arguments",
              "external", "on_exit"}
KEY_FILE_PARAMETERS = ("update_key_file",)
"""Node parameters that name a shared secret file the starter creates (see the module docstring)."""
_GRAPH_KEYS = {"robot", "description", "bringup_package", "params_file", "arguments", "global_parameters", "nodes"}


class GraphError(ValueError):
    """A graph YAML or a launch argument is invalid; the message names the file, key and value."""


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

    def __post_init__(self) -> None:
        if self.on_exit not in ("shutdown", "log"):
            raise GraphError(f"node {self.name}: on_exit must be 'shutdown' or 'log', got {self.on_exit!r}")


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
                raise GraphError(f"unknown launch argument {key!r} for {self.robot}; valid: {sorted(by_name)}")
            choices = by_name[key].choices
            if choices is not None and str(value) not in choices:
                raise GraphError(f"launch argument {key}={value!r} not in {list(choices)}")
            values[key] = str(value)
        return values

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
                external=node.external, on_exit=node.on_exit,
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


def create_key_files(nodes: list[ResolvedNode]) -> list[Path]:
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
    arguments = tuple(
        LaunchArgument(name=a["name"], default=str(a.get("default", "")), description=a.get("description", ""),
                       choices=tuple(str(c) for c in a["choices"]) if a.get("choices") else None)
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
        raise GraphError(f"no graph for robot {robot!r}; available: {available}")
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
