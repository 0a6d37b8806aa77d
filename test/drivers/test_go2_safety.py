"""Go2 driver safety logic without ROS or DDS: limits, per-tick step, watchdog, e-stop latch, sequences."""

import numpy as np
import pytest
from go2_bringup.constants import foot_permutations, joint_permutations
from go2_bringup.go2_sdk import REMOTE_BUTTONS, remote_pressed
from go2_bringup.safety import CommandWatchdog, Mode, PoseSequence, SafetyConfig, SafetyController
from simdist_core.sim import go2_constants as gc

J = 3
ZERO = np.zeros(J)


def _make_config(**overrides):
    values = dict(q_min_rad=(-1.0,) * J, q_max_rad=(1.0,) * J, max_step_rad=0.1, max_tracking_error_rad=0.5,
                  max_velocity_rad_s=10.0, hold_timeout_s=0.1, damp_timeout_s=0.5, kp=25.0, kd=0.5, damping_kd=2.0)
    values.update(overrides)
    return SafetyConfig(**values)


def _make_active(now_s=0.0, **overrides):
    safety = SafetyController(_make_config(**overrides))
    assert safety.stand_up(ZERO, ZERO, now_s, duration_s=0.1)
    safety.send(ZERO, ZERO, now_s + 0.2)  # sequence done -> STAND
    assert safety.mode(now_s + 0.2) is Mode.STAND
    return safety


def test_config_names_the_bad_field():
    with pytest.raises(ValueError, match="damp_timeout_s"):
        _make_config(damp_timeout_s=0.05)
    with pytest.raises(ValueError, match="q_min_rad"):
        _make_config(q_min_rad=(2.0,) * J)
    with pytest.raises(ValueError, match="max_step_rad"):
        _make_config(max_step_rad=0.0)


def test_starts_damped_and_ignores_commands_until_stand_up():
    safety = SafetyController(_make_config())
    assert not safety.command(np.full(J, 0.2), 0.0)
    sent = safety.send(np.full(J, 0.3), ZERO, 0.0)
    assert sent.mode is Mode.DAMP and sent.kp == 0.0 and sent.kd == 2.0
    np.testing.assert_array_equal(sent.q_rad, np.full(J, 0.3))  # damping around the measured pose
    assert safety.ignored_commands == 1


def test_send_reports_each_clamp():
    safety = _make_active()
    assert safety.command(np.array([5.0, 0.05, -0.3]), 1.0)
    sent = safety.send(ZERO, ZERO, 1.0)
    # joint 0: 5.0 -> position limit 1.0 -> max step from the last target 0.0 -> 0.1
    # joint 1: 0.05 passes; joint 2: -0.3 -> max step -> -0.1
    np.testing.assert_allclose(sent.q_rad, [0.1, 0.05, -0.1])
    assert sent.mode is Mode.ACTIVE and sent.kp == 25.0
    np.testing.assert_array_equal(sent.clamped["position_limit"], [True, False, False])
    np.testing.assert_array_equal(sent.clamped["max_step"], [True, False, True])
    assert "tracking_error" not in sent.clamped


def test_tracking_error_bounds_the_target_around_the_measured_pose():
    safety = _make_active(max_step_rad=1.0)
    safety.command(np.full(J, 0.9), 1.0)
    sent = safety.send(np.full(J, -0.2), ZERO, 1.0)
    np.testing.assert_allclose(sent.q_rad, np.full(J, 0.3))  # -0.2 + 0.5
    assert sent.clamped["tracking_error"].all()


def test_non_finite_command_is_rejected_with_a_clear_error():
    safety = _make_active()
    with pytest.raises(ValueError, match="non-finite"):
        safety.command(np.array([0.0, np.nan, 0.0]), 1.0)
    with pytest.raises(ValueError, match="shape"):
        safety.command(np.zeros(J + 1), 1.0)


def test_watchdog_active_hold_damp_and_damp_latches():
    safety = _make_active()
    safety.command(np.full(J, 0.05), 1.0)
    assert safety.send(ZERO, ZERO, 1.05).mode is Mode.ACTIVE
    held = safety.send(ZERO, ZERO, 1.2)  # 0.2 s old: hold the last target
    assert held.mode is Mode.HOLD and held.kp == 25.0
    np.testing.assert_allclose(held.q_rad, np.full(J, 0.05))
    damped = safety.send(ZERO, ZERO, 1.6)  # 0.6 s old: damp
    assert damped.mode is Mode.DAMP and damped.kp == 0.0
    assert not safety.command(np.full(J, 0.05), 1.7), "a late command must not revive the robot"
    assert safety.send(ZERO, ZERO, 1.7).mode is Mode.DAMP


def test_estop_latches_until_reset_then_needs_stand_up():
    safety = _make_active()
    safety.command(np.full(J, 0.05), 1.0)
    safety.estop("operator")
    safety.estop("second reason")
    assert safety.estop_reason == "operator"
    assert safety.send(ZERO, ZERO, 1.01).mode is Mode.ESTOP
    assert not safety.command(ZERO, 1.02)
    assert not safety.stand_up(ZERO, ZERO, 1.02, 0.1)
    assert safety.send(ZERO, ZERO, 5.0).mode is Mode.ESTOP
    safety.reset()
    assert safety.estop_reason is None
    assert safety.send(ZERO, ZERO, 5.1).mode is Mode.DAMP
    assert safety.stand_up(ZERO, ZERO, 5.1, 0.1)


