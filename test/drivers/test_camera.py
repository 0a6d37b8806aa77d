"""Camera node pieces: frame conversion on a synthetic frame, and the missing-device path for real (V4L2)."""

import subprocess
import sys

import numpy as np
import pytest
import rclpy
from rclpy.parameter import Parameter
from ur5e_bringup.camera_node import CameraError, CameraNode, V4l2Camera, frame_to_rgb

from simdist_ros import msgs

MISSING = "/dev/video_simdist_missing"


def test_frame_to_rgb_swaps_channels_and_resizes():
    bgr = np.zeros((48, 64, 3), np.uint8)
    bgr[..., 0] = 200  # blue in OpenCV's BGR
    bgr[:, 32:, 2] = 100  # red on the right half
    rgb = frame_to_rgb(bgr)
    assert rgb.shape == (48, 64, 3)
    assert np.all(rgb[..., 2] == 200) and np.all(rgb[:, :32, 0] == 0) and np.all(rgb[:, 32:, 0] == 100)
    small = frame_to_rgb(bgr, (24, 32))
    assert small.shape == (24, 32, 3) and small[0, 0, 2] == 200 and small[0, -1, 0] == 100
    square = frame_to_rgb(bgr, (16, 16))  # 48x64 -> centre 48x48 (columns 8..55) -> 16x16, no distortion
    assert square.shape == (16, 16, 3)
    assert np.all(square[:, :5, 0] == 0) and np.all(square[:, -5:, 0] == 100)  # the red edge stays central
    msg = msgs.make_rgb8(small, 123, "camera")
    np.testing.assert_array_equal(msgs.rgb8_to_array(msg, (24, 32)), small)
    with pytest.raises(ValueError, match="uint8"):
        frame_to_rgb(np.zeros((4, 4, 3), np.float32))


def test_missing_device_is_reported_with_the_present_devices():
    camera = V4l2Camera(MISSING, 640, 480, 30.0)
    with pytest.raises(CameraError, match="cannot open camera.*devices present"):
        camera.open()


def test_camera_node_fails_to_start_without_a_device():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(CameraError, match=MISSING):
            CameraNode(context=context, parameter_overrides=[Parameter("device", value=MISSING)])
    finally:
        rclpy.shutdown(context=context)


@pytest.mark.timeout(120)
def test_entry_point_exits_nonzero_with_a_message():
    proc = subprocess.run([sys.executable, "-m", "ur5e_bringup.camera_node", "--ros-args", "-p",
                           f"device:={MISSING}"], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 1
    assert "cannot open camera" in proc.stderr + proc.stdout


def _write_video(path, frames=20, hw=(48, 64)):
    import cv2

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (hw[1], hw[0]))
    assert writer.isOpened()
    for k in range(frames):
        frame = np.zeros((*hw, 3), np.uint8)
        frame[..., 2] = 10 * k  # red ramps up frame by frame
        writer.write(frame)
    writer.release()


@pytest.mark.timeout(120)
def test_node_streams_stamped_rgb_frames_then_reports_the_stall(tmp_path):
    """A video file stands in for the camera (OpenCV capture, same reader thread); it ends -> a stall."""
    import threading
    import time

    from sensor_msgs.msg import Image
    from simdist_ros.runtime import make_executor

    from simdist_ros import qos, topics

    video = tmp_path / "clip.avi"
    _write_video(video)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = CameraNode(context=context, parameter_overrides=[
        Parameter("device", value=str(video)), Parameter("capture_api", value="any"),
        Parameter("output_width", value=32), Parameter("output_height", value=24),
        Parameter("stall_timeout_s", value=0.3), Parameter("fps", value=100.0)])
    peer = rclpy.create_node("peer", context=context)
    images = []
    peer.create_subscription(Image, topics.CAMERA_IMAGE, images.append, qos.SENSOR)
    executor = make_executor(context=context)
    executor.add_node(node)
    executor.add_node(peer)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while node.stalls == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert node.stalls >= 1, "a camera that stops delivering frames must be reported"
        assert len(images) >= 1
        stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in images]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), "one stamp per captured frame"
        arr = msgs.rgb8_to_array(images[-1], (24, 32))
        assert arr[..., 0].mean() > arr[..., 2].mean(), "BGR red arrives in the R channel"
    finally:
        executor.shutdown()
        thread.join(timeout=10)
        node.close()
        node.destroy_node()
        peer.destroy_node()
        rclpy.shutdown(context=context)
