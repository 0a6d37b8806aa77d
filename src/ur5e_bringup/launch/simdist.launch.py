"""SimDist graph for the ur5e: `ros2 launch ur5e_bringup simdist.launch.py sim:=true record:=false ...`.

Thin by design (STYLE 22): arguments, nodes, conditions and per-node parameters come from
simdist_ros/graphs/ur5e.yaml through simdist_ros.launch_description, the same source `simdist launch ur5e`
uses, so the starters cannot drift. Runtime parameters: ur5e_bringup/config/ur5e.yaml.
"""

from simdist_ros.launch_description import graph_launch_description

ROBOT = "ur5e"


def generate_launch_description():
    return graph_launch_description(ROBOT)
