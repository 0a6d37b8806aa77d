"""The Go2 driver's control path over real DDS (unitree_sdk2py on loopback) against a MuJoCo Go2 process.

The SDK's DDS factory is one per process, so this test process joins one private domain (derived from the
pid) and each test starts its own simulator process on it. Assertions count messages and states; waits
are bounded polls, never timing assertions.
"""

import os
import threading
import time

import numpy as np
import pytest
from go2_bringup.constants import joint_limits_rad
from go2_bringup.go2_control import ControlConfig, ControlLoop, Go2Controller
from go2_bringup.go2_sdk import BridgeConfig, Go2NotRespondingError, Go2SdkBridge
from go2_bringup.safety import Mode, SafetyConfig, SafetyController
from go2_dds_sim import Go2DdsSim
from simdist_core.sim import go2_constants as gc

pytestmark = pytest.mark.timeout(180)

DOMAIN_ID = 1 + os.getpid() % 99  # private Unitree domain; ROS tests use 100-199
DAMPING_KD = 2.0


def _wait(predicate, timeout_s=30.0, poll_s=0.01):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return predicate()


def _make_stack(on_state=None, clock=time.monotonic, **control):
    bridge = Go2SdkBridge(BridgeConfig(domain_id=DOMAIN_ID, interface="lo"), on_state=on_state)
    bridge.start()
    lo, hi = joint_limits_rad()
    safety = SafetyController(SafetyConfig(q_min_rad=tuple(lo), q_max_rad=tuple(hi), damping_kd=DAMPING_KD,
                                           hold_timeout_s=0.3, damp_timeout_s=1.5))
    # Generous timeouts: a loaded CI machine must not trip the watchdog where a test does not mean to.
    defaults = dict(control_hz=250.0, stand_duration_s=1.0, state_timeout_s=2.0)
    defaults.update(control)
    controller = Go2Controller(ControlConfig(**defaults), bridge, safety, clock=clock)
    return bridge, controller, ControlLoop(controller)


@pytest.fixture
def sim():
    robot = Go2DdsSim(DOMAIN_ID).start()
    yield robot
    robot.stop()


@pytest.fixture
def stack(sim):
    bridge, controller, loop = _make_stack()
    assert bridge.wait_for_state(30.0) is not None
    loop.start()
    yield sim, bridge, controller
    loop.stop()
    bridge.close()


def _why(controller):
    sent = controller.last_sent
    return f"mode {sent.mode if sent else None}, e-stop: {controller.safety.estop_reason}"


def _stand(controller):
    assert controller.stand_up()
    assert _wait(lambda: controller.last_sent is not None and controller.last_sent.mode is Mode.STAND)


def test_no_robot_is_reported_with_the_cyclonedds_hint():
    bridge = Go2SdkBridge(BridgeConfig(domain_id=DOMAIN_ID, interface="lo"))
    bridge.start()
    try:
        with pytest.raises(Go2NotRespondingError, match="CycloneDDS 0.10"):
            bridge.wait_for_state(0.5)
    finally:
        bridge.close()


