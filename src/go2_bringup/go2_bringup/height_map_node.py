"""Height-map node: Unitree L1 LiDAR PointCloud2 + odometry -> ``height_map`` (32FC1 Image), sim convention.

Graph role (topics relative):
    in   ``cloud_topic`` (sensor_msgs/PointCloud2; the Go2 publishes ``utlidar/cloud`` already in its odometry
         frame, else set ``cloud_in_odom_frame`` false and give the sensor mounting), ``odom``
         (nav_msgs/Odometry, base pose in the same odometry frame)
    out  ``height_map`` (sensor_msgs/Image 32FC1, rows x cols of the Go2 spec, metres, qos.SENSOR)

The grid math is ``go2_bringup.height_map`` (pure numpy, tested without ROS). No map is published until
points and a fresh pose exist: consumers see a stale topic, never an invented flat floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2, PointField
from simdist_ros.params import P, declare_table
from simdist_ros.runtime import run_node

from go2_bringup.height_map import HeightMapConfig, HeightMapper, points_to_world
from simdist_ros import msgs, qos, topics

_POINTFIELD_DTYPES = {PointField.FLOAT32: "f4", PointField.FLOAT64: "f8"}


@dataclass(frozen=True, kw_only=True)
class HeightMapParams:
    """Runtime settings of the height-map node."""

    cloud_topic: str
    publish_hz: float
    window_s: float
    max_odom_age_s: float
    cloud_in_odom_frame: bool
    sensor_xyz_m: tuple[float, ...]
    sensor_rpy_rad: tuple[float, ...]
    frame_id: str

    def __post_init__(self) -> None:
        if len(self.sensor_xyz_m) != 3 or len(self.sensor_rpy_rad) != 3:
            raise ValueError(f"sensor_xyz_m and sensor_rpy_rad need 3 values each, got {self.sensor_xyz_m=}, "
                             f"{self.sensor_rpy_rad=}")


ROWS = (
    P("cloud_topic", "utlidar/cloud", "PointCloud2 input (Go2 L1 LiDAR)", read_only=True),
    P("publish_hz", 50.0, "Height map rate in Hz", lo=1.0, hi=200.0, read_only=True),
    P("window_s", 1.0, "Seconds of clouds accumulated", lo=0.05, hi=10.0, read_only=True),
    P("max_odom_age_s", 0.2, "Odometry older than this stops publishing", lo=0.01, hi=5.0, read_only=True),
    P("cloud_in_odom_frame", True, "Cloud points are already in the odometry frame", read_only=True),
    P("sensor_xyz_m", (0.28945, 0.0, -0.046825), "LiDAR position in the base frame (if not in odom frame)",
      read_only=True),
    P("sensor_rpy_rad", (0.0, 2.8782, 0.0), "LiDAR roll, pitch, yaw in the base frame", read_only=True),
    P("frame_id", "base_yaw", "frame_id of the height map image (yaw-aligned base frame)", read_only=True),
)


def rpy_to_rotmat(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Rotation (3, 3) of fixed-axis roll, pitch, yaw (R = Rz @ Ry @ Rx)."""
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch),
                              math.cos(yaw), math.sin(yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def cloud_to_xyz(msg: PointCloud2) -> np.ndarray:
    """(N, 3) float64 x, y, z of a PointCloud2 (any point layout with float x, y, z fields).

    Raises:
        ValueError: missing x/y/z fields, a non-float type, or a data size that does not match the layout.
    """
    fields = {f.name: f for f in msg.fields}
    missing = [n for n in "xyz" if n not in fields]
    if missing:
        raise ValueError(f"PointCloud2 lacks fields {missing}; has {sorted(fields)}")
    if any(fields[n].datatype not in _POINTFIELD_DTYPES for n in "xyz"):
        raise ValueError("PointCloud2 x/y/z must be FLOAT32 or FLOAT64")
    n = msg.width * msg.height
    if len(msg.data) != msg.row_step * msg.height or msg.point_step * msg.width > msg.row_step:
        raise ValueError(f"PointCloud2 data of {len(msg.data)} B does not fit {msg.height}x{msg.width} points at "
                         f"point_step {msg.point_step}, row_step {msg.row_step}")
    endian = ">" if msg.is_bigendian else "<"
    dtype = np.dtype({"names": list("xyz"), "formats": [endian + _POINTFIELD_DTYPES[fields[k].datatype] for k in "xyz"],
                      "offsets": [fields[k].offset for k in "xyz"], "itemsize": msg.point_step})
    raw = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.row_step)[:, :msg.point_step * msg.width]
    pts = np.ascontiguousarray(raw).view(dtype).reshape(n)
    return np.column_stack([pts["x"], pts["y"], pts["z"]]).astype(np.float64)


