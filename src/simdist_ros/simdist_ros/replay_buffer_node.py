"""Replay-buffer node: live transitions -> durable sealed chunks on disk -> ``replay/chunk_ready``.

Sensor topics and ``executed_command`` feed :class:`simdist_core.data.transitions.TransitionAssembler`
(the same assembly ``simdist finetune --bag`` uses), which builds the observation with the robot's core
proprio function, exactly as the encoder does. Records go to
:class:`simdist_core.data.chunks.ChunkWriter` in ``<output_dir>/<shard>``: a chunk is sealed atomically
(temp folder, fsync, rename) every ``chunk_steps`` steps and announced on ``replay/chunk_ready`` as
JSON ``{path, steps, sha256, index, total_steps, dropped}`` (``qos.ANNOUNCE``: a late finetuner still
gets the newest one; it scans the folder for older ones).

Episodes: the assembler's :class:`simdist_core.data.episodes.EpisodeTracker` (the encoder's rule) cuts
episodes at drops, gaps, jumps and at the resets the simulated robot announces on ``episode_start``
(``std_msgs/Header``, qos.EPISODE_START), which this node forwards. A malformed announcement is counted
(``dropped_bad_episode_start``) and ignored; a forged one can only split an episode.

Restart: sealed chunks are never touched; numbering and episode ids continue after what is on disk;
a crash (even SIGKILL) loses at most the open chunk (< ``chunk_steps`` steps; ``open_steps`` in the
diagnostics says how many at any moment). On a clean shutdown the open chunk is sealed.

Labels: none (no reward/value/probe on a robot; see ``simdist_core.data.transitions``).

Threads and memory: subscription callbacks (one mutually exclusive group) only assemble records and
put them in a queue of at most ``max_queue`` records; one writer thread appends, seals (disk I/O,
fsync) and announces, so a slow disk never delays a callback. Memory is bounded by the queue plus the
open chunk: ``(max_queue + chunk_steps)`` records (Go2: ~1.5 KB each, so the defaults hold < 2 MB;
UR5e with a 64x64 image: ~12 KB each).

Memory bound: 200 MiB RSS for the process (soak peak 79 MiB Go2, 108 MiB UR5e).
"""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Twist, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile
from sensor_msgs.msg import Image, Imu, JointState
from simdist_core.data.chunks import ChunkWriter, read_meta
from simdist_core.data.episodes import header_stamp_ns
from simdist_core.data.transitions import (
    OPTIONAL_SENSORS,
    REQUIRED_SENSORS,
    AssemblerConfig,
    TransitionAssembler,
    next_episode_id,
)
from simdist_core.robots import get_robot
from std_msgs.msg import Float64MultiArray, Header, String

from simdist_ros import msgs, qos, topics
from simdist_ros.params import P, declare_table
from simdist_ros.runtime import executor_counts, run_node

SENSOR_SUBSCRIPTIONS: dict[str, tuple[str, type]] = {
    "joint_states": (topics.JOINT_STATES, JointState),
    "imu": (topics.IMU, Imu),
    "odom": (topics.ODOM, Odometry),
    "height_map": (topics.HEIGHT_MAP, Image),
    "camera_image": (topics.CAMERA_IMAGE, Image),
    "wrench": (topics.WRENCH, WrenchStamped),
    "cmd_vel": (topics.TASK_COMMAND, Twist),
    "fixture_pose": (topics.FIXTURE_POSE, PoseStamped),
}
"""Sensor kind (``transitions.EXTRACTORS``) -> (topic, message type)."""


@dataclass(frozen=True, kw_only=True)
class ReplayParams:
    """Values of :data:`PARAMS`, read once at start."""

    robot: str
    output_dir: str
    shard: str
    chunk_steps: int
    max_queue: int
    max_staleness_ticks: float
    max_gap_ticks: float
    reset_jump_rad: float
    reset_jump_m: float
    default_command: tuple[float, ...]
    fsync: bool
    diagnostics_period_s: float

    def __post_init__(self) -> None:
        get_robot(self.robot)  # raises with the valid names
        if not self.shard.startswith("shard-"):
            raise ValueError(f"shard must start with 'shard-' (Dataset reads only those), got {self.shard=!r}")
        if not self.output_dir:
            raise ValueError("output_dir must not be empty")