def test_commands_arrive_with_valid_crc_in_sdk_motor_order(stack):
    sim, bridge, controller = stack
    _stand(controller)
    # A distinct offset per joint, so a wrong permutation cannot pass: action a -> target default + 1.0 * a.
    action = np.linspace(-0.12, 0.12, 12)
    target_mj = gc.DEFAULT_POSE_RAD + action
    for _ in range(40):
        assert controller.set_action(action), _why(controller)
        time.sleep(0.02)
    assert _wait(lambda: controller.last_sent.mode is Mode.ACTIVE
                 and np.allclose(controller.last_sent.q_rad, target_mj))
    n_before = sim.stats()["commands"]
    for _ in range(10):
        controller.set_action(action)
        time.sleep(0.02)
    stats = sim.stats()
    assert stats["commands"] > n_before
    assert stats["crc_bad"] == 0 and stats["crc_ok"] == stats["commands"]
    last = stats["cmds"][-1]  # (12, 6) SDK order: mode, q, dq, kp, kd, tau
    np.testing.assert_allclose(last[:, 1], target_mj[gc.MUJOCO_TO_SDK], atol=1e-5)
    assert last[0, 1] == pytest.approx(target_mj[gc.JOINT_NAMES.index("FR_hip_joint")], abs=1e-5)
    np.testing.assert_allclose(last[:, 3], 25.0)
    np.testing.assert_allclose(last[:, 4], 0.5)
    assert np.all(last[:, 0] == 1)
    # Joint states come back in MuJoCo order: the driver's view equals the simulator's qpos.
    state = bridge.latest()
    np.testing.assert_allclose(state.q_rad, stats["q_mj"], atol=0.05)
    assert stats["base_height_m"] > 0.15, "the PD should keep the Go2 standing (lying: ~0.08 m)"
    assert state.foot_force.shape == (4,) and np.all(state.foot_force > 0)


def test_watchdog_holds_then_damps_when_commands_stop(stack):
    sim, bridge, controller = stack
    _stand(controller)
    action = np.full(12, 0.05)
    for _ in range(15):
        controller.set_action(action)
        time.sleep(0.02)
    # Commands stop here.
    assert _wait(lambda: controller.last_sent.mode is Mode.DAMP)
    transitions = list(controller.transitions)
    assert (Mode.ACTIVE, Mode.HOLD) in transitions and (Mode.HOLD, Mode.DAMP) in transitions
    assert transitions.index((Mode.ACTIVE, Mode.HOLD)) < transitions.index((Mode.HOLD, Mode.DAMP))
    assert _wait(lambda: sim.stats()["cmds"][-1][0, 3] == 0.0)
    n = sim.stats()["commands"]
    assert _wait(lambda: sim.stats()["commands"] > n + 50)
    cmds = sim.stats()["cmds"]
    kp = cmds[:, 0, 3]
    first_damp = np.flatnonzero(kp > 0.0)[-1] + 1  # the last PD command is followed only by damping
    assert len(kp) - first_damp > 50, "damping latches: no PD command after it"
    np.testing.assert_allclose(cmds[first_damp:, :, 4], DAMPING_KD)
    # The hold phase just before damping repeats one target with the normal gains.
    hold = cmds[first_damp - 3:first_damp]
    assert np.all(hold[:, :, 3] == 25.0)
    np.testing.assert_array_equal(hold[:, :, 1], hold[:1, :, 1].repeat(3, axis=0))
    # New commands are ignored until an explicit stand-up.
    ignored = controller.safety.ignored_commands
    assert not controller.set_action(action)
    assert controller.safety.ignored_commands == ignored + 1


def test_estop_latches_damping_until_reset(stack):
    sim, bridge, controller = stack
    _stand(controller)
    controller.estop("test e-stop")
    assert _wait(lambda: controller.last_sent.mode is Mode.ESTOP)
    assert not controller.set_action(np.zeros(12))
    assert not controller.stand_up(), "stand-up must be refused while the e-stop is latched"
    assert _wait(lambda: sim.stats()["cmds"][-1][0, 3] == 0.0)
    n = controller.ticks
    assert _wait(lambda: controller.ticks > n + 20)
    assert controller.last_sent.mode is Mode.ESTOP
    controller.reset()
    assert _wait(lambda: controller.last_sent.mode is Mode.DAMP)
    _stand(controller)

    # The remote's L2+B latches it too, and releasing the buttons does not clear it.
    sim.set_remote("L2", "B")
    assert _wait(lambda: controller.last_sent.mode is Mode.ESTOP)
    assert "remote" in controller.safety.estop_reason
    sim.set_remote()
    assert _wait(lambda: bridge.latest().remote_buttons == 0)
    n = controller.ticks
    assert _wait(lambda: controller.ticks > n + 20)
    assert controller.last_sent.mode is Mode.ESTOP
    controller.reset()
    assert _wait(lambda: controller.last_sent.mode is Mode.DAMP)


