"""Bags written by the recorder read back with rosbags, mcap_ros2 and rclpy; bag -> dataset conversion."""

import math

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import JointState
from simdist_core.data import bag as bagmod
from simdist_core.data.dataset import Dataset
from simdist_core.robots import GO2
from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD, JOINT_NAMES
from simdist_ros.recorder_node import COMMON_TOPICS, DEFAULT_TOPICS, BagSink, canonical_cdr, message_class
from std_msgs.msg import Float64MultiArray

from simdist_ros import msgs, topics

TS = get_typestore(Stores.ROS2_KILTED)
DT_NS = 20_000_000  # 50 Hz


def _joint_state_empty_effort() -> JointState:
    msg = JointState(name=["a", "b"], position=[1.0, 2.0], velocity=[0.5, -0.5])
    msg.header.frame_id = "base"
    return msg


def test_rclpy_joint_state_with_empty_array_is_rejected_raw_and_accepted_canonical():
    """Regression: rclpy-serialized JointState with an empty effort array carries 4 junk bytes per empty
    double sequence (Fast CDR size estimate), which rosbags rejects ("CDR message size mismatch")."""
    msg = JointState(name=["a", "b"])  # position, velocity, effort all empty: 12 junk bytes
    raw = bytes(serialize_message(msg))
    with pytest.raises(Exception, match="size mismatch"):
        TS.deserialize_cdr(raw, "sensor_msgs/msg/JointState")
    fixed = canonical_cdr(TS, raw, "sensor_msgs/msg/JointState")
    assert len(fixed) < len(raw), "canonical_cdr must trim the trailing junk"
    decoded = TS.deserialize_cdr(fixed, "sensor_msgs/msg/JointState")
    assert list(decoded.name) == ["a", "b"]
    back = deserialize_message(fixed, JointState)
    assert list(back.name) == ["a", "b"] and len(back.effort) == 0, "rclpy must still read the trimmed bytes"


def test_canonical_cdr_rejects_garbage():
    with pytest.raises(ValueError, match="CDR"):
        canonical_cdr(TS, b"\x00\x01\x00\x00\xff", "sensor_msgs/msg/JointState")
    with pytest.raises(ValueError, match="not a CDR"):
        canonical_cdr(TS, b"xx", "sensor_msgs/msg/JointState")


def test_recorded_types_exist_in_rclpy_and_rosbags():
    for robot, table in DEFAULT_TOPICS.items():
        for topic, msgtype in table + COMMON_TOPICS:
            assert message_class(msgtype) is not None, (robot, topic)
            assert msgtype in TS.types, f"{msgtype} unknown to rosbags' Kilted typestore"


def _write_bag(path, messages, connections, max_queue=10_000):
    sink = BagSink(path, connections, max_queue=max_queue)
    for topic, t_ns, msg in messages:
        assert sink.put(topic, t_ns, bytes(serialize_message(msg)))
    return sink.close()


def test_bag_reads_with_rosbags_mcap_and_rclpy(tmp_path):
    path = tmp_path / "bag"
    conns = [(topics.JOINT_STATES, "sensor_msgs/msg/JointState"),
             (topics.EXECUTED_COMMAND, "std_msgs/msg/Float64MultiArray")]
    messages = []
    for i in range(20):
        messages.append((topics.JOINT_STATES, i * DT_NS, _joint_state_empty_effort()))
        messages.append((topics.EXECUTED_COMMAND, i * DT_NS + 1, Float64MultiArray(data=[float(i)] * 3)))
    stats = _write_bag(path, messages, conns)
    assert stats.written == 40 and stats.dropped_corrupt == 0 and stats.dropped_full == 0
    assert stats.trimmed_bytes == 20 * 4, "one empty double array (effort) = 4 junk bytes per JointState"
    assert (path / "metadata.yaml").is_file()

    # rosbags
    with AnyReader([path]) as reader:
        decoded = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages()]
    assert len(decoded) == 40
    assert [float(m.data[0]) for m in decoded if hasattr(m, "data")] == [float(i) for i in range(20)]

    # mcap + mcap_ros2 (its own CDR decoder, schema from the bag)
    from mcap_ros2.reader import read_ros2_messages
    (mcap_file,) = path.glob("*.mcap")
    ros_msgs = list(read_ros2_messages(str(mcap_file)))
    assert len(ros_msgs) == 40
    js = [m.ros_msg for m in ros_msgs if m.channel.topic == topics.JOINT_STATES]
    assert list(js[0].name) == ["a", "b"] and list(js[0].position) == [1.0, 2.0]

    # rclpy deserialization of the stored bytes
    with AnyReader([path]) as reader:
        for conn, _, raw in reader.messages():
            msg = deserialize_message(bytes(raw), message_class(conn.msgtype))
            if conn.topic == topics.JOINT_STATES:
                assert list(msg.velocity) == [0.5, -0.5]


