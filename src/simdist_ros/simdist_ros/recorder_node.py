"""Recorder node: a rosbag2 (mcap, metadata version 9) of sensors, commands, latents and diagnostics.

Subscriptions are serialized (``raw=True``): the CDR bytes are written as received, after one fix.
rclpy (rmw_fastrtps) reports a serialized length computed by Fast CDR's size *estimate*, which counts
4 bytes of 8-byte alignment for every EMPTY sequence of doubles, although nothing is written for it:
a ``JointState`` with empty ``effort`` arrives with 4 uninitialised trailing bytes per empty array.
rclpy and ``mcap_ros2`` ignore trailing bytes; ``rosbags`` rejects more than 3 ("CDR message size
mismatch"). :func:`canonical_cdr` trims every message to the length its CDR content actually uses
(found by decoding it with rosbags' typestore), so the bag reads with rosbags, mcap_ros2 and rclpy.

Memory is bounded: callbacks only enqueue ``(topic, t_ns, bytes)`` into a queue of at most
``max_queue`` messages; one writer thread drains it to disk. A full queue drops the message and
counts it (reported in the log and on close); a message that does not decode is dropped and counted.

Memory bound: 200 MiB RSS (soak peak 95 MiB over 15 min; it grows ~0.3 MiB/min with the bag's index).

Parameters: see ``PARAMS``. Topics: subscribes to the robot's default topic set (below) or ``topics``.
"""

from __future__ import annotations

import importlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from simdist_ros import msgs, qos, topics
from simdist_ros.params import P, declare_table
from simdist_ros.runtime import process_counts, run_node

DEFAULT_TOPICS: dict[str, tuple[tuple[str, str], ...]] = {
    "go2": (
        (topics.JOINT_STATES, "sensor_msgs/msg/JointState"), (topics.IMU, "sensor_msgs/msg/Imu"),
        (topics.ODOM, "nav_msgs/msg/Odometry"), (topics.HEIGHT_MAP, "sensor_msgs/msg/Image"),
        (topics.FOOT_CONTACTS, "std_msgs/msg/Float64MultiArray"), (topics.TASK_COMMAND, "geometry_msgs/msg/Twist"),
    ),
    "ur5e": (
        (topics.JOINT_STATES, "sensor_msgs/msg/JointState"), (topics.WRENCH, "geometry_msgs/msg/WrenchStamped"),
        (topics.CAMERA_IMAGE, "sensor_msgs/msg/Image"),
        (topics.ODOM, "nav_msgs/msg/Odometry"),  # the TCP pose in the robot base frame (simdist_ros.sensors)
        (topics.FIXTURE_POSE, "geometry_msgs/msg/PoseStamped"),  # the task command
    ),
}
"""Per-robot sensor topics; :data:`COMMON_TOPICS` are added for every robot."""
COMMON_TOPICS: tuple[tuple[str, str], ...] = (
    (topics.COMMAND, "std_msgs/msg/Float64MultiArray"), (topics.EXECUTED_COMMAND, "std_msgs/msg/Float64MultiArray"),
    (topics.LATENT, "std_msgs/msg/Float32MultiArray"), (topics.PLAN, "trajectory_msgs/msg/JointTrajectory"),
    (topics.PREDICTED_ROLLOUT, "visualization_msgs/msg/MarkerArray"),
    (topics.DIAGNOSTICS, "diagnostic_msgs/msg/DiagnosticArray"),
    (topics.CHUNK_READY, "std_msgs/msg/String"), (topics.MODEL_UPDATE, "std_msgs/msg/String"),
    (topics.EPISODE_START, "std_msgs/msg/Header"),  # resets of the simulated robot: bag conversion cuts there
    (topics.EPISODE_RESULT, "std_msgs/msg/String"),  # how each simulated episode ended (the task's metrics)
)


