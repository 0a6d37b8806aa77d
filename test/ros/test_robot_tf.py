"""tf2_msgs built by scripts/gen_tf2_msgs.py, and the transforms RobotTf publishes."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from simdist_core.sim.robot_frames import robot_frames
from simdist_ros.robot_tf import TFMessage, tf_available, to_msg

from simdist_ros import msgs

ROOT = Path(__file__).resolve().parents[2]


def test_gen_tf2_msgs_is_idempotent():
    """setup_env.sh runs it every time: once tf2_msgs imports it returns at once and changes nothing."""
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_tf2_msgs.py")], capture_output=True,
                            text=True, check=False)  # fmt: skip
    if not tf_available():
        pytest.skip(f"tf2_msgs could not be built here: {result.stderr[-500:]}")
    assert result.returncode == 0 and "already importable" in result.stdout, result.stdout + result.stderr


@pytest.mark.skipif(not tf_available(), reason="tf2_msgs not importable (scripts/gen_tf2_msgs.py)")
def test_frame_transforms_survive_serialisation():
    """A Go2 TF message as the sim publishes it: CDR round trip keeps every frame, stamp and number."""
    frames = robot_frames("go2")
    q = np.random.default_rng(0).uniform(-0.5, 0.5, 12)
    transforms = frames.base_transforms(np.array([1.0, 2.0, 0.3]), np.array([0.9, 0.1, 0.0, 0.42]))
    transforms += frames.joint_transforms(q)
    msg = TFMessage(transforms=[to_msg(t, 1_234_567_890) for t in transforms])
    back = deserialize_message(serialize_message(msg), TFMessage)
    assert [(t.header.frame_id, t.child_frame_id) for t in back.transforms] == [(t.parent, t.child) for t in transforms]
    for got, want in zip(back.transforms, transforms, strict=True):
        assert msgs.stamp_to_ns(got.header.stamp) == 1_234_567_890
        r, p = got.transform.rotation, got.transform.translation
        np.testing.assert_allclose([p.x, p.y, p.z], want.translation)
        np.testing.assert_allclose([r.w, r.x, r.y, r.z], want.quat_wxyz)


@pytest.mark.skipif(not tf_available(), reason="tf2_msgs not importable (scripts/gen_tf2_msgs.py)")
def test_tf_is_built_only_while_someone_subscribes():
    """Without a /tf subscriber ``publish`` computes nothing; once one is matched every sample reaches it."""
    import time

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from simdist_ros.robot_tf import TF_QOS, RobotTf

    from simdist_ros import topics

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = Node("tf_on_demand", namespace="/tf_on_demand_test", context=context)
        robot_tf = RobotTf(node, "go2")
        built = []
        joint_transforms = robot_tf.frames.joint_transforms
        robot_tf.frames.joint_transforms = lambda q: built.append(1) or joint_transforms(q)
        q = np.zeros(12)
        robot_tf.publish(1, q, (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])))
        assert built == [], "no subscriber: nothing built"
        got = []
        node.create_subscription(TFMessage, topics.TF, got.append, TF_QOS)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 10.0
        while robot_tf._tf.get_subscription_count() == 0 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        for k in range(3):
            robot_tf.publish(2 + k, q, (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])))
        while len(got) < 3 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert len(built) == 3 and [msgs.stamp_to_ns(m.transforms[0].header.stamp) for m in got] == [2, 3, 4]
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