class HeightMapNode(Node):
    """Adapter: clouds and odometry in, ``HeightMapper`` grid out."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("height_map", **kwargs)
        self.params = p = declare_table(self, ROWS, HeightMapParams)
        self.mapper = HeightMapper(HeightMapConfig(window_s=p.window_s))
        self._mount_rot = rpy_to_rotmat(*p.sensor_rpy_rad)
        self._mount_pos = np.asarray(p.sensor_xyz_m, dtype=np.float64)
        self._pose: tuple[int, np.ndarray, np.ndarray] | None = None  # (receive ns, pos (3,), quat wxyz (4,))
        self.bad_clouds = 0
        self.create_subscription(PointCloud2, p.cloud_topic, self._on_cloud, qos.SENSOR)
        self.create_subscription(Odometry, topics.ODOM, self._on_odom, qos.SENSOR)
        self._pub = self.create_publisher(Image, topics.HEIGHT_MAP, qos.SENSOR)
        self.create_timer(1.0 / p.publish_hz, self._publish)

    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_odom(self, msg: Odometry) -> None:
        pose = msg.pose.pose
        pos = np.array([pose.position.x, pose.position.y, pose.position.z])
        quat = np.array([pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z])
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat)) and np.linalg.norm(quat) > 0.5):
            self.get_logger().error("odometry with non-finite pose or zero quaternion dropped",
                                    throttle_duration_sec=1.0)
            return
        self._pose = (self.get_clock().now().nanoseconds, pos, quat / np.linalg.norm(quat))

    def _on_cloud(self, msg: PointCloud2) -> None:
        try:
            pts = cloud_to_xyz(msg)
            if not self.params.cloud_in_odom_frame:
                if self._pose is None:
                    return
                _, pos, quat = self._pose
                pts = points_to_world(pts, pos, quat, self._mount_rot, self._mount_pos)
            self.mapper.add_cloud(pts, self._now_s())
        except ValueError as exc:
            self.bad_clouds += 1
            self.get_logger().error(f"bad point cloud dropped ({self.bad_clouds} so far): {exc}",
                                    throttle_duration_sec=1.0)

    def _publish(self) -> None:
        if self._pose is None:
            self.get_logger().warning("no odometry yet: height map not published", throttle_duration_sec=5.0)
            return
        t_ns, pos, quat = self._pose
        now_ns = self.get_clock().now().nanoseconds
        if (now_ns - t_ns) * 1e-9 > self.params.max_odom_age_s:
            self.get_logger().warning("odometry is stale: height map not published", throttle_duration_sec=1.0)
            return
        grid = self.mapper.height_map(pos, quat, now_ns * 1e-9)
        if grid is None:
            self.get_logger().warning("no LiDAR points around the robot: height map not published",
                                      throttle_duration_sec=1.0)
            return
        self._pub.publish(msgs.make_height_map(grid, now_ns, self.params.frame_id))


def main(args: list[str] | None = None) -> int:
    """Entry point ``height_map_node``.

    The shared ``run_node`` handles SIGINT/SIGTERM even when no timer fires, joins the node's threads via
    ``close()`` and only then shuts the context down.
    """
    return run_node(HeightMapNode, args, threads=1)


if __name__ == "__main__":
    raise SystemExit(main())