def canonical_cdr(typestore: object, raw: bytes | memoryview, msgtype: str) -> bytes:
    """The CDR bytes of ``raw`` without trailing garbage (see the module docstring).

    Raises:
        ValueError: the bytes do not decode as ``msgtype`` (truly corrupt, not just padded).
    """
    raw = bytes(raw)
    if len(raw) < 4 or raw[:2] not in (b"\x00\x00", b"\x00\x01"):
        raise ValueError(f"{msgtype}: not a CDR buffer (encapsulation {raw[:2].hex()})")
    msgdef = typestore.get_msgdef(msgtype)  # type: ignore[attr-defined]
    func = msgdef.deserialize_cdr_le if raw[1] else msgdef.deserialize_cdr_be
    try:
        _, pos = func(memoryview(raw)[4:], 0, msgdef.cls, typestore)
    except Exception as exc:  # noqa: BLE001  (rosbags raises struct.error, IndexError, UnicodeDecodeError...)
        raise ValueError(f"{msgtype}: undecodable CDR ({type(exc).__name__}: {exc})") from exc
    return raw[: 4 + pos]


@dataclass
class SinkStats:
    """What the sink did (reported on close and in tests)."""

    written: int = 0
    """Messages written."""
    dropped_full: int = 0
    """Messages dropped because the queue was full (disk too slow)."""
    dropped_corrupt: int = 0
    """Messages dropped because they did not decode."""
    trimmed_bytes: int = 0
    """Trailing bytes removed by :func:`canonical_cdr`."""


class BagSink:
    """A rosbags ``Writer`` fed by a bounded queue and one writer thread (no rclpy: testable alone).

    Args:
        path: bag folder to create (must not exist: bags are never overwritten).
        connections: ``(topic, msgtype)`` pairs to register.
        max_queue: most messages held in memory.
        storage: ``"mcap"`` or ``"sqlite3"``.
    """

    def __init__(self, path: Path, connections: Sequence[tuple[str, str]], max_queue: int = 2000,
                 storage: str = "mcap") -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore

        self.path = Path(path)
        self.typestore = get_typestore(Stores.ROS2_KILTED)
        plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = Writer(self.path, version=9, storage_plugin=plugin)
        self._writer.open()
        self._conns = {topic: (self._writer.add_connection(topic, msgtype, typestore=self.typestore), msgtype)
                       for topic, msgtype in connections}
        self._queue: queue.Queue[tuple[str, int, bytes] | None] = queue.Queue(maxsize=max_queue)
        self.stats = SinkStats()
        self._thread = threading.Thread(target=self._drain, name="bag_writer", daemon=True)
        self._thread.start()

    def put(self, topic: str, t_ns: int, raw: bytes) -> bool:
        """Enqueue one serialized message; False (and counted) when the queue is full."""
        try:
            self._queue.put_nowait((topic, t_ns, raw))
            return True
        except queue.Full:
            self.stats.dropped_full += 1
            return False

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            topic, t_ns, raw = item
            conn, msgtype = self._conns[topic]
            try:
                data = canonical_cdr(self.typestore, raw, msgtype)
            except ValueError:
                self.stats.dropped_corrupt += 1
                continue
            self.stats.trimmed_bytes += len(raw) - len(data)
            self._writer.write(conn, t_ns, data)
            self.stats.written += 1

    def close(self) -> SinkStats:
        """Write what is queued, finish the bag (metadata.yaml) and join the writer thread."""
        self._queue.put(None)
        self._thread.join()
        self._writer.close()
        return self.stats


def message_class(msgtype: str) -> type:
    """``"sensor_msgs/msg/JointState"`` -> the rclpy message class."""
    package, _, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


@dataclass(frozen=True, kw_only=True)
class RecorderParams:
    """Values of :data:`PARAMS`, read once at start."""

    robot: str
    output_dir: str
    bag_name: str
    topics: tuple[str, ...]
    max_queue: int
    storage: str
    diagnostics_period_s: float

    def __post_init__(self) -> None:
        if self.robot not in DEFAULT_TOPICS:
            raise ValueError(f"robot must be one of {sorted(DEFAULT_TOPICS)}, got {self.robot=!r}")
        if self.storage not in ("mcap", "sqlite3"):
            raise ValueError(f"storage must be 'mcap' or 'sqlite3', got {self.storage=!r}")


