"""Input checks shared by the commands that start the node graph (launch, demo, bench soak/graph/parity).

They run before any process starts, and turn a bad task, checkpoint or ``NODE.NAME=VALUE`` into a
one-line :class:`~simdist_core.cliargs.UsageError`. A node parameter is checked against the node's own
parameter table (the ``P`` rows it declares): a misspelt name would otherwise be ignored by ROS without
a word, and an ``int`` given for a ``float`` row would stop the node at start.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simdist_core.cliargs import UsageError, check_choice, did_you_mean

from simdist_ros.graph import Graph, GraphError

GLOBAL_PARAMETERS = ("use_sim_time",)
"""Parameters rclpy declares on every node."""


def parameter_rows(executable: str) -> dict[str, Any]:
    """``{name: P}`` of a node executable's parameter table (module-level tuples of ``simdist_ros.params.P``).

    Raises:
        GraphError: the executable is not installed.
    """
    from simdist_ros.launcher import entry_point
    from simdist_ros.params import P

    module = importlib.import_module(entry_point(executable)[0])
    rows: dict[str, Any] = {}
    for value in vars(module).values():
        if isinstance(value, tuple) and value and all(isinstance(v, P) for v in value):
            rows.update({row.name: row for row in value})
    return rows


def _coerce(option: str, node: str, row: Any, value: Any) -> Any:  # noqa: ANN401  (a YAML scalar, typed like the row)
    """``value`` in the row's type: an int for a float row becomes a float; anything else must already match."""
    want, given = type(row.default), value
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if want is tuple:
        return value
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise UsageError(f"{option} {node}.{row.name}={value!r} is not a {want.__name__} "
                         f"(default {row.default!r}: {row.description})")
    if (row.lo is not None and value < row.lo) or (row.hi is not None and value > row.hi):
        raise UsageError(f"{option} {node}.{row.name}={given!r} is outside [{row.lo}, {row.hi}]")
    return value


def check_node_parameters(graph: Graph, arguments: Mapping[str, str], parameters: Mapping[str, Mapping[str, Any]],
                          option: str = "--set") -> dict[str, dict[str, Any]]:
    """``parameters`` checked against the nodes these launch arguments start and their parameter tables.

    ``option`` is how the command line spells them (``--set``, ``--param``), for the messages.

    Returns:
        The parameters, typed as the nodes declare them.

    Raises:
        UsageError: a node the graph does not start, a parameter the node does not declare, a value of
            the wrong type or out of range (each with the valid choices and the closest one).
    """
    try:
        plan = graph.plan(arguments, parameters)
    except GraphError as exc:
        raise UsageError(str(exc)) from None
    out: dict[str, dict[str, Any]] = {}
    for node, values in parameters.items():
        spec = plan.process(node)
        if spec.external:
            raise UsageError(f"{option} {node}.*: {node} is an external tool; its parameters are not ours to check")
        try:
            rows = parameter_rows(spec.executable)
        except GraphError as exc:
            raise UsageError(str(exc)) from None
        names = sorted([*rows, *GLOBAL_PARAMETERS])
        out[node] = {}
        for name, value in values.items():
            if name not in names:
                raise UsageError(f"{option} {node}.{name}: {node} has no parameter {name!r}; valid: "
                                 f"{', '.join(names)}{did_you_mean(name, names)}")
            out[node][name] = _coerce(option, node, rows[name], value) if name in rows else value
    return out


def check_sim_task(robot: str, task: str) -> str:
    """``task`` if it is a simulated task of ``robot``.

    Raises:
        UsageError: unknown task or another robot's (valid ones and the closest named).
    """
    from simdist_core.sim.base import task_ids

    return check_choice("--task", task, [t for t in task_ids() if t.startswith(robot + "/")], f"a {robot} task")


def checkpoint_or_default(given: Path | None, robot: str) -> Path:
    """The checkpoint a graph command uses: ``--checkpoint``, or the shipped ``checkpoints/<robot>``.

    Raises:
        UsageError: no checkpoint there (says how to get one), or one of another robot.
    """
    from simdist_core.cliargs import checkpoint_dir

    from simdist_ros.launcher import default_checkpoint

    path = given or default_checkpoint(robot)
    if given is None and not (path / "manifest.json").is_file():
        raise UsageError(f"no checkpoint at {path}; train one (`simdist pretrain`) or pass --checkpoint")
    checkpoint_dir("--checkpoint", path)
    try:
        made_for = json.loads((path / "manifest.json").read_text()).get("robot")
    except (OSError, ValueError):
        made_for = None  # an unreadable manifest is the loader's to reject, with its reason
    if made_for not in (None, robot):
        raise UsageError(f"--checkpoint {str(path)!r} is a {made_for} checkpoint, not {robot}")
    return path