def test_lost_state_stream_latches_estop(stack):
    sim, bridge, controller = stack
    _stand(controller)
    sim.pause_state(True)
    assert _wait(lambda: controller.last_sent.mode is Mode.ESTOP)
    assert "link lost" in controller.safety.estop_reason
    sim.pause_state(False)
    n = bridge.stats["states"]
    assert _wait(lambda: bridge.stats["states"] > n + 20)
    assert controller.last_sent.mode is Mode.ESTOP, "a returning stream must not clear the latch"


def test_handler_exception_and_bad_crc_do_not_stop_reception(sim):
    calls = {"n": 0}

    def flaky(state):
        calls["n"] += 1
        if calls["n"] <= 5:
            raise RuntimeError("boom in a user callback")

    bridge = Go2SdkBridge(BridgeConfig(domain_id=DOMAIN_ID, interface="lo"), on_state=flaky)
    bridge.start()
    try:
        assert _wait(lambda: bridge.stats["states"] >= 50)
        assert bridge.stats["handler_errors"] == 5
        # The SDK's reader keeps only the newest LowState (the SDK's default QoS), so a slow machine skips some of
        # the 500 Hz stream: on a 2-vCPU VM all 3 of 3 corrupted samples were skipped (crc_errors 0). Corrupt
        # enough that some arrive; every one that arrives is counted and dropped, and reception goes on.
        sim.corrupt_next_states(50)
        n = bridge.stats["states"]
        assert _wait(lambda: bridge.stats["crc_errors"] >= 1 and bridge.stats["states"] >= n + 50)
        assert 1 <= bridge.stats["crc_errors"] <= 50
        assert bridge.stats["handler_errors"] == 5
    finally:
        bridge.close()


def test_a_tick_that_raises_on_every_tick_still_damps_the_robot(sim):
    """Regression: a tick error only latched the e-stop; a tick that raised before its write on every tick
    (as a mistyped estop button name did) left the Go2 with no LowCmd at all. Now the loop's fail_safe writes
    damping straight to the bridge each tick. Counted in commands the robot received, not in time."""
    broken = threading.Event()

    def clock():
        if broken.is_set():
            raise RuntimeError("injected: clock read failed")
        return time.monotonic()

    bridge, controller, loop = _make_stack(clock=clock)
    assert bridge.wait_for_state(30.0) is not None
    loop.start()
    try:
        _stand(controller)
        assert _wait(lambda: sim.stats()["cmds"][-1][0, 3] == 25.0)
        broken.set()
        errors = loop.errors
        n = sim.stats()["commands"]
        assert _wait(lambda: sim.stats()["commands"] >= n + 120), "the robot must keep receiving commands"
        stats = sim.stats()
        cmds = stats["cmds"]  # (history, 12, 6) SDK order: mode, q, dq, kp, kd, tau
        first_damp = int(np.flatnonzero(cmds[:, 0, 3] > 0.0)[-1]) + 1  # after the last PD command
        damped = cmds[first_damp:]
        assert len(damped) >= 100, f"only {len(damped)} commands after the fault"
        np.testing.assert_array_equal(damped[:, :, 3], 0.0)  # kp = 0: no position control
        np.testing.assert_allclose(damped[:, :, 4], DAMPING_KD)
        assert np.all(damped[:, :, 0] == 1), "motors stay in servo mode (damping), never switched off"
        assert np.all(stats["crc_flags"][-len(damped):]), "every damping command has a valid CRC"
        assert loop.errors - errors >= 100 and loop.fail_safe_errors == 0
        assert controller.fail_safe_commands >= 100 and controller.fail_safe_write_errors == 0
        assert controller.last_sent.mode is Mode.ESTOP and "clock read failed" in controller.safety.estop_reason
    finally:
        loop.stop()
        bridge.close()


