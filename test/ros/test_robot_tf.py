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
