"""The drivers of the real graph use exactly their entries in the access-policy table (as the simulated graph's
nodes do in test/ros/test_access_policy.py); the Go2 driver is checked in test_go2_driver_node.py (its fixture)."""

import time

import pytest
import rclpy
from go2_bringup.height_map_node import HeightMapNode
from rclpy.parameter import Parameter
from simdist_ros.access_policy import node_access, observed_access
from test_camera import _write_video
from ur5e_bringup.camera_node import CameraNode
from ur5e_bringup.ur5e_driver_node import Ur5eDriverNode

pytestmark = pytest.mark.timeout(180)


def _observed(peer, name, expected, timeout_s=30.0):
    """The node's endpoints once they equal ``expected`` (discovery is incremental), or the last ones seen."""
    end = time.monotonic() + timeout_s
    seen = observed_access(peer, name)
    while seen != expected and time.monotonic() < end:
        time.sleep(0.1)
        seen = observed_access(peer, name)
    return seen


def _check(robot, make_node):
    context = rclpy.Context()
    rclpy.init(context=context)
    node = None
    try:
        node = make_node(context)
        peer = rclpy.create_node("peer", context=context)
        expected = node_access(robot, node.get_name(), sim=False)
        assert _observed(peer, node.get_name(), expected) == expected
    finally:
        if node is not None:
            getattr(node, "close", lambda: None)()
            node.destroy_node()
        rclpy.shutdown(context=context)


def test_ur5e_driver_uses_exactly_its_grant():
    _check("ur5e", lambda context: Ur5eDriverNode(context=context, parameter_overrides=[
        Parameter("backend", value="mujoco")]))


def test_camera_uses_exactly_its_grant(tmp_path):
    video = tmp_path / "clip.avi"
    _write_video(video)
    _check("ur5e", lambda context: CameraNode(context=context, parameter_overrides=[
        Parameter("device", value=str(video)), Parameter("capture_api", value="any")]))


def test_height_map_uses_exactly_its_grant():
    _check("go2", lambda context: HeightMapNode(context=context))
