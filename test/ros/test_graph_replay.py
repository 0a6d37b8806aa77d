"""Replay-buffer node in a real rclpy graph: the encoder's observation stream -> sealed chunks, announcements,
SIGKILL + restart resume, episode cuts where the encoder restarted and where a message was malformed."""

import signal
import time

import numpy as np
import pytest
import rclpy
from _graph_helpers import DT_NS, AnnounceCollector, ObservationStreamer, start_node, stop, wait_for
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
        streamer, collector = ObservationStreamer(context), AnnounceCollector(context, topics.CHUNK_READY)
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
    proprio, actions = ds.array("obs/proprio"), ds.array("action")
    assert proprio.shape[1] == GO2.proprio_dim and np.all(np.isfinite(proprio))
    # Record = observation k and the action executed after it (carried by observation k + 1).
    np.testing.assert_allclose(actions[:, 0], (proprio[:, 0] + 1) / 100.0, rtol=1e-6)


@pytest.mark.timeout(240)
def test_replay_buffer_cuts_episodes_where_the_encoder_restarted_and_at_a_forged_message(tmp_path):
    """An observation flagged ``episode_start`` (the encoder restarted its history: an announced reset, a jump)
    splits the episode although the stream has no gap; a forged observation is counted, never stored, and
    breaks the episode too."""
    from std_msgs.msg import Float32MultiArray

    from simdist_ros import qos

    out = tmp_path / "replay"
    params = {"robot": "go2", "output_dir": str(out), "chunk_steps": CHUNK, "fsync": False}
    proc = start_node("replay_buffer_node", params, tmp_path / "replay.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        streamer, collector = ObservationStreamer(context), AnnounceCollector(context, topics.CHUNK_READY)
        forger = streamer.node.create_publisher(Float32MultiArray, topics.OBSERVATION, qos.OBSERVATION(50.0))
        assert wait_for(lambda: streamer.matched() and forger.get_subscription_count() > 0, 60, collector.spin), \
            (tmp_path / "replay.log").read_text()[-2000:]
        deadline = time.monotonic() + 90
        while not collector.items and time.monotonic() < deadline:  # the node takes steps (one chunk sealed)
            _stream(streamer, collector, 5)
        _stream(streamer, collector, 3)
        reset = streamer.t_ns
        streamer.step(episode_start=True)
        _stream(streamer, collector, 10)
        forged_after = streamer.t_ns
        forger.publish(Float32MultiArray(data=[float("nan")] * 5))
        collector.spin(0.1)
        _stream(streamer, collector, 10)
        collector.spin(1.0)
        assert stop(proc, signal.SIGINT) == 0, (tmp_path / "replay.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)
    log = (tmp_path / "replay.log").read_text()
    assert "observation dropped" in log, log[-2000:]
    ds = Dataset(out)
    stamps, episodes = ds.array("t_ns"), ds.array("episode_id")
    assert reset - DT_NS not in stamps.tolist(), "the last observation before the restart has no action after it"
    before, after = episodes[stamps < reset], episodes[stamps >= reset]
    assert before.size and after.size, stamps
    assert before.max() < after.min(), "no episode spans the encoder's restart"
    assert episodes[stamps.tolist().index(reset)] == after.min()
    tail = episodes[stamps >= forged_after]
    assert tail.size and tail.min() > episodes[stamps < forged_after].max(), "the forged message broke the episode"
    assert np.all(np.diff(stamps[episodes == after.min()]) == DT_NS), "a record stands for exactly one period"
