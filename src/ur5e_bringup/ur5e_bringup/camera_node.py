"""Camera node: a V4L2 camera (OpenCV) -> ``camera/image_raw`` (sensor_msgs/Image rgb8), stamped at capture.

A worker thread blocks on ``VideoCapture.read``; the ROS side only publishes the newest frame, so a slow
camera never blocks an executor. A missing device fails at start with the list of devices that do exist;
a stalled device (no frame for ``stall_timeout_s``) is logged, reported in diagnostics and reopened.
"""

from __future__ import annotations

import glob
import threading
import time
from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import Image
from simdist_core.robots import UR5E
from simdist_ros.params import P, declare_table
from simdist_ros.runtime import run_node

from simdist_ros import msgs, qos, topics


class CameraError(RuntimeError):
    """The camera could not be opened or stopped delivering frames."""


def frame_to_rgb(frame_bgr: np.ndarray, out_hw: tuple[int, int] | None = None) -> np.ndarray:
    """OpenCV BGR frame (h, w, 3) uint8 -> RGB (out_h, out_w, 3) uint8.

    With ``out_hw`` the frame is centre-cropped to the output's aspect ratio (no distortion: the simulated
    camera renders square images) and area-resized.

    Raises:
        ValueError: not an (h, w, 3) uint8 image.
    """
    import cv2

    frame = np.asarray(frame_bgr)
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
        raise ValueError(f"camera frame must be (h, w, 3) uint8 BGR, got {frame.shape} {frame.dtype}")
    rgb = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
    if out_hw is not None and rgb.shape[:2] != tuple(out_hw):
        h, w = rgb.shape[:2]
        target = out_hw[1] / out_hw[0]  # width / height
        if w / h > target:  # too wide: crop columns
            crop_w = max(1, round(h * target))
            rgb = rgb[:, (w - crop_w) // 2:(w - crop_w) // 2 + crop_w]
        elif w / h < target:  # too tall: crop rows
            crop_h = max(1, round(w / target))
            rgb = rgb[(h - crop_h) // 2:(h - crop_h) // 2 + crop_h]
        rgb = cv2.resize(rgb, (out_hw[1], out_hw[0]), interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(rgb)


class V4l2Camera:
    """Opens a V4L2 device at a requested size and rate and reads frames in a thread."""

    def __init__(self, device: str, width: int, height: int, fps: float, api: str = "v4l2") -> None:
        """Camera ``device`` (path or index) at ``width`` x ``height`` and ``fps``.

        ``api`` is ``"v4l2"`` for cameras; ``"any"`` lets OpenCV pick (a video file, used by the tests).
        """
        if api not in ("v4l2", "any"):
            raise ValueError(f"api must be 'v4l2' or 'any', got {api=!r}")
        self.device, self.width, self.height, self.fps, self.api = device, width, height, fps, api
        self._cap = None
        self._lock = threading.Lock()
        self._frame: tuple[int, np.ndarray] | None = None  # (capture time ns on time.time_ns, BGR frame)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.frames = 0
        self.read_failures = 0

    def open(self) -> None:
        """Open the device and apply the format.

        Raises:
            CameraError: the device does not exist or cannot be opened (the message lists present devices).
        """
        import cv2

        source: int | str = int(self.device) if self.device.isdigit() else self.device
        cap = cv2.VideoCapture(source, cv2.CAP_V4L2 if self.api == "v4l2" else cv2.CAP_ANY)
        if not cap.isOpened():
            cap.release()
            present = sorted(glob.glob("/dev/video*")) or ["none"]
            raise CameraError(f"cannot open camera {self.device!r} ({self.api}); devices present: "
                              f"{', '.join(present)}. "
                              f"Check the cable, `v4l2-ctl --list-devices`, and that the user is in group 'video'.")
        cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.width)
        cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.height)
        cap.set(cv2.CAP_PROP_FPS, self.fps)
        self._cap = cap

    def start(self) -> None:
        """Start the reader thread (after ``open``)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="camera", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ok, frame = self._cap.read()
            stamp_ns = time.time_ns()
            if not ok or frame is None:
                self.read_failures += 1
                self._stop.wait(0.01)
                continue
            with self._lock:
                self._frame = (stamp_ns, frame)
                self.frames += 1

    def latest(self) -> tuple[int, np.ndarray] | None:
        """(capture time ns, BGR frame) of the newest frame, or None."""
        with self._lock:
            return self._frame

    def close(self) -> None:
        """Stop the thread and release the device."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        if self._cap is not None:
            self._cap.release()
            self._cap = None


@dataclass(frozen=True, kw_only=True)
class CameraParams:
    """Runtime settings of the camera node."""

    device: str
    width: int
    height: int
    fps: float
    output_width: int
    output_height: int
    stall_timeout_s: float
    frame_id: str
    capture_api: str

    def __post_init__(self) -> None:
        if self.capture_api not in ("v4l2", "any"):
            raise ValueError(f"capture_api must be 'v4l2' or 'any', got {self.capture_api=!r}")


_OUT_HW = UR5E.image_shape or (0, 0)
ROWS = (
    P("device", "/dev/video0", "V4L2 device path or index", read_only=True),
    P("width", 640, "Capture width in px", lo=16, hi=4096, read_only=True),
    P("height", 480, "Capture height in px", lo=16, hi=4096, read_only=True),
    P("fps", 30.0, "Capture rate in Hz", lo=1.0, hi=240.0, read_only=True),
    P("output_width", _OUT_HW[1], "Published width: the model's image width (0 = capture size, no crop)",
      lo=0, hi=4096, read_only=True),
    P("output_height", _OUT_HW[0], "Published height (0 = capture size)", lo=0, hi=4096, read_only=True),
    P("stall_timeout_s", 1.0, "No frame for this long = stalled (reopen)", lo=0.1, hi=60.0, read_only=True),
    P("frame_id", "camera_optical_frame", "frame_id of the images (optical: z forward, x right, y down)",
      read_only=True),
    P("capture_api", "v4l2", "OpenCV capture API: v4l2 (cameras) or any (e.g. a video file)", read_only=True),
)


class CameraNode(Node):
    """Publishes the newest camera frame at ``fps``; frames keep their capture stamp."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("camera", **kwargs)
        self.params = p = declare_table(self, ROWS, CameraParams)
        self._out_hw = (p.output_height, p.output_width) if p.output_width and p.output_height else None
        self.camera = V4l2Camera(p.device, p.width, p.height, p.fps, p.capture_api)
        self.camera.open()
        self.camera.start()
        self._last_stamp_ns = 0
        self._last_frame_wall_s = time.monotonic()
        self.stalls = 0
        self._pub = self.create_publisher(Image, topics.CAMERA_IMAGE, qos.SENSOR)
        self._diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        self.create_timer(1.0 / p.fps, self._publish)
        self.create_timer(1.0, self._diagnostics)

    def _publish(self) -> None:
        latest = self.camera.latest()
        if latest is None or latest[0] == self._last_stamp_ns:
            if time.monotonic() - self._last_frame_wall_s > self.params.stall_timeout_s:
                self._recover()
            return
        stamp_ns, frame = latest
        self._last_stamp_ns, self._last_frame_wall_s = stamp_ns, time.monotonic()
        # Capture time on the wall clock, shifted onto the node clock (equal on hardware, where use_sim_time is off).
        t_ns = self.get_clock().now().nanoseconds - max(0, time.time_ns() - stamp_ns)
        self._pub.publish(msgs.make_rgb8(frame_to_rgb(frame, self._out_hw), max(t_ns, 0), self.params.frame_id))

    def _recover(self) -> None:
        self.stalls += 1
        self.get_logger().error(f"camera {self.params.device} stalled (no frame for {self.params.stall_timeout_s} s, "
                                f"{self.stalls} stalls): reopening", throttle_duration_sec=1.0)
        self._last_frame_wall_s = time.monotonic()
        self.camera.close()
        try:
            self.camera.open()
            self.camera.start()
        except CameraError as exc:
            self.get_logger().error(str(exc), throttle_duration_sec=5.0)

    def _diagnostics(self) -> None:
        stalled = time.monotonic() - self._last_frame_wall_s > self.params.stall_timeout_s
        status = msgs.make_status("camera", "error" if stalled else "ok", "stalled" if stalled else "streaming",
                                  {"frames": self.camera.frames, "read_failures": self.camera.read_failures,
                                   "stalls": self.stalls, "device": self.params.device}, hardware_id="camera")
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def close(self) -> None:
        """Stop the reader and release the device."""
        self.camera.close()


def main(args: list[str] | None = None) -> int:
    """Entry point ``camera_node`` (``--ros-args -p device:=/dev/video0``).

    The shared ``run_node`` handles SIGINT/SIGTERM even when no timer fires, joins the node's threads via
    ``close()`` and only then shuts the context down.
    """
    return run_node(CameraNode, args, threads=2)


if __name__ == "__main__":
    raise SystemExit(main())
