"""The encoder node in its own process, fed by the test acting as the Go2 driver.

Valid sensor sets give latents (z + context) stamped with the observation time; NaN, mis-shaped and
late inputs are dropped with a diagnostic, and no latent ever carries the stamp of a bad sample.
"""

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from node_harness import NodeProcess, Observer, diag_values, every, tiny_world_model, unique_namespace
from simdist_core.checkpoint import save_checkpoint
from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD, JOINT_NAMES
from simdist_ros.sensors import sensors_to_messages
from std_msgs.msg import Float32MultiArray, Header

from simdist_ros import msgs, qos, topics

HZ = 20.0


def _sensors(rng):
    return {
        "joint_pos": DEFAULT_POSE_RAD + rng.normal(0, 0.05, 12),
        "joint_vel": rng.normal(0, 0.1, 12),
        "joint_torque": np.zeros(12),
        "imu_quat": np.array([1.0, 0.0, 0.0, 0.0]),
        "imu_gyro": rng.normal(0, 0.1, 3),
        "imu_acc": np.array([0.0, 0.0, 9.81]),
        "base_lin_vel": np.array([0.3, 0.0, 0.0]),
        "base_pos": np.array([0.0, 0.0, 0.27]),
        "foot_contact_forces": np.zeros(4),
        "height_map": np.full((21, 15), -0.27, np.float32),
    }


def _sensor_publishers(obs, messages):
    """A SENSOR-QoS publisher per sensor message the driver would send (``sensors_to_messages`` keys)."""
    return {key: obs.publisher(type(m), topics.CAMERA_IMAGE if key == "camera" else getattr(topics, key.upper()),
                               qos.SENSOR) for key, m in messages.items()}


def _steps_in_time_order(observations, spec):
    """The encoder's ``observation`` messages received so far as steps in stamp order (from a copy of the list the
    receiving callback appends to)."""
    return sorted((msgs.observation_to_step(m, spec) for m in list(observations)), key=lambda s: s.t_ns)


def _int(store, key):
    return int(diag_values(store, "encoder").get(key, "0"))