def test_estop_during_stand_up_damps_at_once_and_the_sequence_does_not_resume():
    safety = SafetyController(_make_config(max_step_rad=1.0, max_tracking_error_rad=2.0))
    start = np.full(J, -0.5)
    assert safety.stand_up(start, ZERO, 0.0, duration_s=1.0)
    assert safety.send(start, ZERO, 0.3).mode is Mode.SEQUENCE
    safety.estop("operator pressed L2+B during stand-up")
    sent = safety.send(np.full(J, -0.35), ZERO, 0.31)  # the very next tick
    assert sent.mode is Mode.ESTOP
    assert sent.kp == 0 and sent.kd > 0, "damping: no position gain, velocity gain only"
    for t in (0.5, 1.0, 2.0):  # past the sequence's end: still damped, never back to the stand-up pose
        assert safety.send(np.full(J, -0.35), ZERO, t).mode is Mode.ESTOP
    safety.reset()
    assert safety.send(ZERO, ZERO, 2.1).mode is Mode.DAMP, "a reset leaves the robot damped, not standing"


def test_overspeed_and_nan_state_latch_the_estop():
    safety = _make_active()
    sent = safety.send(ZERO, np.array([0.0, 12.0, 0.0]), 1.0)
    assert sent.mode is Mode.ESTOP and "joint 1" in safety.estop_reason
    safety = _make_active()
    assert safety.send(np.array([np.nan, 0, 0]), ZERO, 1.0).mode is Mode.ESTOP
    assert "non-finite" in safety.estop_reason


def test_sequences_start_at_the_measured_pose_and_end_in_their_mode():
    safety = SafetyController(_make_config(max_step_rad=1.0, max_tracking_error_rad=2.0))
    start = np.full(J, -0.5)
    assert safety.stand_up(start, ZERO, 0.0, duration_s=1.0)
    first = safety.send(start, ZERO, 0.0)
    assert first.mode is Mode.SEQUENCE
    np.testing.assert_allclose(first.q_rad, start)
    np.testing.assert_allclose(safety.send(start, ZERO, 0.5).q_rad, np.full(J, -0.25))  # cosine half-way
    safety.send(ZERO, ZERO, 1.0)
    assert safety.mode(1.0) is Mode.STAND
    assert safety.lie_down(ZERO, np.full(J, 0.4), 2.0, duration_s=1.0)
    assert not safety.command(ZERO, 2.1), "commands are ignored during a sequence"
    safety.send(ZERO, ZERO, 3.0)
    assert safety.mode(3.0) is Mode.DAMP


def test_pose_sequence_and_watchdog_helpers():
    seq = PoseSequence(ZERO, np.ones(J), start_s=1.0, duration_s=2.0)
    q, done = seq.target(0.0)
    assert not done and np.allclose(q, 0.0)
    q, done = seq.target(3.5)
    assert done and np.allclose(q, 1.0)
    dog = CommandWatchdog(0.1, 0.5)
    assert dog.mode(0.0) is Mode.DAMP and dog.age_s(0.0) == float("inf")
    dog.feed(1.0)
    assert dog.mode(1.05) is Mode.ACTIVE and dog.mode(1.3) is Mode.HOLD and dog.mode(1.6) is Mode.DAMP


def test_permutations_round_trip_and_name_the_sdk_slots():
    mj_to_sdk, sdk_to_mj = joint_permutations()
    mj = np.arange(12.0)
    np.testing.assert_array_equal(mj[mj_to_sdk][sdk_to_mj], mj)
    # SDK slot 0 is FR hip, slot 3 is FL hip, slot 6 is RR hip, slot 9 is RL hip.
    names = [gc.JOINT_NAMES[i] for i in mj_to_sdk]
    assert names[0] == "FR_hip_joint" and names[3] == "FL_hip_joint" and names[6] == "RR_hip_joint"
    assert names[9] == "RL_hip_joint"
    feet_mj_to_sdk, feet_sdk_to_mj = foot_permutations()
    assert [gc.LEGS[i] for i in feet_mj_to_sdk] == ["FR", "FL", "RR", "RL"]
    np.testing.assert_array_equal(np.arange(4)[feet_mj_to_sdk][feet_sdk_to_mj], np.arange(4))


def test_remote_buttons():
    word = (1 << REMOTE_BUTTONS["L2"]) | (1 << REMOTE_BUTTONS["B"])
    assert REMOTE_BUTTONS["L2"] == 5 and REMOTE_BUTTONS["B"] == 9  # byte 2 bit 5, byte 3 bit 1
    assert remote_pressed(word, ("L2", "B"))
    assert not remote_pressed(1 << REMOTE_BUTTONS["L2"], ("L2", "B"))
    assert not remote_pressed(word, ())
    with pytest.raises(KeyError, match="valid"):
        remote_pressed(word, ("Z",))


def test_wrong_length_joint_state_latches_the_estop_instead_of_raising():
    safety = _make_active()
    sent = safety.send(np.zeros(J + 1), ZERO, 0.3)
    assert sent.mode is Mode.ESTOP and sent.kp == 0.0 and sent.kd == 2.0 and sent.q_rad.shape == (J,)
    assert "shapes" in safety.estop_reason


def test_unknown_estop_button_is_refused_at_start():
    """Regression: the names were first checked inside the control tick, where a typo raised KeyError on every
    tick and the robot got no command at all. Now the config refuses them before anything starts."""
    from go2_bringup.go2_control import ControlConfig

    with pytest.raises(ValueError, match=r"unknown remote button\(s\) \['L3'\]; valid: .*'L2'"):
        ControlConfig(estop_buttons=("L3", "B"))
    assert ControlConfig(estop_buttons=()).estop_buttons == ()
