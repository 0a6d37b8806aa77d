"""The UR5e driver's control loop without ROS: normalised EE deltas in, rate-limited servoJ targets out.

The planner's 20 Hz action (dx, dy, dz, dyaw) in [-1, 1] moves a TCP target exactly as in simulation
(``simdist_core.sim.ur5e.UR5eLowLevel.apply_action``: step scaling, leash to the measured TCP, workspace
box). At the sim's ``ik_hz`` the same damped-least-squares IK (``UR5eLowLevel.joint_command`` on a
kinematic copy of the MuJoCo scene at the measured joint angles) gives the joint target; every tick
(500 Hz) speed and acceleration limits shape the stream toward it and ``servo_j`` sends it, so the stream
between two actions interpolates smoothly toward the newest target.

IK gain: the sim multiplies the IK step by ``ik_gain`` (2.5) to make up for the Menagerie servos' lag.
servoJ on a real UR tracks its target closely, so ``RtdeBackend`` users pass ``ik_gain=1.0`` (a plain
Newton step: command the IK solution itself) through ``LowLevelConfig``; the MuJoCo backend keeps the
sim's value because it has the sim's servos.

A period without a fresh command: the simulated robot, through which the graph was measured, repeats its last
action then, and behind an emulated late link a robot that moved nothing instead inserted 0.42 of nominal pegs
against 0.72 repeating (``bench_results/UR5E_INCREMENTAL_LINK.md``). So when no command has arrived for
``period_s + repeat_grace_s`` since the last move, the last action moves the target again, once per ``period_s``,
while commands are fresh (``hold_timeout_s``; a repeat never feeds the watchdog). Only for a command stamped with
the observation it answers (a planner, which runs at the control rate): an unstamped tool publishing at its own rate
must not have its moves multiplied. The grace keeps on-time commands, which arrive with jitter, from ever
meeting a repeat.

Modes: IDLE (no command yet), ACTIVE (fresh commands), HOLD (late: keep servoing to the last TCP target),
STOPPED (commands stopped for ``stop_timeout_s``: ``backend.stop()``; the next fresh command re-anchors the
target on the measured TCP and resumes), PROTECTIVE_STOP (the controller stopped the arm; latched until the
operator clears it on the pendant AND ``reset()``), ESTOP (latched until ``reset()``), DISABLED (after
``reset()``: commands are ignored until an explicit ``enable()``, so a planner still streaming cannot move
the arm the moment the latch clears).

Faults that latch ESTOP and send one ``backend.stop()``: a measured joint state of the wrong length or not
finite, a measured joint speed above ``runaway_speed_rad_s`` (the arm moves faster than anything this driver
streams: a runaway), a non-finite IK or streamed target, a lost link, and any exception in ``tick`` (through
``fail_safe``, which the control loop calls and which cannot raise).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np
from simdist_core.robots import UR5E
from simdist_core.sim.ur5e import LowLevelConfig, UR5eLowLevel
from simdist_core.sim.ur5e_scene import SceneConfig, build_ur5e_model
from simdist_ros.control_loop import SafeControlLoop

from ur5e_bringup.backend import ArmBackend, ArmState

LOG = logging.getLogger("ur5e_control")


class ArmMode(enum.Enum):
    """What the UR5e driver is doing (see the module docstring)."""

    IDLE = "idle"
    ACTIVE = "active"
    HOLD = "hold"
    STOPPED = "stopped"
    PROTECTIVE_STOP = "protective_stop"
    ESTOP = "estop"
    DISABLED = "disabled"


@dataclass(frozen=True, kw_only=True)
class ArmControlConfig:
    """Rates, limits and timeouts of the UR5e control loop."""

    control_hz: float = 500.0
    """servoJ rate (the e-Series controller runs at 500 Hz)."""
    hold_timeout_s: float = 0.15
    """Command age after which the TCP target is held (3 ticks at 20 Hz)."""
    stop_timeout_s: float = 0.5
    """Command age after which the arm is stopped."""
    max_joint_speed_rad_s: float = 1.5
    """Per-joint speed limit of the streamed target."""
    max_joint_accel_rad_s2: float = 40.0
    """Per-joint acceleration limit of the streamed target."""
    servo_lookahead_s: float = 0.1
    """servoJ lookahead time, [0.03, 0.2]."""
    servo_gain: float = 300.0
    """servoJ proportional gain, [100, 2000]."""
    runaway_speed_rad_s: float = 2.5
    """A measured joint speed above this latches the e-stop. It must exceed ``max_joint_speed_rad_s`` (what the
    stream ever asks for) and stays below the UR5e's own joint limit (pi rad/s)."""
    repeat_missed: bool = True
    """Repeat a stamped command's action on a period that gets no fresh command (see the module docstring)."""
    period_s: float = UR5E.control_dt
    """The planner's control period: one move per period."""
    repeat_grace_s: float = 0.5 * UR5E.control_dt
    """How late past a period a command may be before the last action is repeated instead."""

    def __post_init__(self) -> None:
        for name in ("control_hz", "hold_timeout_s", "max_joint_speed_rad_s", "max_joint_accel_rad_s2",
                     "runaway_speed_rad_s"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if not self.runaway_speed_rad_s > self.max_joint_speed_rad_s:
            raise ValueError(f"runaway_speed_rad_s must be > max_joint_speed_rad_s (the streamed speed limit), got "
                             f"{self.runaway_speed_rad_s=}, {self.max_joint_speed_rad_s=}")
        if not (self.period_s > 0 and 0 <= self.repeat_grace_s < self.period_s):
            raise ValueError(f"need period_s > 0 and 0 <= repeat_grace_s < period_s, got {self.period_s=}, "
                             f"{self.repeat_grace_s=}")
        if not self.stop_timeout_s > self.hold_timeout_s:
            raise ValueError(f"stop_timeout_s must be > hold_timeout_s, got {self.stop_timeout_s=}, "
                             f"{self.hold_timeout_s=}")
        if not 0.03 <= self.servo_lookahead_s <= 0.2:
            raise ValueError(f"servo_lookahead_s must be in [0.03, 0.2] (UR servoJ), got {self.servo_lookahead_s=}")
        if not 100.0 <= self.servo_gain <= 2000.0:
            raise ValueError(f"servo_gain must be in [100, 2000] (UR servoJ), got {self.servo_gain=}")


class ArmKinematics:
    """The sim's IK layer on a kinematic copy of the MuJoCo scene, driven by measured joint angles."""

    def __init__(self, lowlevel: LowLevelConfig, scene: SceneConfig | None = None) -> None:
        self.model = build_ur5e_model(scene if scene is not None else SceneConfig())
        self.data = mujoco.MjData(self.model)
        self.ik = UR5eLowLevel(self.model, lowlevel)

    def sync(self, q_rad: np.ndarray) -> None:
        """Set the arm to the measured joints (6,) and update positions + Jacobian inputs."""
        self.data.qpos[self.ik.qpos_adr] = q_rad
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def anchor(self, q_rad: np.ndarray) -> None:
        """Put the TCP target on the TCP at ``q_rad``."""
        self.sync(q_rad)
        self.ik.reset(self.data)

    def tcp_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """TCP position (3,) and orientation quaternion (4,) w, x, y, z in the base frame, at the last ``sync``."""
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[self.ik.site_id])
        return self.data.site_xpos[self.ik.site_id].copy(), quat

    def joint_target(self, q_rad: np.ndarray) -> np.ndarray:
        """IK joint target (6,) toward the current TCP target from the measured joints (sim's ``joint_command``)."""
        return self.ik.joint_command(self.data, q_rad)


