"""Message <-> array conversion: round trips and rejection of untrusted input (no graph needed)."""

import math

import numpy as np
import pytest
from geometry_msgs.msg import Twist
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray, Float64MultiArray, MultiArrayDimension

from simdist_ros import msgs

NAMES = ("a_joint", "b_joint", "c_joint")
T_NS = 12_345_678_901_234


def _make_js(**overrides):
    pos = overrides.pop("pos", np.array([0.1, -0.2, 0.3]))
    return msgs.make_joint_state(NAMES, pos, np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]), T_NS)


def test_stamp_round_trip_is_exact():
    assert msgs.stamp_to_ns(msgs.ns_to_stamp(T_NS)) == T_NS
    with pytest.raises(ValueError, match="t_ns"):
        msgs.ns_to_stamp(-1)


def test_joint_state_round_trip_and_reorder_by_name():
    msg = _make_js()
    pos, vel, eff = msgs.joint_state_to_arrays(msg, NAMES)
    np.testing.assert_allclose(pos, [0.1, -0.2, 0.3])
    # A driver may publish in another order: the conversion reorders by name.
    pos2, vel2, _ = msgs.joint_state_to_arrays(msg, tuple(reversed(NAMES)))
    np.testing.assert_allclose(pos2, [0.3, -0.2, 0.1])
    np.testing.assert_allclose(vel2, [3.0, 2.0, 1.0])
    msg.effort = []
    _, _, eff = msgs.joint_state_to_arrays(msg, NAMES)
    np.testing.assert_array_equal(eff, np.zeros(3))


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda m: setattr(m, "position", [0.0, 0.0]), "same length"),
        (lambda m: setattr(m, "name", ["a_joint", "x", "c_joint"]), "lacks joints"),
        (lambda m: setattr(m, "velocity", [0.0, math.nan, 0.0]), "non-finite"),
        (lambda m: setattr(m, "effort", [1.0]), "effort"),
    ],
)
def test_joint_state_rejects_bad_input(mutate, match):
    msg = _make_js()
    mutate(msg)
    with pytest.raises(msgs.MessageError, match=match):
        msgs.joint_state_to_arrays(msg, NAMES)


def test_imu_and_odom_round_trip_and_checks():
    q = np.array([math.cos(0.25), 0.0, 0.0, math.sin(0.25)])
    imu = msgs.make_imu(q, np.array([0.1, 0.2, 0.3]), np.array([0.0, 0.0, 9.81]), T_NS, "imu")
    quat, gyro, acc = msgs.imu_to_arrays(imu)
    np.testing.assert_allclose(quat, q)
    np.testing.assert_allclose(acc, [0, 0, 9.81])
    imu.orientation.w = 5.0  # not a unit quaternion
    with pytest.raises(msgs.MessageError, match="unit quaternion"):
        msgs.imu_to_arrays(imu)
    odom = msgs.make_odom(np.array([1.0, 2.0, 0.3]), q, np.array([0.5, 0, 0]), np.zeros(3), T_NS)
    pos, quat, lin, ang = msgs.odom_to_arrays(odom)
    np.testing.assert_allclose(pos, [1, 2, 0.3])
    np.testing.assert_allclose(lin, [0.5, 0, 0])
    odom.twist.twist.linear.y = math.inf
    with pytest.raises(msgs.MessageError, match="odom.twist.linear"):
        msgs.odom_to_arrays(odom)


def test_wrench_and_twist():
    w = msgs.make_wrench(np.array([1.0, 2, 3]), np.array([4.0, 5, 6]), T_NS)
    np.testing.assert_allclose(msgs.wrench_to_array(w), [1, 2, 3, 4, 5, 6])
    t = Twist()
    t.linear.x, t.linear.y, t.angular.z = 0.5, -0.1, 0.2
    cmd = msgs.task_command_to_array("go2", t)
    assert cmd.dtype == np.float32
    np.testing.assert_allclose(cmd, [0.5, -0.1, 0.2], rtol=1e-6)
    np.testing.assert_allclose(msgs.task_command_to_array("go2", msgs.make_task_command("go2", cmd, T_NS)), cmd)


def test_fixture_pose_command_round_trip_and_rejections():
    command = np.array([0.16, -0.49, -0.15], np.float32)  # hole x, y (m, base frame), yaw (rad)
    msg = msgs.make_task_command("ur5e", command, T_NS)
    assert msg.header.frame_id == "base" and msgs.stamp_to_ns(msg.header.stamp) == T_NS
    out = msgs.task_command_to_array("ur5e", msg)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, command, atol=1e-6)
    msg.pose.position.y = math.nan
    with pytest.raises(msgs.MessageError, match="fixture_pose"):
        msgs.task_command_to_array("ur5e", msg)
    zero = msgs.make_fixture_pose(command, T_NS)
    zero.pose.orientation.w = zero.pose.orientation.z = 0.0  # an all-zero quaternion is not a pose
    with pytest.raises(msgs.MessageError, match="unit quaternion"):
        msgs.task_command_to_array("ur5e", zero)