def test_bag_sink_bounded_queue_counts_drops(tmp_path):
    sink = BagSink(tmp_path / "bag", [(topics.EXECUTED_COMMAND, "std_msgs/msg/Float64MultiArray")], max_queue=10)
    raw = bytes(serialize_message(Float64MultiArray(data=[1.0])))
    accepted = sum(sink.put(topics.EXECUTED_COMMAND, i, raw) for i in range(5000))
    stats = sink.close()
    assert accepted + stats.dropped_full == 5000
    assert stats.written == accepted


def _go2_messages(n_steps, t0_ns=1_000_000_000, gap_after=None):
    """A synthetic but well-formed Go2 stream: sensors at 50 Hz, then the executed command."""
    out = []
    t = t0_ns
    for i in range(n_steps):
        if gap_after is not None and i == gap_after:
            t += 1_000_000_000  # 1 s gap: a new episode
        q = DEFAULT_POSE_RAD + 0.01 * math.sin(i / 5)
        out.append((topics.JOINT_STATES, t, msgs.make_joint_state(JOINT_NAMES, q, np.zeros(12), np.zeros(12), t)))
        out.append((topics.IMU, t, msgs.make_imu(np.array([1.0, 0, 0, 0]), np.zeros(3), np.array([0, 0, 9.81]), t,
                                                  "base")))
        out.append((topics.ODOM, t, msgs.make_odom(np.array([0.01 * i, 0, 0.27]), np.array([1.0, 0, 0, 0]),
                                                    np.array([0.5, 0, 0]), np.zeros(3), t)))
        out.append((topics.HEIGHT_MAP, t, msgs.make_height_map(np.full((21, 15), -0.27, np.float32), t)))
        out.append((topics.EXECUTED_COMMAND, t + 1000, msgs.make_float64_array(np.full(12, 0.1 * (i % 3)))))
        t += DT_NS
    return out


def test_bag_to_dataset_go2(tmp_path):
    conns = list(DEFAULT_TOPICS["go2"] + COMMON_TOPICS)
    bag = tmp_path / "bag"
    _write_bag(bag, _go2_messages(60, gap_after=30), conns)
    out = bagmod.bag_to_dataset(bag, tmp_path / "ds", GO2, chunk_steps=16, fsync=False)
    ds = Dataset(out)
    assert len(ds) == 60
    proprio = ds.array("obs/proprio")
    assert proprio.shape == (60, GO2.proprio_dim)
    # base_lin_vel comes from odom twist (0.5, 0, 0); projected gravity of an identity quaternion is (0, 0, -1)
    np.testing.assert_allclose(proprio[:, 0:3], np.tile([0.5, 0, 0], (60, 1)), atol=1e-6)
    np.testing.assert_allclose(proprio[:, 6:9], np.tile([0, 0, -1], (60, 1)), atol=1e-6)
    np.testing.assert_allclose(ds.array("action")[:3, 0], [0.0, 0.1, 0.2], atol=1e-6)
    assert ds.array("obs/height_map").shape == (60, 21, 15)
    episodes = ds.array("episode_id")
    assert list(np.unique(episodes)) == [0, 1], "the 1 s gap must start a second episode"
    assert (episodes[:30] == 0).all() and (episodes[30:] == 1).all()
    # A second conversion into the same folder appends (never overwrites) and continues episode ids.
    bagmod.bag_to_dataset(bag, tmp_path / "ds", GO2, chunk_steps=16, fsync=False)
    ds2 = Dataset(out)
    assert len(ds2) == 120 and set(np.unique(ds2.array("episode_id"))) == {0, 1, 2, 3}


def test_bag_to_dataset_drops_stale_and_reports_missing(tmp_path):
    conns = list(DEFAULT_TOPICS["go2"] + COMMON_TOPICS)
    only_commands = [(t, ts, m) for t, ts, m in _go2_messages(10) if t == topics.EXECUTED_COMMAND]
    _write_bag(tmp_path / "bag", only_commands, conns)
    with pytest.raises(bagmod.BagError, match="no step could be assembled"):
        bagmod.bag_to_dataset(tmp_path / "bag", tmp_path / "ds", GO2, fsync=False)
    no_cmd = [(t, ts, m) for t, ts, m in _go2_messages(10) if t != topics.EXECUTED_COMMAND]
    _write_bag(tmp_path / "bag2", no_cmd, conns)
    with pytest.raises(bagmod.BagError, match="executed_command"):
        bagmod.bag_to_dataset(tmp_path / "bag2", tmp_path / "ds2", GO2, fsync=False)


