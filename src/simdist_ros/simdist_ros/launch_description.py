"""The ROS 2 launch description of one robot's SimDist graph, built from ``graphs/<robot>.yaml``.

Each bringup's ``simdist.launch.py`` is a two-line call into here. The nodes come from the same
:class:`~simdist_ros.graph.LaunchPlan` that ``simdist launch`` (``launcher.py``) starts, translated
field by field by :func:`node_kwargs`: params file then typed parameters, remappings, arguments,
``on_exit: shutdown`` as a ``Shutdown`` action on the node's exit, ``respawn`` and the shutdown
escalation times. The graph's key files (``graph.create_key_files``: the owner-only key the planner
and finetuner share) are created before any node starts. ``launch``/``launch_ros`` are imported inside
the functions: they exist only on full ROS installs, and this module must stay importable (and its
translation testable) without them.
"""

from __future__ import annotations

import os
from typing import Any

from simdist_ros.graph import ProcessSpec, create_key_files, load_graph
from simdist_ros.secure_launch import secure_plan


def node_kwargs(spec: ProcessSpec) -> dict[str, Any]:
    """Keyword arguments of ``launch_ros.actions.Node`` for one planned process, ``on_exit`` excepted.

    ``on_exit`` needs a ``launch`` action object; :func:`_node` adds it. Timeouts are strings because
    ``launch`` takes them as substitutions.
    """
    parameters: list[Any] = [spec.params_file] if spec.params_file else []
    if spec.parameters:
        parameters.append(spec.parameters)
    return {
        "package": spec.package,
        "executable": spec.executable,
        "name": spec.name,
        "output": "screen",
        "arguments": list(spec.arguments),
        "parameters": parameters,
        "remappings": [tuple(r) for r in spec.remappings],
        "respawn": spec.respawn,
        "respawn_delay": spec.respawn_delay_s if spec.respawn else None,
        "sigterm_timeout": str(spec.sigterm_after_s),
        "sigkill_timeout": str(spec.sigkill_after_s),
    }


def graph_launch_description(robot: str) -> Any:  # noqa: ANN401 (launch.LaunchDescription, not importable here)
    """Launch arguments from the graph YAML, then the nodes the chosen argument values select."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    graph = load_graph(robot)
    arguments = [
        DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                              **({"choices": list(a.choices)} if a.choices else {}))  # fmt: skip
        for a in graph.arguments
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=_graph_nodes, args=[robot])])


def _graph_nodes(context: Any, robot: str) -> list[Any]:  # noqa: ANN401
    """The ``Node`` actions for the argument values of this launch (``OpaqueFunction`` callback)."""
    from launch.substitutions import LaunchConfiguration

    graph = load_graph(robot)
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in graph.arguments}
    plan = graph.plan(values)
    secure = secure_plan(plan.arguments, plan.processes, os.environ)  # security:=true, the discovery range
    create_key_files(list(plan.processes))  # the planner/finetuner key (owner-only) exists before any node starts
    return [_node(spec, secure.env) for spec in secure.nodes]


def _node(spec: ProcessSpec, env: dict[str, str]) -> Any:  # noqa: ANN401  (launch_ros.actions.Node)
    """One ``Node`` with ``env`` added to its environment; ``on_exit: shutdown`` becomes a ``Shutdown`` action."""
    from launch.actions import Shutdown
    from launch_ros.actions import Node

    on_exit = [Shutdown(reason=f"node {spec.name} exited (on_exit: shutdown)")] if spec.on_exit == "shutdown" else None
    return Node(**node_kwargs(spec), on_exit=on_exit, additional_env=env or None)
