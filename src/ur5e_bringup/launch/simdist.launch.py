"""SimDist graph for the ur5e: `ros2 launch ur5e_bringup simdist.launch.py sim:=true record:=false ...`.

Thin by design (STYLE 22): the arguments, nodes, conditions and per-node parameters come from
simdist_ros/graphs/ur5e.yaml through simdist_ros.graph, the same source `simdist launch ur5e` uses,
so the two starters cannot drift. Runtime parameters: ur5e_bringup/config/ur5e.yaml.
"""

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from simdist_ros.graph import load_graph

from launch import LaunchDescription

ROBOT = "ur5e"


def _nodes(context, *args, **kwargs):
    graph = load_graph(ROBOT)
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in graph.arguments}
    params_file = str(graph.params_file_path())
    return [
        Node(
            package=node.package,
            executable=node.executable,
            name=node.name,
            output="screen",
            arguments=list(node.arguments),
            parameters=[params_file, node.parameters] if not node.external else [],
            remappings=list(node.remappings),
        )
        for node in graph.resolve(values)
    ]


def generate_launch_description():
    graph = load_graph(ROBOT)
    arguments = [
        DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                              **({"choices": list(a.choices)} if a.choices else {}))
        for a in graph.arguments
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=_nodes)])
