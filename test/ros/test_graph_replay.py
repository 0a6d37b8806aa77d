"""Replay-buffer node in a real rclpy graph: sealed chunks, announcements, SIGKILL + restart resume."""

import signal
import time

import numpy as np
import pytest
import rclpy
from _graph_helpers import DT_NS, AnnounceCollector, Go2Streamer, start_node, stop, wait_for
from simdist_core.data.chunks import list_chunks, read_meta, verify_chunk
from simdist_core.data.dataset import Dataset
from simdist_core.robots import GO2

from simdist_ros import topics

CHUNK = 20


def _stream(streamer, collector, n):
    for _ in range(n):
        streamer.step()
        collector.spin(0.015)  # ~50 Hz including the publish time


@pytest.mark.timeout(240)
def test_replay_buffer_seals_announces_and_resumes_after_sigkill(tmp_path):
    out = tmp_path / "replay"
    params = {"robot": "go2", "output_dir": str(out), "chunk_steps": CHUNK, "fsync": True}
    proc = start_node("replay_buffer_node", params, tmp_path / "replay1.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        streamer, collector = Go2Streamer(context), AnnounceCollector(context, topics.CHUNK_READY)
        assert wait_for(streamer.matched, 60, collector.spin), (tmp_path / "replay1.log").read_text()[-2000:]
        # Discovery is per direction: the node's readers may match the streamer's writers seconds after the
        # writers saw them, and samples from an unmatched writer are dropped. Stream until 3 chunks are sealed.
        deadline = time.monotonic() + 90
        while len(collector.items) < 3 and time.monotonic() < deadline:
            _stream(streamer, collector, 5)
        _stream(streamer, collector, 7)
        assert wait_for(lambda: len(collector.items) >= 3, 20, collector.spin), \
            f"announcements {collector.items}\n{(tmp_path / 'replay1.log').read_text()[-3000:]}"
        shard = out / "shard-replay-0000"
        sealed = list_chunks(shard)
        assert [i for i, _ in sealed][:3] == [0, 1, 2]
        first_hashes = {p.name: read_meta(p)["chunk_sha256"] for _, p in sealed}
        ann = collector.items[-1]
        assert ann["steps"] == CHUNK and ann["sha256"] == first_hashes[f"chunk-{ann['index']:06d}"]
        assert ann["path"].endswith(f"chunk-{ann['index']:06d}")

        # SIGKILL: the open chunk (< CHUNK steps) is lost, sealed chunks are untouched.
        assert stop(proc, signal.SIGKILL) == -signal.SIGKILL
        n_before = len(list_chunks(shard))
        proc = start_node("replay_buffer_node", params, tmp_path / "replay2.log")
        collector.items.clear()
        assert wait_for(lambda: streamer.matched() and collector.items, 60, collector.spin), \
            "a restarted replay buffer re-announces its newest sealed chunk"
        assert collector.items[-1]["index"] == n_before - 1
        streamer.t_ns += 5_000_000_000  # the robot kept going while the node was down: a gap
        # DDS may take a moment to match the new node (the killed one's endpoints linger until their
        # lease expires): stream like a robot until two more chunks are sealed, then a partial one.
        deadline = time.monotonic() + 90
        while len(list_chunks(shard)) < n_before + 2 and time.monotonic() < deadline:
            _stream(streamer, collector, 5)
        _stream(streamer, collector, 7)
        collector.spin(1.0)
        assert stop(proc, signal.SIGINT) == 0, (tmp_path / "replay2.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)

    chunks = list_chunks(shard)
    assert [i for i, _ in chunks] == list(range(len(chunks))), "numbering continues without gaps or overwrites"
    after = [read_meta(p)["n_steps"] for _, p in chunks[n_before:]]
    assert after[:2] == [CHUNK, CHUNK], f"two full chunks sealed after the restart: {after}"
    assert len(after) == 3 and 0 < after[2] < CHUNK, f"the open chunk is sealed on SIGINT: {after}"
    for _, path in chunks:
        verify_chunk(path)
        if path.name in first_hashes:
            assert read_meta(path)["chunk_sha256"] == first_hashes[path.name], f"{path.name} was rewritten"
    ds = Dataset(out)
    episodes = ds.array("episode_id")
    assert np.all(np.diff(episodes) >= 0)
    first_run = sum(read_meta(p)["n_steps"] for _, p in chunks[:n_before])
    assert episodes[first_run] > episodes[first_run - 1], "a restart never continues the previous episode"
    proprio = ds.array("obs/proprio")
    assert proprio.shape[1] == GO2.proprio_dim and np.all(np.isfinite(proprio))
    np.testing.assert_allclose(proprio[:, 0], 0.5, atol=1e-6)  # odom twist vx


@pytest.mark.timeout(240)
def test_replay_buffer_cuts_the_episode_at_an_announced_reset(tmp_path):
    """``episode_start`` (what the simulated robot publishes at a reset) splits the episode in the replay data
    even though the stream has no gap and no jump there; a malformed announcement is ignored."""
    from builtin_interfaces.msg import Time
    from std_msgs.msg import Header

    from simdist_ros import msgs, qos

    out = tmp_path / "replay"
    params = {"robot": "go2", "output_dir": str(out), "chunk_steps": CHUNK, "fsync": False}
    proc = start_node("replay_buffer_node", params, tmp_path / "replay.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        streamer, collector = Go2Streamer(context), AnnounceCollector(context, topics.CHUNK_READY)
        start_pub = streamer.node.create_publisher(Header, topics.EPISODE_START, qos.EPISODE_START)
        assert wait_for(lambda: streamer.matched() and start_pub.get_subscription_count() > 0, 60, collector.spin), \
            (tmp_path / "replay.log").read_text()[-2000:]
        deadline = time.monotonic() + 90
        while not collector.items and time.monotonic() < deadline:  # the node takes steps (one chunk sealed)
            _stream(streamer, collector, 5)
        boundary = streamer.t_ns + 10 * DT_NS
        start_pub.publish(Header(stamp=Time(sec=-3), frame_id="forged"))
        start_pub.publish(Header(stamp=msgs.ns_to_stamp(boundary), frame_id="fell"))
        _stream(streamer, collector, 30)
        collector.spin(1.0)
        assert stop(proc, signal.SIGINT) == 0, (tmp_path / "replay.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)
    ds = Dataset(out)
    stamps, episodes = ds.array("t_ns"), ds.array("episode_id")
    before, after = episodes[stamps < boundary], episodes[stamps >= boundary]
    assert before.size and after.size, stamps
    assert before.max() < after.min(), "no episode spans the announced reset"
    assert boundary in stamps.tolist() and episodes[stamps.tolist().index(boundary)] == after.min()
