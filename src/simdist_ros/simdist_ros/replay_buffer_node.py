"""Replay-buffer node: the encoder's observations -> durable sealed chunks on disk -> ``replay/chunk_ready``.

Input: ``observation`` (qos.OBSERVATION), which the encoder publishes once per control step: the observation it
appended to the model's history, the executed action that led to it, and its episode start / counter.
:class:`simdist_core.data.observed_steps.StepPairer` pairs consecutive observations into records, so the
finetuning data are what the encoder encoded, bit for bit, cut into episodes where the encoder restarted its
history (an announced reset, a jump, a gap) and wherever a step is missing. Records go to
:class:`simdist_core.data.chunks.ChunkWriter` in ``<output_dir>/<shard>``: a chunk is sealed atomically (temp
folder, fsync, rename) every ``chunk_steps`` steps and announced on ``replay/chunk_ready`` as JSON
``{path, steps, sha256, index, total_steps, dropped}`` (``qos.ANNOUNCE``: a late finetuner still gets the
newest one; it scans the folder for older ones).

Why one topic and not the sensor topics: on a 2-vCPU machine rclpy costs a node ~0.4 ms of CPU per message
it receives (``simdist bench messages``); assembling from the six sensor, command and clock topics cost this
node ~30 % of a core at 50 Hz, time the control loop was short of. It also runs on the wall clock
(``use_sim_time`` false in the graphs) for the same reason: it needs no ``/clock``, its records carry the
observation stamps. Recorded bags (raw sensor topics) are converted by ``simdist finetune --bag`` with
:class:`simdist_core.data.transitions.TransitionAssembler` instead.

A malformed observation (anything on DDS may publish one) is counted (``dropped_bad_observation``), logged
and never stored; the episode breaks there.

Restart: sealed chunks are never touched; numbering and episode ids continue after what is on disk;
a crash (even SIGKILL) loses at most the open chunk (< ``chunk_steps`` steps; ``open_steps`` in the
diagnostics says how many at any moment). On a clean shutdown the open chunk is sealed.

Labels: none (no reward/value/probe on a robot; see ``simdist_core.data.transitions``).

Threads and memory: the subscription callback only pairs and queues records (at most ``max_queue``); one
writer thread appends, seals (disk I/O, fsync) and announces, so a slow disk never delays a callback.
Memory is bounded by the queue plus the open chunk: ``(max_queue + chunk_steps)`` records (Go2: ~1.5 KB
each, so the defaults hold < 2 MB; UR5e with a 64x64 image: ~12 KB each).

Memory bound: 200 MiB RSS for the process (soak peak 79 MiB Go2, 108 MiB UR5e).
"""

from __future__ import annotations

import json
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from simdist_core.data.chunks import ChunkWriter, read_meta
from simdist_core.data.observed_steps import StepPairer
from simdist_core.data.transitions import next_episode_id
from simdist_core.robots import get_robot
from std_msgs.msg import Float32MultiArray, String

from simdist_ros import msgs, qos, topics
from simdist_ros.params import P, declare_table
from simdist_ros.runtime import process_counts, run_node


@dataclass(frozen=True, kw_only=True)
class ReplayParams:
    """Values of :data:`PARAMS`, read once at start."""

    robot: str
    output_dir: str
    shard: str
    chunk_steps: int
    max_queue: int
    max_gap_ticks: float
    fsync: bool
    nice: int
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
    P("max_gap_ticks", 1.5, "Observations further apart than this many periods start a new episode (a record "
      "is one period of dynamics)", lo=1.01, hi=1000.0, read_only=True),
    P("fsync", True, "fsync sealed chunks (leave on; off only for throwaway tests)", read_only=True),
    P("nice", 10, "Priority decrease of this process: it may lag (the writer keeps 2 s of observations for it), "
      "the control loop may not", lo=0, hi=19, read_only=True),
    P("diagnostics_period_s", 1.0, "Diagnostics period in seconds", lo=0.05, hi=60.0, read_only=True),
)
"""The node's parameter table."""


def announcement(chunk: Path, total_steps: int, dropped: dict[str, int]) -> str:
    """The ``replay/chunk_ready`` JSON of a sealed chunk (hash = the chunk's ``chunk_sha256``)."""
    meta = read_meta(chunk)
    return json.dumps({"path": str(chunk), "steps": meta["n_steps"], "sha256": meta["chunk_sha256"],
                       "index": meta["index"], "total_steps": total_steps, "dropped": dropped})


class ReplayBufferNode(Node):
    """Pairs the encoder's observations into records and appends them to sealed on-disk chunks (see the module)."""

    def __init__(self, node_name: str = "replay_buffer") -> None:
        super().__init__(node_name)
        self.params = p = declare_table(self, PARAMS, ReplayParams)
        os.nice(p.nice)  # its callback runs when the encoder publishes, i.e. while the planner plans
        self.spec = get_robot(p.robot)
        shard_dir = Path(p.output_dir).expanduser().resolve() / p.shard
        self.writer = ChunkWriter(shard_dir, chunk_steps=p.chunk_steps, fsync=p.fsync)
        self.pairer = StepPairer(self.spec, max_gap_s=p.max_gap_ticks * self.spec.control_dt,
                                 first_episode_id=next_episode_id(shard_dir))
        self.dropped: dict[str, int] = {"bad_observation": 0}
        self._queue: queue.Queue[dict[str, np.ndarray] | None] = queue.Queue(maxsize=p.max_queue)
        self._lock = threading.Lock()
        self.counts = {"queue_full": 0, "write_errors": 0, "chunks_announced": 0}
        self._chunk_pub = self.create_publisher(String, topics.CHUNK_READY, qos.ANNOUNCE)
        self._diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        # The default (mutually exclusive) callback group: the subscription and the diagnostics never overlap.
        self.create_subscription(Float32MultiArray, topics.OBSERVATION, self._on_observation,
                                 qos.OBSERVATION(self.spec.control_hz))
        self.create_timer(p.diagnostics_period_s, self._publish_diagnostics)
        resumed = self.writer.sealed_steps
        if resumed:
            last = sorted(shard_dir.glob("chunk-*"))[-1]
            self._chunk_pub.publish(String(data=announcement(last, resumed, {})))
        self._thread = threading.Thread(target=self._write_loop, name="replay_writer", daemon=True)
        self._thread.start()
        self.get_logger().info(f"replay buffer for {self.spec.name} -> {shard_dir} (resumed {resumed} sealed steps, "
                               f"next chunk {self.writer.next_index}, first episode {self.pairer.episode_id})")

    def _on_observation(self, msg: Float32MultiArray) -> None:
        try:
            step = msgs.observation_to_step(msg, self.spec)
        except msgs.MessageError as exc:  # untrusted: counted, logged, never stored; the episode breaks here
            self.dropped["bad_observation"] += 1
            self.pairer.break_episode()
            self.get_logger().warning(f"observation dropped: {exc}", throttle_duration_sec=2.0)
            return
        record = self.pairer.on_step(step)
        if record is None:
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
        text = announcement(chunk, self.writer.sealed_steps, dict(self.dropped))
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
        values = {"steps_assembled": self.pairer.steps, "sealed_steps": self.writer.sealed_steps,
                  "open_steps": self.writer.open_steps, "queued": self._queue.qsize(),
                  "next_chunk": self.writer.next_index, "episode_id": self.pairer.episode_id,
                  **counts, **{f"dropped_{k}": v for k, v in self.dropped.items()},
                  **{f"episode_starts_{k}": v for k, v in self.pairer.boundaries.items()}, **process_counts()}
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