def test_height_map_round_trip_and_rejections():
    hm = np.arange(21 * 15, dtype=np.float32).reshape(21, 15) * -0.01
    msg = msgs.make_height_map(hm, T_NS)
    assert (msg.encoding, msg.height, msg.width, msg.step) == ("32FC1", 21, 15, 60)
    np.testing.assert_array_equal(msgs.height_map_to_array(msg, (21, 15)), hm)
    # Big-endian publishers exist: honour is_bigendian.
    be = Image(height=21, width=15, encoding="32FC1", is_bigendian=1, step=60, data=hm.astype(">f4").tobytes())
    np.testing.assert_array_equal(msgs.height_map_to_array(be, (21, 15)), hm)
    with pytest.raises(msgs.MessageError, match="size 21x15, expected 20x15"):
        msgs.height_map_to_array(msg, (20, 15))
    bad = msgs.make_height_map(hm, T_NS)
    bad.encoding = "16UC1"
    with pytest.raises(msgs.MessageError, match="encoding"):
        msgs.height_map_to_array(bad, (21, 15))
    short = msgs.make_height_map(hm, T_NS)
    short.data = bytes(msg.data)[:-4]
    with pytest.raises(msgs.MessageError, match="data bytes"):
        msgs.height_map_to_array(short, (21, 15))
    nan = hm.copy()
    nan[3, 4] = np.nan
    with pytest.raises(msgs.MessageError, match="non-finite"):
        msgs.height_map_to_array(msgs.make_height_map(nan, T_NS), (21, 15))


def test_rgb8_round_trip_with_padded_rows():
    img = np.random.default_rng(0).integers(0, 256, (8, 6, 3), dtype=np.uint8)
    msg = msgs.make_rgb8(img, T_NS)
    np.testing.assert_array_equal(msgs.rgb8_to_array(msg, (8, 6)), img)
    # A driver may pad rows (step > width * 3): the padding is dropped.
    padded = np.zeros((8, 20), np.uint8)
    padded[:, :18] = img.reshape(8, 18)
    msg2 = Image(height=8, width=6, encoding="rgb8", step=20, data=padded.tobytes())
    np.testing.assert_array_equal(msgs.rgb8_to_array(msg2, (8, 6)), img)
    msg2.encoding = "bgr8"
    with pytest.raises(msgs.MessageError, match="rgb8"):
        msgs.rgb8_to_array(msg2, (8, 6))


def test_command_conversion():
    a = msgs.command_to_array(msgs.make_float64_array(np.array([0.5, -1.5, 0.0, 1.0])), 4)
    assert a.dtype == np.float32
    np.testing.assert_allclose(a, [0.5, -1.5, 0.0, 1.0])  # out of range is the consumer's to clamp
    with pytest.raises(msgs.MessageError, match="expected 4"):
        msgs.command_to_array(Float64MultiArray(data=[0.0] * 3), 4)
    with pytest.raises(msgs.MessageError, match="non-finite"):
        msgs.command_to_array(Float64MultiArray(data=[0.0, math.nan, 0.0, 0.0]), 4)


def test_stamped_command_carries_its_observation_stamp_and_reads_as_a_plain_command():
    msg = msgs.make_command(np.array([0.1, -0.2, 0.3, 0.0]), T_NS)
    assert msgs.command_stamp_ns(msg) == T_NS
    np.testing.assert_allclose(msgs.command_to_array(msg, 4), [0.1, -0.2, 0.3, 0.0])  # drivers read data only
    assert msgs.command_stamp_ns(msgs.make_float64_array(np.zeros(4))) is None  # a teleop tool's command
    msg.layout.dim[0].stride = 2_000_000_000  # nanoseconds out of range: no stamp, not a crash
    assert msgs.command_stamp_ns(msg) is None


def test_command_carrying_its_plan_reads_as_its_action_and_gives_the_plan():
    plan = np.arange(12, dtype=np.float64).reshape(3, 4) / 20
    msg = msgs.make_command(plan[1], T_NS, plan)
    assert msgs.command_stamp_ns(msg) == T_NS
    np.testing.assert_allclose(msgs.command_to_array(msg, 4), plan[1])  # a driver that reads the action only
    np.testing.assert_allclose(msgs.read_command(msg, 4)[1], plan)
    assert msgs.read_command(msgs.make_command(plan[0], T_NS), 4)[1] is None