def test_bag_topic_table_matches_ros_topics():
    assert set(bagmod.SENSOR_TOPICS) <= {topics.JOINT_STATES, topics.IMU, topics.ODOM, topics.HEIGHT_MAP,
                                         topics.CAMERA_IMAGE, topics.WRENCH, topics.TASK_COMMAND,
                                         topics.FIXTURE_POSE}
    assert bagmod.EXECUTED_COMMAND_TOPIC == topics.EXECUTED_COMMAND
    assert bagmod._kind("/go2/joint_states") == "joint_states"
    assert bagmod._kind("/camera/image_raw") == "camera_image"
    assert bagmod._kind("/planner/latent") is None


def _random_sensors(robot, rng):
    if robot == "go2":
        return {"joint_pos": DEFAULT_POSE_RAD + 0.1 * rng.normal(size=12), "joint_vel": rng.normal(size=12),
                "joint_torque": rng.normal(size=12), "imu_quat": np.array([0.99, 0.05, -0.05, 0.1]),
                "imu_gyro": rng.normal(size=3), "imu_acc": np.array([0.0, 0.0, 9.81]), "base_pos": rng.normal(size=3),
                "base_lin_vel": rng.normal(size=3), "foot_contact_forces": np.abs(rng.normal(size=4)),
                "height_map": rng.normal(size=(21, 15)).astype(np.float32)}
    return {"joint_pos": rng.normal(size=6), "joint_vel": rng.normal(size=6), "tcp_pos": rng.normal(size=3),
            "tcp_quat": np.array([0.0, 1.0, 0.0, 0.0]) + 0.05 * rng.normal(size=4), "wrench": rng.normal(size=6),
            "image": rng.integers(0, 255, size=(64, 64, 3), dtype=np.uint8)}