@pytest.mark.timeout(240)
def test_encoder_node_publishes_latents_and_drops_bad_input(tmp_path):
    save_checkpoint(tmp_path / "ckpt", tiny_world_model("go2"), version=7)
    ns = unique_namespace("encoder")
    params = {"checkpoint": str(tmp_path / "ckpt"), "control_hz": HZ, "diagnostics_period_s": 0.25}
    node = NodeProcess("encoder_node", params, "encoder", ns)
    obs = Observer(ns)
    rng = np.random.default_rng(0)
    try:
        latents = obs.collect(Float32MultiArray, topics.LATENT, qos.LATENT(HZ))
        observations = obs.collect(Float32MultiArray, topics.OBSERVATION, qos.OBSERVATION(HZ))
        diags = obs.collect(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        pubs = _sensor_publishers(obs, sensors_to_messages("go2", _sensors(rng), JOINT_NAMES, 0))
        sent_stamps: set[int] = set()
        bad_stamps: set[int] = set()
        mode = {"kind": "good"}

        def drive():
            t_ns = obs.node.get_clock().now().nanoseconds
            sensors = _sensors(rng)
            sensors["joint_pos"] += mode.get("offset", 0.0)
            if mode["kind"] == "nan":
                sensors["joint_vel"][3] = np.nan
            out = sensors_to_messages("go2", sensors, JOINT_NAMES, t_ns)
            if mode["kind"] == "shape":
                out["height_map"] = msgs.make_height_map(np.zeros((20, 15), np.float32), t_ns)
            # A NaN joint_states sample must never become a latent. A round with a bad height map only has a bad
            # map: its (good) joint_states sample may be encoded with the previous map, still within its age
            # limit, when the new map arrives late (the control-rate timer's path; seen on a loaded machine).
            {"nan": bad_stamps, "good": sent_stamps}.get(mode["kind"], set()).add(t_ns)
            for key, msg in out.items():
                pubs[key].publish(msg)

        feed = every(1.0 / HZ, drive)

        # Waiting for input is reported, not an error that kills the node.
        assert obs.spin_until(lambda: _int(diags, "waiting_for_input") > 0 or not node.alive(), 120.0), node.log()
        # 1. Valid input: latents with z (D,), context (S, W) and the observation stamp of a sample we sent.
        assert obs.spin_until(lambda: len(latents) >= 10, 60.0, on_spin=feed), node.log()[-3000:]
        blocks, t_ns = msgs.latent_to_arrays(latents[-1], {"z": (16,), "context": (51, 16)})
        assert t_ns in sent_stamps
        assert np.all(np.isfinite(blocks["z"])) and np.any(blocks["context"] != 0.0)
        assert diag_values(diags, "encoder")["model_version"] == "7"

        # An episode reset (joints jump by 1 rad) restarts the history once; latents keep coming. (A stall of
        # this test's driver, more than 2.5 ticks between samples, restarts it too: counted as episode_gap.)
        n_latents = len(latents)
        mode["offset"] = 1.0
        assert obs.spin_until(lambda: len(latents) >= n_latents + 5, 60.0, on_spin=feed), diag_values(diags, "encoder")
        assert obs.spin_until(lambda: _int(diags, "episode_joint_jump") >= 1, 30.0, on_spin=feed), node.log()[-2000:]
        assert _int(diags, "episode_joint_jump") == 1, node.log()[-2000:]
        assert _int(diags, "history_restarts") >= 1 and "restarting the history" in node.log()

        # A reset announced on episode_start restarts the history at the sample it names, with no jump at all;
        # a malformed announcement is counted and ignored.
        start_pub = obs.publisher(Header, topics.EPISODE_START, qos.EPISODE_START)
        assert obs.spin_until(lambda: start_pub.get_subscription_count() >= 1, 30.0, on_spin=feed)
        forged = Header(frame_id="forged")
        forged.stamp.sec = -1
        start_pub.publish(forged)
        start_pub.publish(Header(stamp=msgs.ns_to_stamp(obs.node.get_clock().now().nanoseconds + 300_000_000),
                                 frame_id="fell"))
        assert obs.spin_until(lambda: _int(diags, "episode_announced") >= 1, 30.0, on_spin=feed), node.log()[-2000:]
        assert obs.spin_until(lambda: _int(diags, "bad_episode_start") >= 1, 30.0, on_spin=feed), node.log()[-2000:]
        assert _int(diags, "episode_announced") == 1 and _int(diags, "episode_joint_jump") == 1
        # A history restart (the first sample, the jump, the announcement; a stall of this driver adds gaps) marks
        # the latent it starts with episode_start, so the planner drops its warm start there; the others are 0.
        n_latents = len(latents)
        assert obs.spin_until(lambda: len(latents) >= n_latents + 3, 30.0, on_spin=feed)
        flags = [float(msgs.latent_to_arrays(m)[0]["episode_start"][0]) for m in latents]
        assert flags[0] == 1.0 and set(flags) == {0.0, 1.0} and sum(flags) >= 3, flags
        # The episode counter goes up by one exactly where a latent is marked, so a planner that missed the
        # marked latent still sees the episode change.
        episodes = [float(msgs.latent_to_arrays(m)[0]["episode"][0]) for m in latents]
        assert episodes[0] == 1.0 and episodes == list(np.cumsum(flags)), (episodes, flags)
        # This driver does not stamp its executed commands: the delay they had is unknown (-1), never made up.
        assert {float(msgs.latent_to_arrays(m)[0]["applied_delay"][0]) for m in latents} == {-1.0}

        # 2. NaN joint velocities, then 3. a 20x15 height map: dropped, counted, never encoded.
        for kind in ("nan", "shape"):
            before = _int(diags, "bad_input")
            mode["kind"] = kind
            assert obs.spin_until(lambda b=before: _int(diags, "bad_input") >= b + 5, 60.0, on_spin=feed), (
                kind,
                diag_values(diags, "encoder"),
            )
        mode["kind"] = "good"
        n_latents = len(latents)
        assert obs.spin_until(lambda: len(latents) >= n_latents + 5, 60.0, on_spin=feed), diag_values(diags, "encoder")
        published = {msgs.latent_to_arrays(m)[1] for m in latents}
        assert not published & bad_stamps, "a latent was published from bad input"
        log = node.log()
        assert "non-finite" in log and "expected 21x15" in log
        # The replay buffer's input: each observation the encoder encoded, with the latent's stamp and episode
        # flags (observations and latents are separate QoS streams, so compare the stamps both carry).
        by_stamp = {msgs.latent_to_arrays(m)[1]: msgs.latent_to_arrays(m)[0] for m in latents}
        steps = [msgs.observation_to_step(m, tiny_world_model("go2").spec) for m in observations]
        matched = [step for step in steps if step.t_ns in by_stamp]
        assert len(matched) >= 0.8 * len(steps) and len(steps) >= 20, (len(matched), len(steps))
        assert not {step.t_ns for step in steps} & bad_stamps, "an observation was published from bad input"
        for step in matched:
            assert step.episode_start == bool(by_stamp[step.t_ns]["episode_start"][0])
            assert step.episode == int(by_stamp[step.t_ns]["episode"][0])
            assert step.obs["height_map"].shape == (21, 15) and np.all(np.isfinite(step.obs["proprio"]))

        # 4. Input stops: ticks are skipped as late input, no new latents.
        before = _int(diags, "late_input")
        assert obs.spin_until(lambda: _int(diags, "late_input") > before + 3, 30.0), diag_values(diags, "encoder")
        n_latents = len(latents)
        obs.spin_for(0.5)
        assert len(latents) == n_latents, (
            f"no latent may be published without fresh input: {diag_values(diags, 'encoder')}"
        )
    finally:
        obs.close()
        rc = node.stop()
    assert rc == 0, f"encoder_node did not exit cleanly (rc={rc}):\n{node.log()[-3000:]}"


@pytest.mark.timeout(240)
def test_ur5e_encoder_follows_the_registered_fixture_pose(tmp_path):
    """UR5e's task command is the fixture pose on ``fixture_pose``: it changes the latent; a bad one is ignored."""
    from simdist_ros.sensors import joint_names

    save_checkpoint(tmp_path / "ckpt", tiny_world_model("ur5e"), version=3)
    ns = unique_namespace("encoder_ur5e")
    params = {"checkpoint": str(tmp_path / "ckpt"), "robot": "ur5e", "control_hz": HZ, "diagnostics_period_s": 0.25,
              "default_command": [0.15, -0.5, 0.0]}  # fmt: skip
    node = NodeProcess("encoder_node", params, "encoder", ns)
    obs = Observer(ns)
    sensors = {"joint_pos": np.array([-1.6, -1.6, 1.9, -1.9, -1.57, 0.0]), "joint_vel": np.zeros(6),
               "tcp_pos": np.array([0.15, -0.5, 0.12]), "tcp_quat": np.array([0.0, 1.0, 0.0, 0.0]),
               "wrench": np.zeros(6), "image": np.full((64, 64, 3), 90, np.uint8)}  # the same reading every tick
    try:
        latents = obs.collect(Float32MultiArray, topics.LATENT, qos.LATENT(HZ))
        observations = obs.collect(Float32MultiArray, topics.OBSERVATION, qos.OBSERVATION(HZ))
        diags = obs.collect(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        first = sensors_to_messages("ur5e", sensors, joint_names("ur5e"), 0)
        pubs = _sensor_publishers(obs, first)
        fixture_pub = obs.publisher(PoseStamped, topics.FIXTURE_POSE, qos.RELIABLE)

        def drive():
            t_ns = obs.node.get_clock().now().nanoseconds
            for key, msg in sensors_to_messages("ur5e", sensors, joint_names("ur5e"), t_ns).items():
                pubs[key].publish(msg)

        feed = every(1.0 / HZ, drive)

        def z_after(n_new):  # z of the newest latent once n_new more have arrived (the history is constant)
            n = len(latents)
            assert obs.spin_until(lambda: len(latents) >= n + n_new, 60.0, on_spin=feed), node.log()[-3000:]
            return msgs.latent_to_arrays(latents[-1], {"z": (16,), "context": (51, 16)})[0]["z"]

        z_default = z_after(30)  # the history (25 rows) is full of the same reading
        np.testing.assert_allclose(z_after(3), z_default, atol=1e-6)
        fixture_pub.publish(msgs.make_fixture_pose((0.17, -0.52, 0.15), 0))
        z_moved = z_after(5)
        assert np.abs(z_moved - z_default).max() > 1e-4, "the fixture pose must reach the model as its command"
        bad = msgs.make_fixture_pose((0.13, -0.48, 0.0), 0)
        bad.pose.position.x = float("nan")
        fixture_pub.publish(bad)
        assert obs.spin_until(lambda: _int(diags, "bad_task_command") >= 1, 30.0, on_spin=feed), node.log()[-2000:]
        np.testing.assert_allclose(z_after(3), z_moved, atol=1e-6)  # the bad pose was ignored
        assert "task command rejected" in node.log()
        # The replay buffer gets the camera image the encoder saw, as bytes, and the command it used.
        steps = [msgs.observation_to_step(m, tiny_world_model("ur5e").spec) for m in observations]
        assert steps and all(step.obs["image"].dtype == np.uint8 for step in steps)
        np.testing.assert_array_equal(steps[-1].obs["image"], sensors["image"])
        np.testing.assert_allclose(steps[-1].obs["command"][:2], [0.17, -0.52], atol=1e-6)
    finally:
        obs.close()
        rc = node.stop()
    assert rc == 0, f"encoder_node did not exit cleanly (rc={rc}):\n{node.log()[-3000:]}"


def _episodes_seen(observations, spec) -> list[tuple[bool, list[float]]]:
    """The received observations grouped by episode in stamp order: (whether its first sample was received, that is
    marked ``episode_start``; the forward velocity command of each sample)."""
    episodes: dict[int, tuple[bool, list[float]]] = {}
    for step in _steps_in_time_order(observations, spec):
        episodes.setdefault(step.episode, (bool(step.episode_start), []))[1].append(float(step.obs["command"][0]))
    return list(episodes.values())


@pytest.mark.timeout(240)
def test_go2_encoder_ramps_the_velocity_command_from_rest_and_to_a_new_cmd_vel(tmp_path):
    """With ``command_ramp_s`` the observations (what the model sees and the replay buffer records) carry a command
    that starts at rest with each episode and moves to each new ``cmd_vel`` linearly over that time.

    Read per episode: the first observations can predate this subscription's discovery, and a stall of this test's
    driver longer than 2.5 periods rightly starts an episode (a ramp from rest again) on a loaded machine.
    """
    from geometry_msgs.msg import Twist

    save_checkpoint(tmp_path / "ckpt", tiny_world_model("go2"), version=1)
    ns = unique_namespace("encoder_ramp")
    params = {"checkpoint": str(tmp_path / "ckpt"), "control_hz": HZ, "diagnostics_period_s": 0.25,
              "default_command": [0.8, 0.0, 0.0], "command_ramp_s": 0.5}
    node = NodeProcess("encoder_node", params, "encoder", ns)
    obs = Observer(ns)
    rng = np.random.default_rng(1)
    spec = tiny_world_model("go2").spec
    # The ramp advances one model period (1 / spec.control_hz) per sample, whatever rate this test feeds at.
    step_max = 0.8 / (0.5 * spec.control_hz) + 1e-5
    try:
        observations = obs.collect(Float32MultiArray, topics.OBSERVATION, qos.OBSERVATION(HZ))
        pubs = _sensor_publishers(obs, sensors_to_messages("go2", _sensors(rng), JOINT_NAMES, 0))
        cmd_pub = obs.publisher(Twist, topics.TASK_COMMAND, qos.RELIABLE)
        start_pub = obs.publisher(Header, topics.EPISODE_START, qos.EPISODE_START)
        operator = {"vx": 0.8}

        def drive():
            t_ns = obs.node.get_clock().now().nanoseconds
            cmd_pub.publish(msgs.make_twist_command((operator["vx"], 0.0, 0.0)))
            for key, msg in sensors_to_messages("go2", _sensors(rng), JOINT_NAMES, t_ns).items():
                pubs[key].publish(msg)

        feed = every(1.0 / HZ, drive)
        assert obs.spin_until(lambda: len(observations) >= 5, 90.0, on_spin=feed), node.log()[-3000:]
        # A reset announced by the robot, so that an episode is seen from its first sample.
        start_pub.publish(Header(stamp=msgs.ns_to_stamp(obs.node.get_clock().now().nanoseconds + 200_000_000),
                                 frame_id="reset"))

        def at_full_speed() -> bool:  # the newest sample is at the command, in an episode seen from its start
            seen = _episodes_seen(observations, spec)
            return seen[-1][0] and seen[-1][1][-1] == pytest.approx(0.8)

        def why():
            return _episodes_seen(observations, spec), node.log()[-3000:]

        assert obs.spin_until(at_full_speed, 90.0, on_spin=feed), why()
        seen = _episodes_seen(observations, spec)
        for started, vx in seen:
            assert not started or vx[0] == 0.0, seen  # every episode starts at rest
            assert np.all(np.diff(vx) >= -1e-6) and max(vx) <= 0.8 + 1e-6, seen  # up to the command, no further
            assert np.all(np.diff(vx) <= step_max), seen  # never faster than the ramp
        assert any(0.0 < v < 0.8 for v in seen[-1][1]), seen
        # A new cmd_vel: the command moves there over the ramp time, not at once.
        episodes_before, samples_before = len(seen), len(seen[-1][1])
        operator["vx"] = 0.4

        def settled_or_ended() -> bool:  # the episode at full speed reached the new command, or a reset ended it
            seen = _episodes_seen(observations, spec)
            return len(seen) > episodes_before or seen[-1][1][-1] == pytest.approx(0.4)

        assert obs.spin_until(settled_or_ended, 90.0, on_spin=feed), why()
        seen = _episodes_seen(observations, spec)
        after = seen[episodes_before - 1][1][samples_before - 1 :]  # from the last sample at 0.8 on
        assert after[-1] == pytest.approx(0.4), seen  # (a reset within the 0.5 s of the ramp would end it: rare)
        assert np.all(np.diff(after) <= 1e-6) and np.all(np.diff(after) >= -step_max), seen
        assert any(0.4 + 1e-3 < v < 0.8 - 1e-3 for v in after), seen
    finally:
        obs.close()
        rc = node.stop()
    assert rc == 0, f"encoder_node did not exit cleanly (rc={rc}):\n{node.log()[-3000:]}"


@pytest.mark.timeout(240)
def test_go2_encoder_heading_hold_turns_the_robot_back_to_its_start_heading(tmp_path):
    """With ``heading_hold`` the command the model sees (and the replay buffer records) gets a yaw rate of 1 /s times
    the heading error from the IMU, the target being the heading the robot had when the episode started."""
    save_checkpoint(tmp_path / "ckpt", tiny_world_model("go2"), version=1)
    ns = unique_namespace("encoder_hold")
    params = {"checkpoint": str(tmp_path / "ckpt"), "control_hz": HZ, "diagnostics_period_s": 0.25,
              "default_command": [0.5, 0.0, 0.0], "heading_hold": True}
    node = NodeProcess("encoder_node", params, "encoder", ns)
    obs = Observer(ns)
    rng = np.random.default_rng(2)
    spec = tiny_world_model("go2").spec
    try:
        observations = obs.collect(Float32MultiArray, topics.OBSERVATION, qos.OBSERVATION(HZ))
        pubs = _sensor_publishers(obs, sensors_to_messages("go2", _sensors(rng), JOINT_NAMES, 0))
        heading = {"yaw": 0.0}

        def drive():
            t_ns = obs.node.get_clock().now().nanoseconds
            sensors = _sensors(rng)
            half = heading["yaw"] / 2
            sensors["imu_quat"] = np.array([np.cos(half), 0.0, 0.0, np.sin(half)])
            for key, msg in sensors_to_messages("go2", sensors, JOINT_NAMES, t_ns).items():
                pubs[key].publish(msg)

        feed = every(1.0 / HZ, drive)

        def yaw_rates():
            steps = _steps_in_time_order(observations, spec)
            return steps, [float(s.obs["command"][2]) for s in steps]

        assert obs.spin_until(lambda: len(observations) >= 10, 90.0, on_spin=feed), node.log()[-3000:]
        steps, first = yaw_rates()
        assert steps[0].episode_start and all(r == pytest.approx(0.0, abs=1e-6) for r in first)  # on its heading
        heading["yaw"] = 0.3  # turned 0.3 rad left of where the episode started: asked to turn right
        n = len(observations)
        assert obs.spin_until(lambda: len(observations) >= n + 10, 90.0, on_spin=feed), node.log()[-3000:]
        steps, later = yaw_rates()
        assert not any(s.episode_start for s in steps[n:])
        assert later[-1] == pytest.approx(-0.3, abs=1e-4), later
        assert [float(s.obs["command"][0]) for s in steps[n:]] == pytest.approx([0.5] * (len(steps) - n))
    finally:
        obs.close()
        rc = node.stop()
    assert rc == 0, f"encoder_node did not exit cleanly (rc={rc}):\n{node.log()[-3000:]}"


@pytest.mark.timeout(120)
def test_ur5e_encoder_refuses_a_heading_hold(tmp_path):
    """The UR5e's command is a fixture pose, which has no heading to hold: the node does not start."""
    save_checkpoint(tmp_path / "ckpt", tiny_world_model("ur5e"), version=1)
    node = NodeProcess("encoder_node", {"checkpoint": str(tmp_path / "ckpt"), "robot": "ur5e", "heading_hold": True,
                                        "default_command": [0.15, -0.5, 0.0]},
                       "encoder", unique_namespace("encoder_ur5e_hold"))  # fmt: skip
    try:
        rc = node.proc.wait(timeout=90)  # it exits by itself, before spinning
    finally:
        node.stop()
    assert rc != 0 and "velocity command" in node.log(), node.log()[-2000:]


@pytest.mark.timeout(120)
def test_ur5e_encoder_refuses_a_command_ramp(tmp_path):
    """The UR5e's command is a fixture pose: ramping it would move the hole, so the node does not start."""
    save_checkpoint(tmp_path / "ckpt", tiny_world_model("ur5e"), version=1)
    node = NodeProcess("encoder_node", {"checkpoint": str(tmp_path / "ckpt"), "robot": "ur5e", "command_ramp_s": 2.0,
                                        "default_command": [0.15, -0.5, 0.0]},
                       "encoder", unique_namespace("encoder_ur5e_ramp"))  # fmt: skip
    try:
        rc = node.proc.wait(timeout=90)  # it exits by itself, before spinning
    finally:
        node.stop()
    assert rc != 0 and "velocity command" in node.log(), node.log()[-2000:]