@pytest.mark.parametrize(("change", "match"), [
    (lambda m: m.layout.dim[1].__setattr__("stride", 3), "plan dimension"),
    (lambda m: m.layout.dim[1].__setattr__("size", 0), "plan dimension"),
    (lambda m: m.layout.dim[1].__setattr__("size", msgs.MAX_PLAN_ROWS + 1), "plan dimension"),
    (lambda m: m.layout.dim[1].__setattr__("size", 2), "expected 12"),
    (lambda m: m.data.__setitem__(9, math.nan), "non-finite"),
])
def test_forged_plans_are_refused(change, match):
    msg = msgs.make_command(np.zeros(4), T_NS, np.zeros((3, 4)))
    change(msg)
    with pytest.raises(msgs.MessageError, match=match):
        msgs.read_command(msg, 4)
    with pytest.raises(msgs.MessageError, match=match):  # a driver reading only the action drops it too
        msgs.command_to_array(msg, 4)


def test_latent_round_trip_keeps_exact_stamp_and_shapes():
    z = np.linspace(-1, 1, 64, dtype=np.float32)
    ctx = np.arange(51 * 64, dtype=np.float32).reshape(51, 64)
    msg = msgs.make_latent({"z": z, "context": ctx}, T_NS)
    blocks, t_ns = msgs.latent_to_arrays(msg, {"z": (64,), "context": (51, 64)})
    assert t_ns == T_NS  # exact: the stamp travels in uint32 layout fields, not in float32 data
    np.testing.assert_array_equal(blocks["z"], z)
    np.testing.assert_array_equal(blocks["context"], ctx)
    assert len(msg.data) == 64 + 51 * 64  # 13,312 bytes of floats: fine over loopback


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda m: m.layout.dim.pop(0), "stamp"),
        (lambda m: setattr(m.layout.dim[1], "label", "z(64)"), "name\\[d0"),
        (lambda m: setattr(m.layout.dim[1], "size", 63), "announces 63"),
        (lambda m: setattr(m, "data", list(m.data) + [0.0]), "data has"),
        (lambda m: m.data.__setitem__(5, float("nan")), "non-finite"),
        (lambda m: m.layout.dim.pop(2), "data has|missing"),
    ],
)
def test_latent_rejects_malformed_messages(mutate, match):
    msg = msgs.make_latent({"z": np.zeros(64), "context": np.zeros((51, 64))}, T_NS)
    mutate(msg)
    with pytest.raises(msgs.MessageError, match=match):
        msgs.latent_to_arrays(msg, {"z": (64,), "context": (51, 64)})


def test_latent_rejects_wrong_expected_shape():
    msg = msgs.make_latent({"z": np.zeros(32), "context": np.zeros((51, 64))}, T_NS)
    with pytest.raises(msgs.MessageError, match="expected \\(64,\\)"):
        msgs.latent_to_arrays(msg, {"z": (64,)})
    forged = Float32MultiArray()
    forged.layout.dim = [MultiArrayDimension(label="stamp", size=1, stride=2_000_000_000)]
    with pytest.raises(msgs.MessageError, match="nanoseconds"):
        msgs.latent_to_arrays(forged)


@pytest.mark.parametrize("robot", ["go2", "ur5e"])
def test_observation_round_trip_is_exact(robot):
    """What the encoder encoded reaches the replay buffer bit for bit (proprio float32, image bytes)."""
    from simdist_core.robots import get_robot

    spec, rng = get_robot(robot), np.random.default_rng(0)
    obs = {"proprio": rng.normal(size=spec.proprio_dim).astype(np.float32), "command": np.array([0.5, 0.1, -0.2])}
    if spec.height_map_shape:
        obs["height_map"] = rng.normal(size=spec.height_map_shape).astype(np.float32)
    if spec.image_shape:
        obs["image"] = rng.integers(0, 256, size=(*spec.image_shape, 3), dtype=np.uint8)
    action = rng.uniform(-1, 1, spec.action_dim).astype(np.float32)
    step = msgs.observation_to_step(msgs.make_observation(obs, action, T_NS, episode_start=True, episode=41), spec)
    assert step.t_ns == T_NS and step.episode_start and step.episode == 41
    np.testing.assert_array_equal(step.action_before, action)
    for key, value in obs.items():
        assert step.obs[key].dtype == (np.uint8 if key == "image" else np.float32)
        np.testing.assert_array_equal(step.obs[key], np.asarray(value, step.obs[key].dtype))


