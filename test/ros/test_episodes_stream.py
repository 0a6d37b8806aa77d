"""A simulator reset in the middle of a live stream: the replay data cuts the episode there, no training
window spans it, and the replayed proprio equals the encoder's bit for bit on both sides (gait phase too).

The stream is built the way ``sim_robot_node`` publishes it: executed command, then the sensors of the
step; at a reset the ``episode_start`` announcement, then the reset state one period later.
"""

import numpy as np
from simdist_core.data.chunks import ChunkWriter
from simdist_core.data.dataset import Dataset
from simdist_core.data.episodes import ANNOUNCED, FIRST, EpisodeConfig, EpisodeTracker, header_stamp_ns
from simdist_core.data.sampler import WindowSampler
from simdist_core.data.transitions import DEFAULT_COMMAND, TransitionAssembler
from simdist_core.robots import GO2
from simdist_core.sim.base import make_env
from simdist_ros.sensors import joint_names, obs_from_messages, sensors_to_messages
from std_msgs.msg import Header

from simdist_ros import msgs

DT_NS = int(round(GO2.control_dt * 1e9))
N_BEFORE, N_AFTER = 30, 25


class EncoderView:
    """What the encoder node computes from the newest messages (``_observation`` / ``_new_episode``)."""

    def __init__(self):
        self.names = joint_names("go2")
        self.tracker = EpisodeTracker(EpisodeConfig.for_rate(GO2.control_hz))  # the node's defaults
        self.command = np.asarray(DEFAULT_COMMAND["go2"], np.float32)

    def observe(self, latest):
        t_ns = msgs.stamp_to_ns(latest["joint_states"].header.stamp)
        pos, _, _ = msgs.joint_state_to_arrays(latest["joint_states"], self.names)
        reason = self.tracker.step(t_ns, pos, msgs.odom_to_arrays(latest["odom"])[0])
        obs = obs_from_messages(GO2, latest, self.names, self.command, self.tracker.clock_s(t_ns), 0.3)
        return reason, obs


def _stream_with_reset(tmp_path):
    env = make_env("go2/flat")
    env.reset(seed=3)
    names, rng = joint_names("go2"), np.random.default_rng(0)
    assembler, encoder = TransitionAssembler(GO2), EncoderView()
    latest, records, reasons, sim_ns = {}, [], [], 5_000_000_000

    def publish(sensors):
        for key, msg in sensors_to_messages("go2", sensors, names, sim_ns).items():
            if key != "foot_contacts":
                latest[key] = msg
                assembler.on_sensor(key, msg)

    def announce(reason):  # the sim robot's Header, through the same validation the nodes use
        header = Header(stamp=msgs.ns_to_stamp(sim_ns), frame_id=reason)
        assembler.on_episode_start(header_stamp_ns(header))
        encoder.tracker.announce(header_stamp_ns(header))

    announce("start")
    publish(env.sensors())
    reset_stamp = None
    for k in range(N_BEFORE + N_AFTER):
        action = np.clip(0.3 * rng.normal(size=12), -1, 1)
        record = assembler.on_executed_command(action)  # closes the step on the newest sensors
        assert record is not None, assembler.dropped
        reason, obs = encoder.observe(dict(latest))
        records.append((record, obs))
        reasons.append(reason)
        env.step(action)
        sim_ns += DT_NS
        publish(env.sensors())
        if k == N_BEFORE - 1:  # the robot "fell": reset, announce, publish the reset state one period later
            env.reset()
            sim_ns += DT_NS
            announce("fell")
            reset_stamp = sim_ns
            publish(env.sensors())
    with ChunkWriter(tmp_path / "shard-replay-0000", chunk_steps=16, fsync=False) as writer:
        for record, _ in records:
            writer.append(record)
    return records, reasons, reset_stamp, assembler


def test_reset_mid_stream_splits_episodes_and_replay_equals_encoder(tmp_path):
    records, reasons, reset_stamp, assembler = _stream_with_reset(tmp_path)
    stamps = np.array([int(r["t_ns"]) for r, _ in records])
    episode_ids = np.array([int(r["episode_id"]) for r, _ in records])
    k_reset = int(np.flatnonzero(stamps == reset_stamp)[0])
    assert k_reset == N_BEFORE
    # The stamp after the reset is only 2 periods on (no gap), and the reset pose is near the start pose of
    # a robot that walked a few steps: the announcement is what cuts the episode here.
    assert stamps[k_reset] - stamps[k_reset - 1] == 2 * DT_NS
    assert reasons[0] == FIRST and reasons[k_reset] == ANNOUNCED
    assert [r for r in reasons[1:] if r is not None] == [ANNOUNCED], reasons
    np.testing.assert_array_equal(episode_ids, [0] * N_BEFORE + [1] * N_AFTER)
    assert assembler.tracker.t0_ns == reset_stamp and assembler.tracker.pending == ()

    # Replayed proprio == the encoder's, bit for bit, before and after the reset; the gait phase (the last
    # two proprio columns: cos, sin) restarts at the reset in both.
    for k, (record, obs) in enumerate(records):
        np.testing.assert_array_equal(record["obs/proprio"], obs["proprio"], err_msg=f"step {k}")
        np.testing.assert_array_equal(record["obs/height_map"], obs["height_map"], err_msg=f"step {k}")
    phase0 = records[0][0]["obs/proprio"][-2:]
    np.testing.assert_array_equal(records[k_reset][0]["obs/proprio"][-2:], phase0)
    assert not np.array_equal(records[k_reset - 1][0]["obs/proprio"][-2:], phase0)

    # No training window spans the reset: every row a window reads belongs to its start row's episode.
    ds = Dataset(tmp_path)
    np.testing.assert_array_equal(ds.episode_starts, [0, N_BEFORE])
    sampler = WindowSampler(ds, GO2, batch_size=1)
    assert N_BEFORE - 1 not in sampler.starts, "the last step before the reset has no transition"
    proprio = ds.array("obs/proprio")
    batch = sampler.sample(sampler.starts)
    for i, start in enumerate(sampler.starts):
        ep = ds.row_episode[start]
        rows = proprio[ds.episode_starts[ep]: ds.episode_ends[ep]]
        window = batch["obs"]["proprio"][i].reshape(-1, GO2.proprio_dim).numpy()
        assert all((rows == row).all(axis=1).any() for row in window), f"window at {start} leaves its episode"