PARAMS = (
    P("robot", "go2", "Robot whose default topic set is recorded (go2, ur5e)", read_only=True),
    P("output_dir", "runs/bags", "Folder that receives the bag folder", read_only=True),
    P("bag_name", "", "Bag folder name; empty = bag_<UTC time>. Never overwritten", read_only=True),
    P("topics", (), "Topics to record; empty = the robot's default set", read_only=True),
    P("max_queue", 2000, "Most messages held in memory before dropping", lo=10, hi=1_000_000, read_only=True),
    P("storage", "mcap", "rosbag2 storage plugin (mcap or sqlite3)", read_only=True),
    P("diagnostics_period_s", 1.0, "Diagnostics period in seconds", lo=0.05, hi=60.0, read_only=True),
)
"""The node's parameter table."""


_SENSOR_RECORDING = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
"""Best effort like the sensor publishers (so it matches them), but a deep reader queue: callbacks only enqueue,
yet on a busy machine the executor can fall a few ticks behind, and qos.SENSOR's depth of 5 then dropped about
half of a 50 Hz stream in CI. A recorder's job is to keep every sample it can."""


def _qos_for(topic: str) -> QoSProfile:
    if topic in _SENSOR_TOPICS:
        return _SENSOR_RECORDING
    if topic in (topics.CHUNK_READY, topics.MODEL_UPDATE):
        return qos.ANNOUNCE
    if topic == topics.EPISODE_START:
        return qos.EPISODE_START
    if topic == topics.EPISODE_RESULT:
        return qos.EPISODE_RESULT
    if topic in (topics.COMMAND, topics.EXECUTED_COMMAND, topics.LATENT):
        # Reliable without a deadline: the recorder must not raise deadline events of its own.
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE)
    return qos.RELIABLE


_SENSOR_TOPICS = {topics.JOINT_STATES, topics.IMU, topics.ODOM, topics.HEIGHT_MAP, topics.CAMERA_IMAGE,
                  topics.WRENCH, topics.FOOT_CONTACTS, topics.TASK_COMMAND, topics.FIXTURE_POSE}


class RecorderNode(Node):
    """Subscribes (serialized) to the graph's topics and writes them to a bag."""

    def __init__(self) -> None:
        super().__init__("recorder")
        self.params = declare_table(self, PARAMS, RecorderParams)
        p = self.params
        table = dict(DEFAULT_TOPICS[p.robot] + COMMON_TOPICS)
        if p.topics:
            unknown = [t for t in p.topics if t not in table]
            if unknown:
                raise ValueError(f"topics {unknown} are not recordable for {p.robot}; choose from {sorted(table)}")
            table = {t: table[t] for t in p.topics}
        name = p.bag_name or time.strftime("bag_%Y%m%d_%H%M%S", time.gmtime())
        self.sink = BagSink(Path(p.output_dir).expanduser() / name, list(table.items()), p.max_queue, p.storage)
        group = MutuallyExclusiveCallbackGroup()
        for topic, msgtype in table.items():
            self.create_subscription(message_class(msgtype), topic, self._callback(topic), _qos_for(topic),
                                     callback_group=group, raw=True)
        # The timer also wakes the executor: an idle executor never sees Ctrl-C with these rclpy wheels.
        self._diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        self.create_timer(p.diagnostics_period_s, self._publish_diagnostics, callback_group=group)
        self.get_logger().info(f"recording {len(table)} topics to {self.sink.path}")

    def _publish_diagnostics(self) -> None:
        stats = self.sink.stats
        values = {"written": stats.written, "dropped_full": stats.dropped_full,
                  "dropped_corrupt": stats.dropped_corrupt, "trimmed_bytes": stats.trimmed_bytes,
                  "bag": str(self.sink.path), **process_counts()}
        level = "warn" if stats.dropped_full or stats.dropped_corrupt else "ok"
        status = msgs.make_status(f"{self.get_name()}: recorder", level, f"{stats.written} messages written", values)
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def _callback(self, topic: str) -> Callable[[bytes], None]:
        def on_message(raw: bytes) -> None:
            if not self.sink.put(topic, self.get_clock().now().nanoseconds, raw):
                self.get_logger().warning("bag queue full: dropping messages", throttle_duration_sec=1.0)
        return on_message

    def close(self) -> None:
        """Finish the bag (called by ``run_node`` before rclpy shuts down)."""
        stats = self.sink.close()
        self.get_logger().info(f"bag {self.sink.path} closed: {stats}")


def main(args: list[str] | None = None) -> int:
    """Run the recorder until Ctrl-C; the bag is finished on exit."""
    return run_node(RecorderNode, args, threads=2)