@pytest.mark.parametrize("robot", ["go2", "ur5e"])
def test_replay_observation_equals_encoder_observation(robot):
    """The replay buffer / bag path builds exactly the observation the encoder node builds from the same
    messages (same core proprio function, same gait clock, same default command)."""
    from simdist_core.data.transitions import DEFAULT_COMMAND, TransitionAssembler
    from simdist_core.robots import get_robot
    from simdist_ros.sensors import joint_names, obs_from_messages, sensors_to_messages

    spec, rng = get_robot(robot), np.random.default_rng(1)
    names = joint_names(robot)
    assembler = TransitionAssembler(spec)
    t0 = 5_000_000_000
    for k in range(4):
        t_ns = t0 + k * int(spec.control_dt * 1e9)
        sensors = _random_sensors(robot, rng)
        # One episode: joints and base / tool tip move a little per step (a random jump would start a new one).
        sensors["joint_pos"] = np.linspace(-0.5, 0.5, len(names)) + 0.01 * k
        sensors["base_pos" if robot == "go2" else "tcp_pos"] = np.array([0.3, 0.0, 0.27]) + 0.01 * k
        messages = sensors_to_messages(robot, sensors, names, t_ns)
        for kind, msg in messages.items():
            kind = {"camera": "camera_image"}.get(kind, kind)
            if kind != "foot_contacts":
                assembler.on_sensor(kind, msg)
        record = assembler.on_executed_command(np.zeros(spec.action_dim))
        assert record is not None, assembler.dropped
        command = np.array(DEFAULT_COMMAND[robot], np.float32)  # = the config YAMLs' default_command
        latest = {k: v for k, v in messages.items() if k != "foot_contacts"}
        expected = obs_from_messages(spec, latest, names, command, (t_ns - t0) * 1e-9, 0.3)
        np.testing.assert_allclose(record["obs/proprio"], expected["proprio"], rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(record["obs/command"], expected["command"])
        if robot == "go2":
            np.testing.assert_array_equal(record["obs/height_map"], expected["height_map"])
        else:
            np.testing.assert_array_equal(record["obs/image"], expected["image"])


def test_bag_to_dataset_ur5e(tmp_path):
    from simdist_core.robots import UR5E
    from simdist_ros.sensors import joint_names, sensors_to_messages

    rng = np.random.default_rng(2)
    topic_of = {"joint_states": topics.JOINT_STATES, "odom": topics.ODOM, "wrench": topics.WRENCH,
                "camera": topics.CAMERA_IMAGE}
    messages, t = [], 1_000_000_000
    for step in range(40):
        for kind, msg in sensors_to_messages("ur5e", _random_sensors("ur5e", rng), joint_names("ur5e"), t).items():
            messages.append((topic_of[kind], t, msg))
        if step == 20:  # the operator registers the fixture half way: the command switches from the default
            messages.append((topics.FIXTURE_POSE, t, msgs.make_fixture_pose((0.16, -0.51, 0.1), t)))
        messages.append((topics.EXECUTED_COMMAND, t + 1, msgs.make_float64_array(np.full(4, 0.5))))
        t += 50_000_000  # 20 Hz
    conns = list(DEFAULT_TOPICS["ur5e"] + COMMON_TOPICS)
    _write_bag(tmp_path / "bag", messages, conns)
    ds = Dataset(bagmod.bag_to_dataset(tmp_path / "bag", tmp_path / "ds", UR5E, fsync=False))
    assert len(ds) == 40 and ds.array("obs/proprio").shape == (40, UR5E.proprio_dim)
    assert ds.array("obs/image").shape == (40, 64, 64, 3) and ds.array("obs/image").dtype == np.uint8
    commands = ds.array("obs/command")
    np.testing.assert_allclose(commands[:20], np.tile([0.15, -0.5, 0.0], (20, 1)))
    np.testing.assert_allclose(commands[20:], np.tile([0.16, -0.51, 0.1], (20, 1)), atol=1e-6)


def test_bag_with_an_announced_reset_gives_two_episodes(tmp_path):
    """A continuous stream (no gap, no jump) with one ``episode_start`` in the middle: two episodes. The
    announcement is logged AFTER the sensors it announces (the recorder's receive order is not the publish
    order), which works because the converter reads all announcements first. A malformed one is counted."""
    from builtin_interfaces.msg import Time
    from std_msgs.msg import Header

    messages = _go2_messages(40)
    boundary = 1_000_000_000 + 25 * DT_NS  # the stamp of step 25
    late = max(i for i, (_, t, _) in enumerate(messages) if t <= boundary + 1000) + 1
    messages.insert(late, (topics.EPISODE_START, boundary + 2000, Header(stamp=msgs.ns_to_stamp(boundary),
                                                                         frame_id="fell")))
    messages.append((topics.EPISODE_START, boundary + 3000, Header(stamp=Time(sec=-5, nanosec=0), frame_id="x")))
    conns = list(DEFAULT_TOPICS["go2"] + COMMON_TOPICS)
    assert (topics.EPISODE_START, "std_msgs/msg/Header") in conns, "the recorder records episode_start"
    _write_bag(tmp_path / "bag", messages, conns)
    ds = Dataset(bagmod.bag_to_dataset(tmp_path / "bag", tmp_path / "ds", GO2, chunk_steps=16, fsync=False))
    episodes = ds.array("episode_id")
    assert len(ds) == 40
    np.testing.assert_array_equal(episodes, [0] * 25 + [1] * 15)
    assert int(ds.array("t_ns")[25]) == boundary
    # Without the announcement the same stream is one episode: it is the announcement that cuts it.
    _write_bag(tmp_path / "bag2", _go2_messages(40), conns)
    ds2 = Dataset(bagmod.bag_to_dataset(tmp_path / "bag2", tmp_path / "ds2", GO2, chunk_steps=16, fsync=False))
    assert set(np.unique(ds2.array("episode_id"))) == {0}


def test_bag_announcements_beyond_the_pending_bound_are_all_used(tmp_path):
    """More announcements than the assembler keeps pending (16): the converter feeds them in stamp order."""
    from std_msgs.msg import Header

    messages = _go2_messages(60)
    boundaries = [1_000_000_000 + k * DT_NS for k in range(2, 60, 3)]  # 20 resets
    messages = [(topics.EPISODE_START, 0, Header(stamp=msgs.ns_to_stamp(b), frame_id="fell")) for b in boundaries] \
        + messages
    _write_bag(tmp_path / "bag", messages, list(DEFAULT_TOPICS["go2"] + COMMON_TOPICS))
    ds = Dataset(bagmod.bag_to_dataset(tmp_path / "bag", tmp_path / "ds", GO2, chunk_steps=16, fsync=False))
    np.testing.assert_array_equal(ds.episode_starts, [0, *range(2, 60, 3)])
