"""SimDist graph for the go2: `ros2 launch go2_bringup simdist.launch.py sim:=true record:=false ...`.

Thin by design (STYLE 22): arguments, nodes, conditions and per-node parameters come from
simdist_ros/graphs/go2.yaml through simdist_ros.launch_description, the same source `simdist launch go2`
uses, so the starters cannot drift. Runtime parameters: go2_bringup/config/go2.yaml.
"""

from simdist_ros.launch_description import graph_launch_description

ROBOT = "go2"


def generate_launch_description():
    return graph_launch_description(ROBOT)
