"""SimDist ROS 2 nodes."""

# Before any node module's imports (rclpy, torch): when this process is a node executable started by
# `ros2 launch` / `ros2 run`, SIGINT during those imports stops it cleanly (see simdist_ros.boot).
from simdist_ros import boot  # noqa: F401
