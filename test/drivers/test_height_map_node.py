"""The height-map node in a real rclpy graph: synthetic PointCloud2 + odometry in, 32FC1 height map out."""

import threading
import time

import numpy as np
import pytest
import rclpy
from go2_bringup.height_map_node import HeightMapNode, cloud_to_xyz, rpy_to_rotmat
from nav_msgs.msg import Odometry
from rclpy.parameter import Parameter
from sensor_msgs.msg import Image, PointCloud2, PointField
from simdist_core.robots import GO2
from simdist_ros.runtime import make_executor

from simdist_ros import msgs, qos, topics

pytestmark = pytest.mark.timeout(120)


def _make_cloud(points, pad=4):
    """PointCloud2 with x, y, z float32 and ``pad`` extra bytes per point (like the L1's intensity/ring)."""
    step = 12 + pad
    raw = np.zeros((len(points), step), np.uint8)
    raw[:, :12] = np.ascontiguousarray(points, dtype="<f4").view(np.uint8).reshape(len(points), 12)
    fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1) for i, n in enumerate("xyz")]
    return PointCloud2(height=1, width=len(points), fields=fields, is_bigendian=False, point_step=step,
                       row_step=step * len(points), data=raw.tobytes(), is_dense=True)


def test_cloud_parsing_and_rotation_helpers():
    pts = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]])
    np.testing.assert_allclose(cloud_to_xyz(_make_cloud(pts)), pts)
    bad = _make_cloud(pts)
    bad.data = bad.data[:-1]
    with pytest.raises(ValueError, match="does not fit"):
        cloud_to_xyz(bad)
    np.testing.assert_allclose(rpy_to_rotmat(0.0, 0.0, np.pi / 2) @ [1, 0, 0], [0, 1, 0], atol=1e-12)


def test_node_publishes_the_flat_ground_map_and_stops_when_odometry_stops():
    context = rclpy.Context()
    rclpy.init(context=context)
    # The executor the nodes run under (``make_executor``), not rclpy's MultiThreadedExecutor: that one busy-spins
    # in this rclpy and held the odometry callback back past 1 s on a loaded CI machine. Odometry may still age
    # 1 s, not the default 0.2 s: this test is about the map, not about the machine.
    node = HeightMapNode(context=context, parameter_overrides=[Parameter("max_odom_age_s", value=1.0)])
    peer = rclpy.create_node("peer", context=context)
    executor = make_executor(context=context)
    executor.add_node(node)
    executor.add_node(peer)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        maps = []
        peer.create_subscription(Image, topics.HEIGHT_MAP, maps.append, qos.SENSOR)
        cloud_pub = peer.create_publisher(PointCloud2, "utlidar/cloud", qos.SENSOR)
        odom_pub = peer.create_publisher(Odometry, topics.ODOM, qos.SENSOR)
        rng = np.random.default_rng(0)
        # 4,000 points (~64 KB): large best-effort samples are fragmented, and one lost fragment drops the whole
        # sample, so a bigger cloud made this test flaky on a loaded machine (1 of 3 maps in 30 s).
        ground = np.column_stack([rng.uniform(-3, 3, (4_000, 2)), np.full(4_000, 0.05)])  # floor at z = 0.05
        odom = Odometry()
        odom.pose.pose.position.z = 0.35
        odom.pose.pose.orientation.w = 1.0
        deadline = time.monotonic() + 60.0
        while len(maps) < 3 and time.monotonic() < deadline:
            odom_pub.publish(odom)
            cloud_pub.publish(_make_cloud(ground))
            time.sleep(0.05)
        assert len(maps) >= 3
        grid = msgs.height_map_to_array(maps[-1], GO2.height_map_shape)
        np.testing.assert_allclose(grid, 0.05 - 0.35, atol=1e-5)
        assert node.bad_clouds == 0
        # Without fresh odometry the node publishes nothing (a stale pose would place the map wrongly).
        stop = time.monotonic()
        while time.monotonic() < stop + 1.5:
            cloud_pub.publish(_make_cloud(ground))
            time.sleep(0.05)
        published = len(maps)
        while time.monotonic() < stop + 3.0:
            cloud_pub.publish(_make_cloud(ground))
            time.sleep(0.05)
        assert len(maps) == published, "a height map was published from odometry older than max_odom_age_s"
    finally:
        executor.shutdown()
        thread.join(timeout=10)
        node.destroy_node()
        peer.destroy_node()
        rclpy.shutdown(context=context)