def test_non_finite_state_from_the_robot_latches_damping(stack):
    sim, bridge, controller = stack
    _stand(controller)
    sim.nan_next_states(3)
    assert _wait(lambda: controller.last_sent.mode is Mode.ESTOP), _why(controller)
    assert "non-finite" in controller.safety.estop_reason
    assert _wait(lambda: bridge.stats["nonfinite_states"] == 3), "each bad state is counted on arrival"
    # On a loaded host the robot may still be working through PD commands queued before the e-stop (DDS keeps
    # their order): wait for the first damping command to arrive; every command after it must damp (latched).
    assert _wait(lambda: sim.stats()["cmds"][-1][0, 3] == 0.0), "the damping command never reached the robot"
    n = sim.stats()["commands"]
    assert _wait(lambda: sim.stats()["commands"] >= n + 50)
    cmds = sim.stats()["cmds"][-50:]
    np.testing.assert_array_equal(cmds[:, :, 3], 0.0)
    assert np.all(np.isfinite(cmds[:, :, 1])), "no NaN target ever reaches the motors"
    n = bridge.stats["states"]
    assert _wait(lambda: bridge.stats["states"] > n + 20)
    assert controller.last_sent.mode is Mode.ESTOP, "finite states again do not clear the latch"


class _SteppedClock:
    """Real time until ``freeze``; then only ``advance`` moves it (the test ticks the controller itself)."""

    def __init__(self):
        self.frozen = None

    def __call__(self):
        return time.monotonic() if self.frozen is None else self.frozen

    def freeze(self):
        self.frozen = time.monotonic()

    def advance(self, dt_s):
        self.frozen += dt_s


def _plan_stack(**control):
    """A stack whose safety limits never clamp the small test targets, so a sent target is the desired one."""
    bridge = Go2SdkBridge(BridgeConfig(domain_id=DOMAIN_ID, interface="lo"))
    bridge.start()
    lo, hi = joint_limits_rad()
    safety = SafetyConfig(q_min_rad=tuple(lo), q_max_rad=tuple(hi), damping_kd=DAMPING_KD, hold_timeout_s=0.3,
                          damp_timeout_s=1.5, max_step_rad=1.0, max_tracking_error_rad=3.0)
    clock = _SteppedClock()
    config = dict(control_hz=250.0, stand_duration_s=1.0, state_timeout_s=60.0, interpolation_s=0.0)
    config.update(control)
    controller = Go2Controller(ControlConfig(**config), bridge, SafetyController(safety), clock=clock)
    return bridge, controller, ControlLoop(controller), clock


@pytest.fixture
def plan_stack(sim):
    bridge, controller, loop, clock = _plan_stack()
    assert bridge.wait_for_state(30.0) is not None
    loop.start()
    _stand(controller)
    loop.stop()  # from here the test ticks the controller on its own clock
    clock.freeze()
    yield sim, controller, clock
    bridge.close()


def _sent_after(controller, clock, dt_s):
    clock.advance(dt_s)
    sent = controller.tick()
    assert sent is not None
    return sent