class Ur5eController:
    """Owns the arm's safety state; ``tick`` is the only method that commands the arm."""

    def __init__(self, config: ArmControlConfig, backend: ArmBackend, lowlevel: LowLevelConfig | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.backend = backend
        self.kin = ArmKinematics(lowlevel if lowlevel is not None else LowLevelConfig())
        self.clock = clock
        self._lock = threading.Lock()
        self._base = ArmMode.IDLE  # IDLE, ACTIVE, PROTECTIVE_STOP, ESTOP (ACTIVE decays by command age)
        self._last_command_s: float | None = None
        self._anchored = False
        self._stopped_sent = False
        self._q_cmd: np.ndarray | None = None
        self._q_ik: np.ndarray | None = None
        self._ik_every = max(1, round(config.control_hz / self.kin.ik.cfg.ik_hz))
        self._v_cmd = np.zeros(6)
        self._repeat: np.ndarray | None = None  # the stamped action a missed period repeats (None: no repeats)
        self._next_repeat_s = 0.0  # when the next repeat is due if no command arrives
        self.estop_reason: str | None = None
        self.state: ArmState | None = None
        self.tcp_pos_m = np.zeros(3)
        """TCP (the sim's ``tcp`` site) position in the base frame at the last measured joints."""
        self.tcp_quat_wxyz = np.array([1.0, 0.0, 0.0, 0.0])
        self.mode = ArmMode.IDLE
        self.executed_action = np.zeros(UR5E.action_dim, dtype=np.float32)
        self.ticks = 0
        self.ignored_commands = 0
        self.servo_refusals = 0
        self.bad_states = 0
        """Readings refused (wrong length, non-finite or runaway joints); each latched the e-stop."""
        self.reading_ok = False
        """Whether the newest reading was usable (``state`` keeps the last usable one)."""
        self.fail_safe_stops = 0
        """Stops sent by ``fail_safe`` (a tick raised)."""
        self.fail_safe_errors = 0
        """``fail_safe`` stops that raised (the link itself is broken)."""
        self.repeated_moves = 0
        """Periods without a fresh command on which the last stamped action moved the target again."""
        self.clamp_counts = {"speed": 0, "accel": 0}
        """Ticks on which the speed limit cut the requested joint speed / the acceleration bound was active."""

    # ---- inputs (any thread) ------------------------------------------------------------------------------
    def set_action(self, action: np.ndarray, plan: np.ndarray | None = None, obs_age_s: float | None = None) -> bool:
        """Move the TCP target by a normalised action (4,); False if the current mode ignores it.

        Args:
            action: the command's action.
            plan: the plan the command carries; not played (one move per command, see the module docstring).
            obs_age_s: the age of the observation a stamped command answers (None: unstamped, never repeated).

        Raises:
            ValueError: wrong shape or non-finite values (the last good target stays).
        """
        del plan
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (UR5E.action_dim,) or not np.all(np.isfinite(a)):
            raise ValueError(f"action must be finite with shape ({UR5E.action_dim},), got shape {a.shape}")
        with self._lock:
            if self._base in (ArmMode.ESTOP, ArmMode.PROTECTIVE_STOP, ArmMode.DISABLED) or self.state is None:
                self.ignored_commands += 1
                return False
            if not self._anchored or self._current_mode(self.clock()) is ArmMode.STOPPED:
                self.kin.anchor(self.state.q_rad)  # resume from where the arm is, not from a stale target
                self._anchored = True
            self.kin.sync(self.state.q_rad)
            self.kin.ik.apply_action(a, self.kin.data)
            self.executed_action = np.clip(a, -1.0, 1.0).astype(np.float32)
            self._base = ArmMode.ACTIVE
            self._last_command_s = self.clock()
            self._stopped_sent = False
            stamped = obs_age_s is not None and self.config.repeat_missed
            self._repeat = a if stamped else None
            self._next_repeat_s = self._last_command_s + self.config.period_s + self.config.repeat_grace_s
        return True

    def estop(self, reason: str) -> None:
        """Stop the arm and latch until ``reset``."""
        with self._lock:
            if self.estop_reason is None:
                self.estop_reason = reason
            self._base = ArmMode.ESTOP
        LOG.warning("UR5e e-stop latched: %s", reason)

    def reset(self) -> bool:
        """Clear the e-stop / protective-stop latch into DISABLED (``enable`` resumes).

        Returns:
            False (nothing cleared) while the controller still reports a protective stop.
        """
        with self._lock:
            if self.state is not None and self.state.protective_stop:
                return False
            self.estop_reason = None
            self._base = ArmMode.DISABLED
            self._anchored = False
            self._repeat = None
            self._stopped_sent = False
            self._q_cmd = None
            self._q_ik = None
            self._v_cmd = np.zeros(6)
            return True

    def enable(self) -> bool:
        """Accept commands again after ``reset``; False (refused) while a stop is latched."""
        with self._lock:
            if self._base in (ArmMode.ESTOP, ArmMode.PROTECTIVE_STOP):
                return False
            if self._base is ArmMode.DISABLED:
                self._base = ArmMode.IDLE
            return True

    def fail_safe(self, reason: str) -> None:
        """Latch the e-stop and send ``backend.stop()`` once per latch. Never raises.

        The control loop calls this when ``tick`` raised, so it uses no lock (a stuck holder must not stop
        it), no clock and no state: only the latch and the backend. A stop that raised is retried on the
        next call.
        """
        if self.estop_reason is None:
            self.estop_reason = reason
        self._base = ArmMode.ESTOP
        self.mode = ArmMode.ESTOP
        self.executed_action = np.zeros(UR5E.action_dim, dtype=np.float32)
        if self._stopped_sent:
            return
        try:
            self.backend.stop()
        except Exception:  # noqa: BLE001 - the last line: count, never raise
            self.fail_safe_errors += 1
            return
        self._stopped_sent = True
        self.fail_safe_stops += 1

    def _latch_locked(self, reason: str) -> None:
        """Latch the e-stop (call with the lock held); the tick then sends one stop."""
        if self.estop_reason is None:
            self.estop_reason = reason
            LOG.error("UR5e e-stop latched: %s", reason)
        self._base = ArmMode.ESTOP

    def _state_fault(self, state: ArmState) -> str | None:
        """Why a reading must not be used (wrong length, non-finite, runaway speed), or None."""
        q, dq = np.asarray(state.q_rad, dtype=np.float64), np.asarray(state.dq_rad_s, dtype=np.float64)
        if q.shape != (6,) or dq.shape != (6,):
            return f"joint state has shapes {q.shape} and {dq.shape}, expected (6,)"
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
            return f"non-finite joint state from the arm (q {q}, dq {dq})"
        j = int(np.argmax(np.abs(dq)))
        if abs(dq[j]) > self.config.runaway_speed_rad_s:
            return (f"joint {j} moves at {dq[j]:.2f} rad/s, above runaway_speed_rad_s="
                    f"{self.config.runaway_speed_rad_s}: runaway")
        return None

    # ---- the tick -----------------------------------------------------------------------------------------
    def _current_mode(self, now_s: float) -> ArmMode:
        if self._base is not ArmMode.ACTIVE:
            return self._base
        age = now_s - self._last_command_s
        if age <= self.config.hold_timeout_s:
            return ArmMode.ACTIVE
        return ArmMode.HOLD if age <= self.config.stop_timeout_s else ArmMode.STOPPED

    def tick(self) -> ArmMode:
        """Read the arm, update the safety state, stream one servoJ target (or stop)."""
        state = self.backend.read_state()
        fault = self._state_fault(state)
        with self._lock:
            self.reading_ok = fault is None
            if fault is not None:  # never sync kinematics or publish a reading that cannot be true
                self.bad_states += 1
                self._latch_locked(fault)
            else:
                self.state = state
            if not state.connected and self._base is not ArmMode.ESTOP:
                self._latch_locked("connection to the arm lost")
            elif state.protective_stop and self._base not in (ArmMode.ESTOP, ArmMode.PROTECTIVE_STOP):
                self._base = ArmMode.PROTECTIVE_STOP
                LOG.error("protective stop reported by the controller: clear it on the pendant, then reset")
            now = self.clock()
            mode = self._current_mode(now)
            q_target = None
            if mode is ArmMode.ACTIVE and self._repeat is not None and now >= self._next_repeat_s and fault is None:
                self.kin.sync(state.q_rad)
                self.kin.ik.apply_action(self._repeat, self.kin.data)
                self._next_repeat_s += self.config.period_s
                self.repeated_moves += 1
            if mode in (ArmMode.ACTIVE, ArmMode.HOLD) and self._anchored:
                if self._q_ik is None or self.ticks % self._ik_every == 0:
                    self._q_ik = self.kin.joint_target(state.q_rad)
                else:
                    self.kin.sync(state.q_rad)
                q_target = self._limit(self._q_ik, state.q_rad)
                if not (q_target.shape == (6,) and np.all(np.isfinite(q_target))):
                    self._latch_locked(f"non-finite joint target from IK {self._q_ik} (streamed {q_target})")
                    mode, q_target = ArmMode.ESTOP, None
            if q_target is None:
                if fault is None:
                    self.kin.sync(state.q_rad)
                if mode not in (ArmMode.IDLE, ArmMode.DISABLED):
                    self._q_cmd, self._v_cmd, self._q_ik = None, np.zeros(6), None
                    self.executed_action = np.zeros(UR5E.action_dim, dtype=np.float32)
            self.tcp_pos_m, self.tcp_quat_wxyz = self.kin.tcp_pose()
        if mode is not self.mode:
            LOG.info("UR5e mode %s -> %s", self.mode.value, mode.value)
            self.mode = mode
        if q_target is not None:
            c = self.config
            if not self.backend.servo_j(q_target, 0.0, 0.0, 1.0 / c.control_hz, c.servo_lookahead_s, c.servo_gain):
                self.servo_refusals += 1
        elif mode in (ArmMode.STOPPED, ArmMode.ESTOP) and not self._stopped_sent and state.connected:
            self.backend.stop()  # if this raises, fail_safe retries it
            self._stopped_sent = True
        self.ticks += 1
        return mode

    def _limit(self, q_des: np.ndarray, q_meas: np.ndarray) -> np.ndarray:
        """Speed then acceleration limit of the streamed target, starting from the measured pose."""
        dt = 1.0 / self.config.control_hz
        q_prev = q_meas if self._q_cmd is None else self._q_cmd
        err = q_des - q_prev
        v = err / dt
        # Cap the speed so the arm can still brake to the target within the acceleration limit (no overshoot).
        v_cap = np.minimum(self.config.max_joint_speed_rad_s,
                           np.sqrt(2.0 * self.config.max_joint_accel_rad_s2 * np.abs(err)))
        v_lim = np.clip(v, -v_cap, v_cap)
        # Count only where the speed limit itself binds (not the braking curve near the target).
        binding = (np.abs(v) > self.config.max_joint_speed_rad_s) & (v_cap >= self.config.max_joint_speed_rad_s)
        self.clamp_counts["speed"] += int(np.any(binding))
        dv = self.config.max_joint_accel_rad_s2 * dt
        v_acc = np.clip(v_lim, self._v_cmd - dv, self._v_cmd + dv)
        self.clamp_counts["accel"] += int(np.any(v_acc != v_lim))
        self._v_cmd = v_acc
        self._q_cmd = q_prev + v_acc * dt
        return self._q_cmd


class ArmLoop(SafeControlLoop):
    """Calls ``Ur5eController.tick`` at ``control_hz`` in a thread; a tick error stops the arm (``fail_safe``)."""

    def __init__(self, controller: Ur5eController) -> None:
        super().__init__(controller, name="ur5e_control")
