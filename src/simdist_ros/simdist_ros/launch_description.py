"""The ROS 2 launch description of one robot's SimDist graph, built from ``graphs/<robot>.yaml``.

Each bringup's ``simdist.launch.py`` is a two-line call into here, so both robots' launch files, and
``simdist launch`` (``launcher.py``) for pip installs without ``launch``, start the same node graph
from the same description, and both create the graph's key files (``graph.create_key_files``: the
owner-only key the planner and finetuner share) before any node starts. ``launch``/``launch_ros`` are
imported inside the functions: they exist
only on full ROS installs, and this module must stay importable (and testable) without them.
"""

from __future__ import annotations

import os
from typing import Any

from simdist_ros.graph import create_key_files, load_graph
from simdist_ros.secure_launch import launch_plan


def graph_launch_description(robot: str) -> Any:  # noqa: ANN401 (launch.LaunchDescription, not importable here)
    """Launch arguments from the graph YAML, then the nodes the chosen argument values select."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    from launch import LaunchDescription

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
    from launch_ros.actions import Node

    graph = load_graph(robot)
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in graph.arguments}
    params_file = str(graph.params_file_path())
    resolved = graph.resolve(values)
    plan = launch_plan(graph.argument_values(values), resolved, os.environ)  # security:=true, discovery range
    create_key_files(resolved)  # the planner/finetuner key (owner-only) exists before any node starts
    return [
        Node(
            package=node.package,
            executable=node.executable,
            name=node.name,
            output="screen",
            arguments=list(node.arguments),
            parameters=[params_file, node.parameters] if not node.external else [],
            remappings=list(node.remappings),
            additional_env=plan.env,
        )
        for node in plan.nodes
    ]