PARAMS = (
    P("robot", "go2", "Robot name (go2, ur5e)", read_only=True),
    P("output_dir", "runs/replay", "Dataset folder; the node writes <output_dir>/<shard>/chunk-*", read_only=True),
    P("shard", "shard-replay-0000", "Shard folder name (one writer per shard)", read_only=True),
    P("chunk_steps", 500, "Steps per sealed chunk (500 = 10 s at 50 Hz)", lo=1, hi=1_000_000, read_only=True),
    P("max_queue", 1000, "Most assembled records waiting for the writer thread", lo=10, hi=1_000_000, read_only=True),
    P("max_staleness_ticks", 2.5, "Required sensor older than this many control periods drops the step",
      lo=0.5, hi=100.0, read_only=True),
    P("max_gap_ticks", 2.5, "Steps further apart than this many periods start a new episode", lo=1.0, hi=1000.0,
      read_only=True),
    P("reset_jump_rad", 0.5, "Joint jump (rad) between steps that starts a new episode (= the encoder's)",
      lo=0.01, hi=10.0, read_only=True),
    P("reset_jump_m", 0.3, "Base/TCP jump (m) between steps that starts a new episode (= the encoder's)",
      lo=0.001, hi=100.0, read_only=True),
    P("default_command", (0.5, 0.0, 0.0), "Task command until one arrives (= the encoder's default_command)",
      read_only=True),
    P("fsync", True, "fsync sealed chunks (leave on; off only for throwaway tests)", read_only=True),
    P("diagnostics_period_s", 1.0, "Diagnostics period in seconds", lo=0.05, hi=60.0, read_only=True),
)
"""The node's parameter table."""


QUEUE_DEPTH = 10
"""Reader-side backlog per subscription (steps the node may fall behind without losing any)."""


