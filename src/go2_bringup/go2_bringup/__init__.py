"""Unitree Go2 bringup: driver and helpers."""

# Before any node module's imports (rclpy, torch): when this process is a node executable started by
# `ros2 launch` / `ros2 run`, SIGINT during those imports stops it cleanly (see simdist_ros.boot).
import simdist_ros.boot  # noqa: F401
