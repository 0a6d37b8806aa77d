"""Record the SimDist topics of a running graph: `ros2 launch simdist_ros record.launch.py robot:=go2`.

The recorder node writes an mcap rosbag2 (version 9) readable by rosbags, mcap_ros2 and rclpy;
`simdist finetune --bag <bag>` adapts the dynamics from it offline.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="go2", choices=["go2", "ur5e"],
                              description="robot whose default topic set is recorded"),
        DeclareLaunchArgument("output_dir", default_value="runs/bags", description="folder receiving the bag"),
        DeclareLaunchArgument("use_sim_time", default_value="true", choices=["true", "false"],
                              description="stamp with /clock (simulated robot) or wall time"),
        Node(package="simdist_ros", executable="recorder_node", name="recorder", output="screen",
             parameters=[{"robot": LaunchConfiguration("robot"), "output_dir": LaunchConfiguration("output_dir"),
                          "use_sim_time": LaunchConfiguration("use_sim_time")}]),
    ])