@pytest.mark.parametrize(("mutate", "match"), [
    (lambda m: m.data.__setitem__(0, float("inf")), "non-finite"),
    (lambda m: m.layout.dim.pop(1), "missing|data has"),
    (lambda m: m.data.__setitem__(len(m.data) - 1, 2.5), "episode counter"),
    (lambda m: m.data.__setitem__(len(m.data) - 1, -1.0), "episode counter"),
])
def test_observation_rejects_forged_messages(mutate, match):
    from simdist_core.robots import GO2

    obs = {"proprio": np.zeros(GO2.proprio_dim), "command": np.zeros(3), "height_map": np.zeros((21, 15))}
    msg = msgs.make_observation(obs, np.zeros(12), T_NS, episode_start=False, episode=3)
    mutate(msg)
    with pytest.raises(msgs.MessageError, match=match):
        msgs.observation_to_step(msg, GO2)


def test_observation_rejects_an_image_that_is_not_bytes():
    from simdist_core.robots import UR5E

    obs = {"proprio": np.zeros(UR5E.proprio_dim), "command": np.zeros(3),
           "image": np.full((*UR5E.image_shape, 3), 255.5)}
    msg = msgs.make_observation(obs, np.zeros(UR5E.action_dim), T_NS, episode_start=False, episode=0)
    with pytest.raises(msgs.MessageError, match="image values"):
        msgs.observation_to_step(msg, UR5E)


def test_plan_round_trip():
    mean = np.random.default_rng(1).uniform(-1, 1, (25, 12))
    msg = msgs.make_plan(mean, [f"j{i}" for i in range(12)], 0.02, T_NS)
    assert len(msg.points) == 25
    last = msg.points[-1].time_from_start
    assert (last.sec, last.nanosec) == (0, 500_000_000)  # 25 * 20 ms
    np.testing.assert_allclose(msgs.plan_to_array(msg, 12), mean)
    msg.points[3].positions = [0.0] * 11
    with pytest.raises(msgs.MessageError, match="12 positions"):
        msgs.plan_to_array(msg, 12)


def test_probe_to_positions_integrates_velocity():
    probe = np.tile([1.0, 0.5, 0.0], (25, 1))  # 1 m/s forward, 0.5 m/s left for 25 ticks of 20 ms
    pts = msgs.probe_to_positions(probe, "base_velocity", 0.02)
    assert pts.shape == (26, 3)
    np.testing.assert_allclose(pts[0], 0.0)
    np.testing.assert_allclose(pts[-1], [0.5, 0.25, 0.0])  # 0.5 s * velocity
    tcp = msgs.probe_to_positions(probe, "tcp_position", 0.05)
    np.testing.assert_allclose(tcp[1:], probe)
    with pytest.raises(ValueError, match="unknown probe"):
        msgs.probe_to_positions(probe, "joint", 0.02)


def test_rollout_markers_round_trip():
    rng = np.random.default_rng(2)
    paths = [rng.normal(size=(26, 3)) for _ in range(4)]  # the plan, then three sampled rollouts
    arr = msgs.make_rollout_markers(paths, "base_yaw", T_NS, returns=[-1.0, -2.0, -5.0])
    assert arr.markers[0].action == msgs.Marker.DELETEALL  # rollouts of a larger earlier set must not linger
    drawn = arr.markers[1:]
    assert [m.id for m in drawn] == [0, 1, 2, 3] and [m.ns for m in drawn] == ["plan"] + ["sampled_rollouts"] * 3
    assert {m.header.frame_id for m in drawn} == {"base_yaw"}
    assert drawn[0].scale.x == 2 * drawn[1].scale.x
    best, middle, worst = ((m.color.r, m.color.g) for m in drawn[1:])
    assert best == (0.0, 1.0) and worst == (1.0, 0.0) and middle[0] > 0 and middle[1] > 0  # green .. red
    for got, want in zip(msgs.markers_to_paths(arr), paths, strict=True):
        np.testing.assert_allclose(got, want)
    with pytest.raises(ValueError, match="one return per sampled rollout"):
        msgs.make_rollout_markers(paths, "base_yaw", T_NS, returns=[0.0])
    only_plan = msgs.make_rollout_markers(paths[:1], "base", T_NS)
    assert len(msgs.markers_to_paths(only_plan)) == 1


def test_diagnostics_helpers():
    status = msgs.make_status("planner", "warn", "holding", {"p99_ms": 12.3456789, "ticks": 7})
    assert status.level == msgs.DiagnosticStatus.WARN
    assert msgs.status_values(status) == {"p99_ms": "12.3457", "ticks": "7"}
    arr = msgs.make_diagnostics([status], T_NS)
    assert msgs.stamp_to_ns(arr.header.stamp) == T_NS
    with pytest.raises(ValueError, match="valid"):
        msgs.make_status("x", "fatal", "", {})