def test_a_plan_carrying_command_plays_the_row_for_each_period(plan_stack):
    """The target follows the plan's row for the 50 Hz period the robot is in (row k for k periods after the
    observation), between commands and for a command that arrives late; only a new command feeds the watchdog."""
    sim, controller, clock = plan_stack
    base = gc.DEFAULT_POSE_RAD
    plan = 0.02 + 0.01 * np.arange(20)[:, None] * np.ones((1, 12))  # row k: every joint default + 0.02 + 0.01 k rad
    assert controller.set_action(plan[0], plan, obs_age_s=0.005)  # on time: row 0 = the action
    np.testing.assert_allclose(_sent_after(controller, clock, 0.0).q_rad, base + plan[0])
    np.testing.assert_allclose(_sent_after(controller, clock, 0.010).q_rad, base + plan[0])  # 15 ms after the obs
    np.testing.assert_allclose(_sent_after(controller, clock, 0.010).q_rad, base + plan[1])  # 25 ms: row 1
    np.testing.assert_allclose(_sent_after(controller, clock, 0.040).q_rad, base + plan[3])  # 65 ms: row 3
    assert controller.plan_counts["played"] == 1 and controller.plan_counts["rows_advanced"] == 2
    # A new command, its observation 30 ms old (a period late): it starts at its own row 1 at once.
    plan2 = -plan
    assert controller.set_action(plan2[0], plan2, obs_age_s=0.030)
    np.testing.assert_allclose(_sent_after(controller, clock, 0.0).q_rad, base + plan2[1])
    # Rows never feed the watchdog: 0.3 s after this command the driver holds the last row played before then.
    sent = _sent_after(controller, clock, 0.24)
    assert sent.mode is Mode.ACTIVE
    np.testing.assert_allclose(sent.q_rad, base + plan2[13])  # 270 ms after its observation
    held = _sent_after(controller, clock, 0.07)
    assert held.mode is Mode.HOLD
    np.testing.assert_allclose(held.q_rad, sent.q_rad)
    np.testing.assert_allclose(_sent_after(controller, clock, 0.1).q_rad, sent.q_rad)
    # What the robot received is what was sent (SDK order).
    assert _wait(lambda: np.allclose(sim.stats()["cmds"][-1][:, 1], sent.q_rad[gc.MUJOCO_TO_SDK], atol=1e-5))


def test_a_plan_the_driver_cannot_place_in_time_acts_with_its_action(plan_stack):
    _, controller, clock = plan_stack
    base = gc.DEFAULT_POSE_RAD
    action = np.full(12, 0.05)
    plan = np.stack([action, np.full(12, -0.05), np.full(12, -0.05)])
    # Observation older than max_plan_age_s (0.1 s): its rows were meant for periods long past.
    assert controller.set_action(action, plan, obs_age_s=0.15)
    np.testing.assert_allclose(_sent_after(controller, clock, 0.05).q_rad, base + action)
    # Stamped in the future (another clock, or forged).
    assert controller.set_action(action, plan, obs_age_s=-0.05)
    np.testing.assert_allclose(_sent_after(controller, clock, 0.05).q_rad, base + action)
    # No stamp: no age to place the rows with.
    assert controller.set_action(action, plan, obs_age_s=None)
    np.testing.assert_allclose(_sent_after(controller, clock, 0.05).q_rad, base + action)
    assert controller.plan_counts == {"played": 0, "too_old": 1, "future": 1, "rows_advanced": 0}
    # A malformed plan is refused with the command; the last good target stays in force.
    for bad in (np.full((3, 12), np.nan), np.zeros((3, 5)), np.zeros((0, 12))):
        with pytest.raises(ValueError, match="plan must be finite"):
            controller.set_action(-action, bad, obs_age_s=0.005)
    np.testing.assert_allclose(_sent_after(controller, clock, 0.0).q_rad, base + action)
    # An e-stop forgets the plan: after reset and stand-up, nothing of it plays.
    assert controller.set_action(action, plan, obs_age_s=0.0)
    controller.estop("test")
    assert _sent_after(controller, clock, 0.03).mode is Mode.ESTOP
    assert controller.plan_counts["rows_advanced"] == 0


def test_play_plan_off_acts_with_the_action_alone(sim):
    bridge, controller, loop, clock = _plan_stack(play_plan=False)
    try:
        assert bridge.wait_for_state(30.0) is not None
        loop.start()
        _stand(controller)
        loop.stop()
        clock.freeze()
        action = np.full(12, 0.05)
        assert controller.set_action(action, np.stack([action, -action]), obs_age_s=0.0)
        np.testing.assert_allclose(_sent_after(controller, clock, 0.05).q_rad, gc.DEFAULT_POSE_RAD + action)
        assert controller.plan_counts["played"] == 0
    finally:
        bridge.close()
