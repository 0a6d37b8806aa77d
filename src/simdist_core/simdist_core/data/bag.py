"""Recorded rosbag2 (mcap or sqlite3) -> chunked dataset, with ``rosbags`` only (no rclpy).

``simdist finetune --bag PATH`` calls :func:`bag_to_dataset` and then finetunes on the result. The
assembly is :class:`simdist_core.data.transitions.TransitionAssembler`, the same object the live
replay-buffer node uses, so a bag and a live session give the same records.

Episode boundaries: the simulated robot announces each reset on ``episode_start`` (``std_msgs/Header``,
stamp = the first observation of the new episode). The recorder may log it a little after or before the
sensors it precedes, so the converter reads ALL announcements first (it has the whole bag) and hands them
to the assembler in stamp order, a few ahead of the stream (the assembler keeps a bounded set).

Topics are matched by their last path components (a namespaced ``/go2/joint_states`` works), with the
names of ``simdist_ros.topics`` (a test checks that the two tables agree).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from simdist_core.data.chunks import ChunkWriter
from simdist_core.data.episodes import header_stamp_ns
from simdist_core.data.transitions import EXTRACTORS, TransitionAssembler, next_episode_id
from simdist_core.robots import RobotSpec, get_robot

log = logging.getLogger(__name__)

SENSOR_TOPICS: dict[str, str] = {
    "joint_states": "joint_states",
    "imu": "imu",
    "odom": "odom",
    "height_map": "height_map",
    "camera/image_raw": "camera_image",
    "wrench": "wrench",
    "cmd_vel": "cmd_vel",
    "fixture_pose": "fixture_pose",
}
"""Topic name (as in ``simdist_ros.topics``) -> sensor kind of :data:`transitions.EXTRACTORS`."""
EXECUTED_COMMAND_TOPIC = "executed_command"
"""The action the driver applied (``std_msgs/Float64MultiArray``)."""
EPISODE_START_TOPIC = "episode_start"
"""A reset announced by the simulated robot (``std_msgs/Header``; see :mod:`simdist_core.data.episodes`)."""


class BagError(ValueError):
    """The bag cannot be turned into a dataset (names the bag and what is missing)."""


def _kind(topic: str) -> str | None:
    name = topic.strip("/")
    for suffix in sorted((*SENSOR_TOPICS, EXECUTED_COMMAND_TOPIC, EPISODE_START_TOPIC), key=len, reverse=True):
        if name == suffix or name.endswith("/" + suffix):
            return {EXECUTED_COMMAND_TOPIC: "action", EPISODE_START_TOPIC: "episode_start"}.get(
                suffix, SENSOR_TOPICS.get(suffix))
    return None


def _announcements(reader: Any, connections: list[Any], dropped: dict[str, int]) -> list[int]:  # noqa: ANN401
    """Stamps (ns, sorted, unique) of every valid ``episode_start`` in the bag; bad ones are counted in ``dropped``."""
    stamps: set[int] = set()
    for conn, _t_ns, raw in reader.messages(connections=connections):
        try:
            stamps.add(header_stamp_ns(reader.deserialize(raw, conn.msgtype)))
        except Exception as exc:  # noqa: BLE001  (undecodable or malformed: untrusted input, never fatal)
            dropped["bad_episode_start"] = dropped.get("bad_episode_start", 0) + 1
            log.warning("skipping bad %s message: %s", conn.topic, exc)
    return sorted(stamps)


def bag_to_dataset(bag_path: str | Path, out_dir: str | Path, spec: RobotSpec | str, *, chunk_steps: int = 1000,
                   fsync: bool = True) -> Path:
    """Convert a recorded bag into a chunked dataset (one shard) for finetuning.

    Args:
        bag_path: rosbag2 folder (``metadata.yaml`` + ``.mcap``/``.db3``).
        out_dir: dataset folder to create; its shard is ``out_dir/shard-bag-0000``. Existing sealed
            chunks there are kept and numbering continues (never overwritten).
        spec: the robot (or its name).
        chunk_steps: rows per sealed chunk.
        fsync: fsync chunks (turn off only in tests).

    Returns:
        The dataset folder ``out_dir``.

    Raises:
        BagError: unreadable bag, no executed commands, or no step could be assembled.
    """
    from rosbags.highlevel import AnyReader

    spec = get_robot(spec) if isinstance(spec, str) else spec
    bag_path, out_dir = Path(bag_path), Path(out_dir)
    assembler: TransitionAssembler | None = None
    try:
        reader = AnyReader([bag_path])
        reader.open()
    except Exception as exc:  # noqa: BLE001  (rosbags raises several unrelated types for a bad bag)
        raise BagError(f"cannot open bag {bag_path}: {exc}") from exc
    try:
        connections = [c for c in reader.connections if _kind(c.topic) not in (None, "episode_start")]
        announce_conns = [c for c in reader.connections if _kind(c.topic) == "episode_start"]
        if not any(_kind(c.topic) == "action" for c in connections):
            raise BagError(f"bag {bag_path} has no {EXECUTED_COMMAND_TOPIC!r} topic; topics: "
                           f"{sorted({c.topic for c in reader.connections})}")
        with ChunkWriter(out_dir / "shard-bag-0000", chunk_steps=chunk_steps, fsync=fsync) as writer:
            assembler = TransitionAssembler(spec, first_episode_id=next_episode_id(writer.shard_dir))
            boundaries = _announcements(reader, announce_conns, assembler.dropped) if announce_conns else []
            capacity, fed = assembler.tracker.config.max_pending, 0
            for conn, _t_ns, raw in reader.messages(connections=connections):
                kind = _kind(conn.topic)
                try:
                    msg = reader.deserialize(raw, conn.msgtype)
                except Exception as exc:  # noqa: BLE001  (one bad message must not lose the bag)
                    assembler.dropped["undecodable"] = assembler.dropped.get("undecodable", 0) + 1
                    log.warning("skipping undecodable %s message: %s", conn.topic, exc)
                    continue
                if kind == "action":
                    # Keep the assembler's bounded set topped up with the next boundaries in stamp order: a
                    # step prunes those it passed, so each is pending when the stream reaches it.
                    while fed < len(boundaries) and len(assembler.tracker.pending) < capacity:
                        assembler.on_episode_start(boundaries[fed])
                        fed += 1
                    record = assembler.on_executed_command(np.asarray(msg.data))
                    if record is not None:
                        writer.append(record)
                elif kind in EXTRACTORS:
                    assembler.on_sensor(kind, msg)
    finally:
        reader.close()
    if assembler is None or assembler.steps == 0:
        raise BagError(f"bag {bag_path}: no step could be assembled (dropped: {assembler and assembler.dropped}); "
                       f"it needs the {spec.name} sensors and {EXECUTED_COMMAND_TOPIC}")
    log.info("bag %s -> %s: %d steps, dropped %s", bag_path, out_dir, assembler.steps, assembler.dropped)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    """``python -m simdist_core.data.bag BAG OUT --robot go2``: convert a bag to a dataset."""
    parser = argparse.ArgumentParser(prog="simdist-bag-to-dataset", description=bag_to_dataset.__doc__.split("\n")[0])
    parser.add_argument("bag", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--robot", default="go2")
    parser.add_argument("--chunk-steps", type=int, default=1000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    try:
        bag_to_dataset(args.bag, args.out, args.robot, chunk_steps=args.chunk_steps)
    except BagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
