"""The Go2 driver's control loop without ROS: normalised actions in, safe low-level commands out.

``Go2Controller.tick`` runs at ``control_hz`` (>= 200 Hz) in its own thread (``ControlLoop``): it reads the
newest LowState, interpolates between the planner's 50 Hz targets, applies ``SafetyController`` and writes
one LowCmd. The ROS node only converts messages and calls ``set_action`` / ``estop`` / ``reset`` /
``stand_up`` / ``lie_down``; tests drive the same class against a simulated robot over DDS.

A command that carries its plan (the planner's ``send_plan``: row k for the k-th 50 Hz period after the
observation it answers) is played: the target follows the row for the period the robot is in, so a command
that arrives late, or a period that gets no fresh command, acts on the plan's next step instead of repeating
one planned for an older state (``simdist_core.planning.in_flight.row_for_delay``; through a simulated graph on one
busy core that walked 1.39 m further per 10 s on foam than repeating). Rows never feed the command watchdog:
only a new command does, so the plan plays for at most ``hold_timeout_s`` after the last one arrived, and every
row passes the same safety limits as a command.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from simdist_core.planning.in_flight import row_for_delay
from simdist_core.robots import GO2
from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD
from simdist_core.sim.go2_lowlevel import Go2LowLevel
from simdist_ros.control_loop import SafeControlLoop

from go2_bringup.constants import LIE_DOWN_POSE_RAD
from go2_bringup.go2_sdk import REMOTE_BUTTONS, Go2SdkBridge, Go2State, remote_pressed
from go2_bringup.safety import Mode, SafetyController, SentCommand

LOG = logging.getLogger("go2_control")


@dataclass(frozen=True, kw_only=True)
class ControlConfig:
    """Rates and timing of the Go2 control loop."""

    control_hz: float = 500.0
    """Rate of LowCmd writes (the Go2 motor loop expects 500 Hz; >= 200 Hz)."""
    interpolation_s: float = 0.0
    """Time over which a new 50 Hz target is blended in linearly (0 = step to it at once, as in simulation). The
    default was 0.02 until 2026-12-06: emulated in simulation, that ramp cost the deployed model 1.70 m of 5.84 per
    10 s on foam and 2.42 of 7.35 on flat (``bench_results/GO2_DRIVER_RAMP.md``)."""
    state_timeout_s: float = 0.1
    """A LowState older than this latches the e-stop (robot link lost)."""
    stand_duration_s: float = 2.0
    """Length of the stand-up and lie-down sequences."""
    estop_buttons: tuple[str, ...] = ("L2", "B")
    """Remote button combination that latches the e-stop (Unitree's own damping combo); () disables it."""
    play_plan: bool = True
    """Play the rows of a plan-carrying command (else act on its action alone, as a plain forward command)."""
    plan_period_s: float = GO2.control_dt
    """Period of one plan row: the planner's control period."""
    max_plan_age_s: float = 0.1
    """A command whose observation is older than this (or in the future: another clock, or forged) acts with its
    action alone: its plan rows would be for periods the planner never meant them for."""

    def __post_init__(self) -> None:
        if not (self.plan_period_s > 0 and self.max_plan_age_s >= 0):
            raise ValueError(f"plan_period_s must be > 0 and max_plan_age_s >= 0, got {self.plan_period_s=}, "
                             f"{self.max_plan_age_s=}")
        if not self.control_hz >= 200.0:
            raise ValueError(f"control_hz must be >= 200 (the motor PD needs fresh commands), got {self.control_hz=}")
        if self.interpolation_s < 0:
            raise ValueError(f"interpolation_s must be >= 0, got {self.interpolation_s=}")
        for name in ("state_timeout_s", "stand_duration_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        check_estop_buttons(self.estop_buttons)


def check_estop_buttons(names: tuple[str, ...]) -> None:
    """Refuse unknown remote button names at start: checked on every tick, a typo raised on every tick.

    Raises:
        ValueError: names the unknown buttons and lists the valid ones.
    """
    unknown = [name for name in names if name not in REMOTE_BUTTONS]
    if unknown:
        raise ValueError(f"estop_buttons has unknown remote button(s) {unknown}; valid: {sorted(REMOTE_BUTTONS)} "
                         "(an empty list disables the remote e-stop)")


class Go2Controller:
    """Owns the safety state; ``tick`` is the only method that writes to the robot."""

    def __init__(self, config: ControlConfig, bridge: Go2SdkBridge, safety: SafetyController,
                 lowlevel: Go2LowLevel | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.bridge = bridge
        self.safety = safety
        self.lowlevel = lowlevel if lowlevel is not None else Go2LowLevel()
        self.clock = clock
        self._lock = threading.Lock()
        self._ramp_from: np.ndarray | None = None
        self._ramp_to: np.ndarray | None = None
        self._ramp_start_s = 0.0
        self._plan_targets: np.ndarray | None = None  # (K, 12) joint targets of the command's plan rows
        self._plan_obs_s = 0.0  # when (on ``clock``) the observation the plan answers was made
        self._plan_row = 0  # the row the ramp is heading to
        self._executed_action = np.zeros(len(DEFAULT_POSE_RAD), dtype=np.float32)
        self.last_sent: SentCommand | None = None
        self.ticks = 0
        self.clamp_counts: dict[str, int] = {}
        """Ticks on which each safety clamp changed at least one joint."""
        self.transitions: deque[tuple[Mode, Mode]] = deque(maxlen=100)
        """Recent mode changes (from, to), oldest first, for diagnostics and tests."""
        self._damp_q = np.zeros(len(DEFAULT_POSE_RAD))  # with kp = 0 the position target does not act
        self._damp_kd = float(safety.config.damping_kd)
        self._damp_command = SentCommand(Mode.ESTOP, self._damp_q, 0.0, self._damp_kd)
        self._nonfinite_seen = 0
        self.fail_safe_commands = 0
        """Damping commands written by ``fail_safe`` (a tick raised)."""
        self.fail_safe_write_errors = 0
        """``fail_safe`` writes that failed (the robot link itself is broken)."""
        self.plan_counts = {"played": 0, "too_old": 0, "future": 0, "rows_advanced": 0}
        """Plan-carrying commands played, acted on by their action alone (observation older than
        ``max_plan_age_s``, or stamped in the future), and rows the target moved on to between commands."""

    # ---- inputs from ROS (any thread) ---------------------------------------------------------------------
    def set_action(self, action: np.ndarray, plan: np.ndarray | None = None, obs_age_s: float | None = None) -> bool:
        """Accept a normalised action (12,) in [-1, 1] (MuJoCo order); False if the mode ignores it.

        Args:
            action: the command's action.
            plan: (K, 12) the command's plan (row k for the k-th period after its observation), or None.
            obs_age_s: how long ago the observation the command answers was made (the plan is played only with it).

        Raises:
            ValueError: wrong shape or non-finite values in the action or the plan (the last good command stays
                in force).
        """
        a = np.asarray(action, dtype=np.float64)
        if a.shape != DEFAULT_POSE_RAD.shape or not np.all(np.isfinite(a)):
            raise ValueError(f"action must be finite with shape {DEFAULT_POSE_RAD.shape}, got shape {a.shape}")
        rows = self._plan_rows(plan, obs_age_s)
        now = self.clock()
        target = self.lowlevel.targets(a)
        if rows is not None:
            plan_targets = np.stack([self.lowlevel.targets(row) for row in rows])
            row = self._row_at(now - obs_age_s, now, len(plan_targets))
            target = plan_targets[row]
        with self._lock:
            if not self.safety.command(target, now):
                return False
            if rows is None:
                self._plan_targets = None
            else:
                self._plan_targets, self._plan_obs_s, self._plan_row = plan_targets, now - obs_age_s, row
                self.plan_counts["played"] += 1
            self._ramp_toward(target, now)
        return True

    def _plan_rows(self, plan: np.ndarray | None, obs_age_s: float | None) -> np.ndarray | None:
        """The plan to play, or None (no plan, playing off, no observation age, or an age it cannot be played at)."""
        if plan is None or obs_age_s is None or not self.config.play_plan:
            return None
        rows = np.asarray(plan, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1:] != DEFAULT_POSE_RAD.shape or not len(rows) or not np.all(np.isfinite(rows)):
            raise ValueError(f"plan must be finite with shape (K, {DEFAULT_POSE_RAD.size}), got shape {rows.shape}")
        if not obs_age_s >= 0:  # also NaN
            self.plan_counts["future"] += 1
            return None
        if obs_age_s > self.config.max_plan_age_s:
            self.plan_counts["too_old"] += 1
            return None
        return rows

    def _row_at(self, obs_s: float, now_s: float, num_rows: int) -> int:
        """The plan row for the period ``now_s`` falls in (the last row past the plan's end)."""
        return row_for_delay(num_rows, int((now_s - obs_s) // self.config.plan_period_s))

    def _ramp_toward(self, target: np.ndarray, now_s: float) -> None:
        """Blend from the target in force now to ``target`` over ``interpolation_s`` (caller holds the lock)."""
        current = self._interpolated(now_s)
        self._ramp_from = target if current is None else current
        self._ramp_to = target
        self._ramp_start_s = now_s

    def _advance_plan(self, now_s: float) -> None:
        """Move the target on to the plan's row for this period (caller holds the lock; ACTIVE only)."""
        if self._plan_targets is None:
            return
        row = self._row_at(self._plan_obs_s, now_s, len(self._plan_targets))
        if row != self._plan_row:
            self._plan_row = row
            self._ramp_toward(self._plan_targets[row], now_s)
            self.plan_counts["rows_advanced"] += 1

    def estop(self, reason: str) -> None:
        """Latch damping until ``reset``."""
        with self._lock:
            self.safety.estop(reason)
            self._clear_targets()
        LOG.warning("e-stop latched: %s", reason)

    def reset(self) -> None:
        """Clear the e-stop; the robot stays damped until ``stand_up``."""
        with self._lock:
            self.safety.reset()
            self._clear_targets()

    def stand_up(self) -> bool:
        """Start the stand-up sequence from the measured pose; False if refused (e-stop or no state)."""
        return self._sequence(DEFAULT_POSE_RAD, self.safety.stand_up)

    def lie_down(self) -> bool:
        """Start the lie-down sequence (ends in DAMP); False if refused (e-stop or no state)."""
        return self._sequence(LIE_DOWN_POSE_RAD, self.safety.lie_down)

    def _sequence(self, goal: np.ndarray, start: Callable[..., bool]) -> bool:
        state = self.bridge.latest()
        if state is None:
            return False
        with self._lock:
            self._clear_targets()
            return start(state.q_rad, goal, self.clock(), self.config.stand_duration_s)

    # ---- the control tick ---------------------------------------------------------------------------------
    def _clear_targets(self) -> None:
        self._ramp_from = self._ramp_to = None
        self._plan_targets = None

    def _interpolated(self, now_s: float) -> np.ndarray | None:
        if self._ramp_to is None:
            return None
        if self.config.interpolation_s <= 0:
            return self._ramp_to
        blend = min(max((now_s - self._ramp_start_s) / self.config.interpolation_s, 0.0), 1.0)
        return self._ramp_from + blend * (self._ramp_to - self._ramp_from)

    def tick(self) -> SentCommand | None:
        """One control step: read state, apply safety, write LowCmd. None if no state has arrived yet."""
        state = self.bridge.latest()
        if state is None:
            return None
        now = self.clock()
        with self._lock:
            self._check_inputs(state, now)
            if self.safety.mode(now) is Mode.ACTIVE:  # in HOLD the safety layer keeps the last target
                self._advance_plan(now)
            sent = self.safety.send(state.q_rad, state.dq_rad_s, now, desired_q_rad=self._interpolated(now))
            if sent.mode in (Mode.DAMP, Mode.ESTOP):
                self._clear_targets()
        self.bridge.write(sent.q_rad, sent.kp, sent.kd)
        for reason in sent.clamped:
            self.clamp_counts[reason] = self.clamp_counts.get(reason, 0) + 1
        self._executed_action = self.lowlevel.action_from_targets(sent.q_rad)
        if self.last_sent is not None and self.last_sent.mode is not sent.mode:
            self.transitions.append((self.last_sent.mode, sent.mode))
            LOG.info("mode %s -> %s", self.last_sent.mode.value, sent.mode.value)
        self.last_sent = sent
        self.ticks += 1
        return sent

    def fail_safe(self, reason: str) -> None:
        """Latch the e-stop and write one damping command (kp = 0) straight to the bridge. Never raises.

        The control loop calls this when ``tick`` raised, so it touches nothing ``tick`` uses but the latch
        and the bridge: no lock (a stuck holder must not stop it), no clock, no state, no safety limits.
        The next tick, if it runs, is in ESTOP and damps too.
        """
        with contextlib.suppress(Exception):  # two attribute writes: safe without the lock
            self.safety.estop(reason)
        try:
            ok = bool(self.bridge.write(self._damp_q, 0.0, self._damp_kd))
        except Exception:  # noqa: BLE001 - this is the last line: count, never raise
            ok = False
        if ok:
            self.fail_safe_commands += 1
        else:
            self.fail_safe_write_errors += 1
        self.last_sent = self._damp_command

    def _check_inputs(self, state: Go2State, now_s: float) -> None:
        nonfinite = self.bridge.stats.get("nonfinite_states", 0)
        if nonfinite > self._nonfinite_seen:  # even if a good state replaced it before this tick
            self.safety.estop(f"the robot sent {nonfinite - self._nonfinite_seen} LowState(s) with non-finite values")
            self._nonfinite_seen = nonfinite
        if self.config.estop_buttons and remote_pressed(state.remote_buttons, self.config.estop_buttons):
            self.safety.estop(f"remote buttons {'+'.join(self.config.estop_buttons)} pressed")
        age = now_s - state.receive_time_s
        if age > self.config.state_timeout_s:
            self.safety.estop(f"LowState is {age:.3f} s old (> state_timeout_s={self.config.state_timeout_s}): "
                              f"robot link lost")

    @property
    def executed_action(self) -> np.ndarray:
        """(12,) float32: the last sent target expressed as a normalised action (what the robot executes)."""
        return self._executed_action


class ControlLoop(SafeControlLoop):
    """Calls ``Go2Controller.tick`` at ``control_hz`` in a thread; a tick error sends damping (``fail_safe``)."""

    def __init__(self, controller: Go2Controller) -> None:
        super().__init__(controller, name="go2_control")
