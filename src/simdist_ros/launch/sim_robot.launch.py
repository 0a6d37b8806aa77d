"""Only the simulated robot (MuJoCo behind the driver topics).

`ros2 launch simdist_ros sim_robot.launch.py task:=go2/flat`.

Useful to drive the graph from another machine or to test a driver-facing node alone.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("task", default_value="go2/foam",  # the graph YAML's default task
                              description="simulated task id (`simdist config show` lists them)"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0", description="sim seconds per wall second"),
        Node(package="simdist_ros", executable="sim_robot_node", name="sim_robot", output="screen",
             parameters=[{"task": LaunchConfiguration("task"), "use_sim_time": False,
                          "real_time_factor": LaunchConfiguration("real_time_factor")}]),
    ])
