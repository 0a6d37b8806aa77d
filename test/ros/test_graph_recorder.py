"""Recorder node over real DDS: serialized (raw) subscriptions, a bag that rosbags, mcap_ros2 and rclpy read.

Regression for the rclpy/rosbags pitfall: a JointState with empty effort published by rclpy arrives with
junk trailing bytes that rosbags rejects ("CDR message size mismatch"); the recorder trims them.
"""

import signal
import time

import numpy as np
import pytest
import rclpy
from _graph_helpers import DiagnosticsCollector, Go2Streamer, start_node, stop, wait_for
from rclpy.executors import SingleThreadedExecutor
from rclpy.serialization import deserialize_message
from rosbags.highlevel import AnyReader
from sensor_msgs.msg import JointState
from simdist_core.data import bag as bagmod
from simdist_core.data.dataset import Dataset
from simdist_ros.recorder_node import message_class

from simdist_ros import qos, topics


@pytest.mark.timeout(180)
def test_recorder_writes_a_bag_all_readers_accept(tmp_path):
    proc = start_node("recorder_node", {"robot": "go2", "output_dir": str(tmp_path), "bag_name": "bag"},
                      tmp_path / "rec.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        streamer = Go2Streamer(context)
        empty_effort = streamer.node.create_publisher(JointState, "joint_states", qos.SENSOR)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(streamer.node)
        diagnostics = DiagnosticsCollector(context, executor)
        assert wait_for(streamer.matched, 60, lambda s: executor.spin_once(timeout_sec=s)), \
            (tmp_path / "rec.log").read_text()[-2000:]
        # Discovery is per direction: the recorder's readers may match the streamer's writers seconds after
        # the writers saw them, and samples from an unmatched writer are dropped. Stream until it writes.
        deadline = time.monotonic() + 60
        while int((diagnostics.find("recorder") or {}).get("written", 0)) == 0 and time.monotonic() < deadline:
            streamer.step()
            executor.spin_once(timeout_sec=0.015)
        executor.spin_once(timeout_sec=1.0)  # let it drain what it queued while catching up
        time.sleep(1.0)
        marked_ns = time.time_ns()  # the recorder stamps messages with its (wall) clock on arrival
        for i in range(60):
            streamer.step()
            executor.spin_once(timeout_sec=0.015)  # ~50 Hz, like a robot
            if i % 10 == 0:  # a JointState as rclpy serializes it with an empty effort array
                js = JointState(name=["x"], position=[1.0], velocity=[0.0])
                js.header.stamp.sec = 1
                empty_effort.publish(js)
        executor.spin_once(timeout_sec=1.0)
        assert stop(proc, signal.SIGINT) == 0, (tmp_path / "rec.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)

    bag = tmp_path / "bag"
    counts, lengths, counted = {}, [], {}
    with AnyReader([bag]) as reader:
        for conn, stamp_ns, raw in reader.messages():
            msg = reader.deserialize(raw, conn.msgtype)  # raises on "CDR message size mismatch"
            deserialize_message(bytes(raw), message_class(conn.msgtype))
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
            if stamp_ns >= marked_ns:  # the 60 steps streamed once the recorder was matched
                counted[conn.topic] = counted.get(conn.topic, 0) + 1
            if conn.topic == topics.JOINT_STATES:
                lengths.append(len(msg.effort))
    assert counted[topics.EXECUTED_COMMAND] >= 45 and counted[topics.HEIGHT_MAP] >= 45, counted
    assert 0 in lengths, "the empty-effort JointStates were recorded and decode"
    from mcap_ros2.reader import read_ros2_messages
    assert sum(1 for f in bag.glob("*.mcap") for _ in read_ros2_messages(str(f))) == sum(counts.values())
    # the recorded bag converts to a dataset (the empty-effort messages are valid joint states of 1 joint:
    # the assembler takes the Go2's 12-joint ones)
    ds = Dataset(bagmod.bag_to_dataset(bag, tmp_path / "ds", "go2", fsync=False))
    assert len(ds) >= 30 and np.all(np.isfinite(ds.array("obs/proprio")))