def _with_depth(profile: QoSProfile) -> QoSProfile:
    """``profile`` with a deeper reader history and no deadline (a recorder-like consumer)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=QUEUE_DEPTH, reliability=profile.reliability,
                      durability=profile.durability)


def announcement(chunk: Path, total_steps: int, dropped: dict[str, int]) -> str:
    """The ``replay/chunk_ready`` JSON of a sealed chunk (hash = the chunk's ``chunk_sha256``)."""
    meta = read_meta(chunk)
    return json.dumps({"path": str(chunk), "steps": meta["n_steps"], "sha256": meta["chunk_sha256"],
                       "index": meta["index"], "total_steps": total_steps, "dropped": dropped})


class ReplayBufferNode(Node):
    """Assembles transitions and appends them to sealed on-disk chunks (see the module docstring)."""

    def __init__(self, node_name: str = "replay_buffer") -> None:
        super().__init__(node_name)
        self.params = p = declare_table(self, PARAMS, ReplayParams)
        self.spec = get_robot(p.robot)
        shard_dir = Path(p.output_dir).expanduser().resolve() / p.shard
        self.writer = ChunkWriter(shard_dir, chunk_steps=p.chunk_steps, fsync=p.fsync)
        dt = self.spec.control_dt
        config = AssemblerConfig(max_staleness_s=p.max_staleness_ticks * dt, max_gap_s=p.max_gap_ticks * dt,
                                 joint_jump_rad=p.reset_jump_rad, base_jump_m=p.reset_jump_m,
                                 default_command=p.default_command if self.spec.command_dim else None)
        self.assembler = TransitionAssembler(self.spec, config, first_episode_id=next_episode_id(shard_dir))
        self._queue: queue.Queue[dict[str, np.ndarray] | None] = queue.Queue(maxsize=p.max_queue)
        self._lock = threading.Lock()
        self.counts = {"queue_full": 0, "write_errors": 0, "chunks_announced": 0}
        self._chunk_pub = self.create_publisher(String, topics.CHUNK_READY, qos.ANNOUNCE)
        self._diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        # Sensors are subscribed before the command and with a backlog of QUEUE_DEPTH: when this node
        # falls behind, the executor takes one message per subscription per round in this order, so a
        # backlog drains in lockstep (sensors of step k, then command k) instead of being overwritten.
        group = MutuallyExclusiveCallbackGroup()
        # First, so that in a round the announcement is taken before the sensors of the step it announces.
        self.create_subscription(Header, topics.EPISODE_START, self._on_episode_start, qos.EPISODE_START,
                                 callback_group=group)
        for kind in (*REQUIRED_SENSORS[self.spec.name], *OPTIONAL_SENSORS[self.spec.name]):
            topic, msg_type = SENSOR_SUBSCRIPTIONS[kind]
            profile = qos.RELIABLE if kind in OPTIONAL_SENSORS[self.spec.name] else _with_depth(qos.SENSOR)
            self.create_subscription(msg_type, topic, self._sensor_callback(kind), profile, callback_group=group)
        self.create_subscription(Float64MultiArray, topics.EXECUTED_COMMAND, self._on_executed,
                                 _with_depth(qos.command(self.spec.control_hz)), callback_group=group)
        self.create_timer(p.diagnostics_period_s, self._publish_diagnostics, callback_group=group)
        resumed = self.writer.sealed_steps
        if resumed:
            last = sorted(shard_dir.glob("chunk-*"))[-1]
            self._chunk_pub.publish(String(data=announcement(last, resumed, {})))
        self._thread = threading.Thread(target=self._write_loop, name="replay_writer", daemon=True)
        self._thread.start()
        self.get_logger().info(f"replay buffer for {self.spec.name} -> {shard_dir} (resumed {resumed} sealed steps, "
                               f"next chunk {self.writer.next_index}, first episode {self.assembler.episode_id})")

    def _sensor_callback(self, kind: str) -> Any:  # noqa: ANN401  (a subscription callback)
        def callback(msg: Any) -> None:  # noqa: ANN401
            self.assembler.on_sensor(kind, msg)

        return callback

    def _on_episode_start(self, msg: Header) -> None:
        try:
            t_ns = header_stamp_ns(msg)
        except ValueError as exc:  # untrusted: counted by the assembler as a bad announcement, never fatal
            self.assembler.dropped["bad_episode_start"] = self.assembler.dropped.get("bad_episode_start", 0) + 1
            self.get_logger().warning(f"ignoring episode_start: {exc}", throttle_duration_sec=2.0)
            return
        self.assembler.on_episode_start(t_ns)

    def _on_executed(self, msg: Float64MultiArray) -> None:
        record = self.assembler.on_executed_command(np.asarray(msg.data))
        if record is None:
            self.get_logger().warning(f"step dropped; drops so far: {self.assembler.dropped}",
                                      throttle_duration_sec=2.0)
            return
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            with self._lock:
                self.counts["queue_full"] += 1
            self.get_logger().warning("replay queue full (disk too slow?): dropping steps", throttle_duration_sec=1.0)

    def _write_loop(self) -> None:
        """Writer thread: append, seal, announce. Exceptions are logged and counted, never silent."""
        while (record := self._queue.get()) is not None:
            before = self.writer.next_index
            try:
                self.writer.append(record)
            except (ValueError, OSError) as exc:
                with self._lock:
                    self.counts["write_errors"] += 1
                self.get_logger().error(f"replay write failed: {exc}", throttle_duration_sec=1.0)
                continue
            if self.writer.next_index != before:
                self._announce(self.writer.shard_dir / f"chunk-{before:06d}")

    def _announce(self, chunk: Path) -> None:
        text = announcement(chunk, self.writer.sealed_steps, dict(self.assembler.dropped))
        try:
            self._chunk_pub.publish(String(data=text))
        except Exception as exc:  # noqa: BLE001  (at shutdown the context may be gone; the chunk is on disk)
            self.get_logger().warning(f"sealed {chunk.name} but could not announce it ({exc}); a finetuner finds "
                                      "it by scanning the folder")
            return
        with self._lock:
            self.counts["chunks_announced"] += 1
        self.get_logger().info(f"sealed {chunk.name} ({self.writer.sealed_steps} steps on disk)")

    def _publish_diagnostics(self) -> None:
        with self._lock:
            counts = dict(self.counts)
        values = {"steps_assembled": self.assembler.steps, "sealed_steps": self.writer.sealed_steps,
                  "open_steps": self.writer.open_steps, "queued": self._queue.qsize(),
                  "next_chunk": self.writer.next_index, "episode_id": self.assembler.episode_id,
                  **counts, **{f"dropped_{k}": v for k, v in self.assembler.dropped.items()}, **executor_counts()}
        level = "warn" if counts["queue_full"] or counts["write_errors"] else "ok"
        status = msgs.make_status(f"{self.get_name()}: replay buffer", level,
                                  f"{self.writer.sealed_steps} steps sealed", values)
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def close(self) -> None:
        """Drain the queue, seal the open chunk (announced) and join the writer thread."""
        self._queue.put(None)
        self._thread.join()
        before = self.writer.next_index
        try:
            self.writer.close()
        except OSError as exc:
            self.get_logger().error(f"could not seal the open chunk ({self.writer.open_steps} steps lost): {exc}")
            return
        if self.writer.next_index != before:
            self._announce(self.writer.shard_dir / f"chunk-{before:06d}")


def main(args: list[str] | None = None) -> int:
    """Run the replay buffer until Ctrl-C; the open chunk is sealed on exit."""
    return run_node(ReplayBufferNode, args, threads=2)
