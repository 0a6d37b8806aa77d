"""Driver safety logic for the Go2, as plain classes tested without ROS or DDS.

Everything here works in MuJoCo joint order (FL, FR, RL, RR x hip, thigh, calf); the SDK permutation
is applied only when the low-level command is written (``go2_sdk``).

Modes of the driver (``Mode``):
    ``DAMP``     kp = 0, kd = damping gain: the legs fold slowly. Start-up state, the end of a lie-down,
                 and what the watchdog falls to when commands stop for ``damp_timeout_s``. Leaving it
                 needs an explicit ``stand_up`` (or ``reset`` + ``stand_up``): a planner that comes back
                 after a collapse must not yank the legs.
    ``SEQUENCE`` a stand-up / lie-down trajectory is being played; planner commands are ignored.
    ``STAND``    holding the default pose after a stand-up, waiting for the first command (no timeout).
    ``ACTIVE``   fresh planner commands (age <= ``hold_timeout_s``).
    ``HOLD``     commands are late: keep the last sent target with the normal gains.
    ``ESTOP``    latched damping; only ``reset()`` leaves it (to ``DAMP``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class Mode(enum.Enum):
    """What the driver is doing; see the module docstring."""

    DAMP = "damp"
    SEQUENCE = "sequence"
    STAND = "stand"
    ACTIVE = "active"
    HOLD = "hold"
    ESTOP = "estop"


@dataclass(frozen=True, kw_only=True)
class SafetyConfig:
    """Limits and timeouts of the Go2 driver (joint arrays in MuJoCo order)."""

    q_min_rad: tuple[float, ...]
    """Lower position limit per joint (targets are clamped into [q_min, q_max])."""
    q_max_rad: tuple[float, ...]
    """Upper position limit per joint."""
    max_step_rad: float = 1.0
    """Largest change of the sent position target per control tick (rate limit of the target; a full-range jump,
    2 rad, takes 2 ticks; the tracking bound below is what caps the torque). 0.05 until 2026-12-06: the deployed
    model's targets move 0.54–0.61 rad in a 20 ms period at the 90th percentile, and emulated in simulation that
    limit cost it 3.0 m of 7.3 per 10 s on flat (``bench_results/GO2_DRIVER_CLAMPS.md``), 0.25 still 0.29 m
    (``bench_results/GO2_DRIVER_CLAMPS_SPLIT.md``); 1.0 never bound (``bench_results/GO2_DRIVER_DEFAULTS.md``)."""
    max_tracking_error_rad: float = 1.0
    """Largest distance between the sent target and the measured position (bounds the PD torque: 25 N m at kp 25,
    about the hip and thigh motors' own 23.7 N m peak). 0.6 until 2026-12-06 (it cost 0.055 m on flat, same
    protocol)."""
    max_velocity_rad_s: float = 25.0
    """A measured joint speed above this latches the e-stop (runaway or broken encoder)."""
    hold_timeout_s: float = 0.1
    """Command age after which the driver holds the last target."""
    damp_timeout_s: float = 0.5
    """Command age after which the driver damps (latched until ``stand_up``)."""
    kp: float = 25.0
    """Position gain in ACTIVE / HOLD / STAND / SEQUENCE (N m / rad)."""
    kd: float = 0.5
    """Velocity gain in ACTIVE / HOLD / STAND / SEQUENCE (N m s / rad)."""
    damping_kd: float = 2.0
    """Velocity gain in DAMP / ESTOP (kp = 0)."""

    def __post_init__(self) -> None:
        if len(self.q_min_rad) != len(self.q_max_rad) or not self.q_min_rad:
            raise ValueError(f"q_min_rad and q_max_rad need the same non-zero length, got "
                             f"{len(self.q_min_rad)=} and {len(self.q_max_rad)=}")
        lo, hi = np.asarray(self.q_min_rad), np.asarray(self.q_max_rad)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
            raise ValueError(f"need finite q_min_rad < q_max_rad per joint, got {self.q_min_rad=} {self.q_max_rad=}")
        for name in ("max_step_rad", "max_tracking_error_rad", "max_velocity_rad_s", "hold_timeout_s",
                     "kp", "damping_kd"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.kd < 0:
            raise ValueError(f"kd must be >= 0, got {self.kd=}")
        if not self.damp_timeout_s > self.hold_timeout_s:
            raise ValueError(f"damp_timeout_s must be > hold_timeout_s, got {self.damp_timeout_s=} "
                             f"<= {self.hold_timeout_s=}")

    @property
    def num_joints(self) -> int:
        """Number of joints the limits cover."""
        return len(self.q_min_rad)


@dataclass(frozen=True)
class SentCommand:
    """The command actually sent on one tick (MuJoCo order), and what the safety layer changed."""

    mode: Mode
    q_rad: np.ndarray
    """(J,) position target sent to the motors."""
    kp: float
    kd: float
    clamped: dict[str, np.ndarray] = field(default_factory=dict)
    """Reason -> (J,) bool mask of joints changed for that reason (``position_limit``, ``max_step``,
    ``tracking_error``); empty when nothing was clamped."""


class CommandWatchdog:
    """Tracks command freshness: ACTIVE -> HOLD -> DAMP (latched) when commands stop."""

    def __init__(self, hold_timeout_s: float, damp_timeout_s: float) -> None:
        self.hold_timeout_s = hold_timeout_s
        self.damp_timeout_s = damp_timeout_s
        self._last_command_s: float | None = None

    def feed(self, now_s: float) -> None:
        """A fresh command arrived at ``now_s``."""
        self._last_command_s = now_s

    def clear(self) -> None:
        """Forget the last command (the next mode change needs a new one)."""
        self._last_command_s = None

    def age_s(self, now_s: float) -> float:
        """Seconds since the last command (inf if none)."""
        return float("inf") if self._last_command_s is None else now_s - self._last_command_s

    def mode(self, now_s: float) -> Mode:
        """ACTIVE, HOLD or DAMP from the command age."""
        age = self.age_s(now_s)
        if age <= self.hold_timeout_s:
            return Mode.ACTIVE
        return Mode.HOLD if age <= self.damp_timeout_s else Mode.DAMP


class PoseSequence:
    """A smooth (cosine) interpolation from a start pose to a goal pose over ``duration_s``."""

    def __init__(self, start_q_rad: np.ndarray, goal_q_rad: np.ndarray, start_s: float, duration_s: float) -> None:
        if duration_s <= 0:
            raise ValueError(f"duration_s must be > 0, got {duration_s=}")
        self.start_q_rad = np.asarray(start_q_rad, dtype=np.float64).copy()
        self.goal_q_rad = np.asarray(goal_q_rad, dtype=np.float64).copy()
        self.start_s = start_s
        self.duration_s = duration_s

    def target(self, now_s: float) -> tuple[np.ndarray, bool]:
        """Position target at ``now_s`` and whether the sequence has finished."""
        phase = min(max((now_s - self.start_s) / self.duration_s, 0.0), 1.0)
        blend = 0.5 - 0.5 * np.cos(np.pi * phase)  # zero velocity at both ends
        return self.start_q_rad + blend * (self.goal_q_rad - self.start_q_rad), phase >= 1.0


class SafetyController:
    """Turns a desired joint target into the command that is safe to send, tick by tick.

    The caller feeds commands (``command``), asks for sequences (``stand_up``, ``lie_down``),
    and calls ``send`` once per control tick with the measured joint state.
    """

    def __init__(self, config: SafetyConfig) -> None:
        self.config = config
        self.watchdog = CommandWatchdog(config.hold_timeout_s, config.damp_timeout_s)
        self._lo = np.asarray(config.q_min_rad, dtype=np.float64)
        self._hi = np.asarray(config.q_max_rad, dtype=np.float64)
        self._base_mode = Mode.DAMP  # DAMP, SEQUENCE, STAND, ACTIVE (ACTIVE then decays by the watchdog)
        self._estop_reason: str | None = None
        self._sequence: PoseSequence | None = None
        self._sequence_end_mode = Mode.STAND
        self._desired: np.ndarray | None = None
        self._last_sent: np.ndarray | None = None
        self.ignored_commands = 0
        """Commands that arrived while the driver was not accepting them (DAMP, ESTOP, SEQUENCE)."""

    # ---- inputs -------------------------------------------------------------------------------------------
    @property
    def estop_reason(self) -> str | None:
        """Why the e-stop is latched, or None."""
        return self._estop_reason

    def command(self, q_target_rad: np.ndarray, now_s: float) -> bool:
        """Offer a desired joint target (J,). Returns False if it was ignored in the current mode.

        Raises:
            ValueError: wrong shape or non-finite values (the caller should hold the last command).
        """
        q = np.asarray(q_target_rad, dtype=np.float64)
        if q.shape != (self.config.num_joints,) or not np.all(np.isfinite(q)):
            raise ValueError(f"joint target must be finite with shape ({self.config.num_joints},), got shape "
                             f"{q.shape} with {int(np.sum(~np.isfinite(q)))} non-finite values; command dropped")
        if self._estop_reason is not None or self._base_mode in (Mode.DAMP, Mode.SEQUENCE):
            self.ignored_commands += 1
            return False
        self._desired = q
        self._base_mode = Mode.ACTIVE
        self.watchdog.feed(now_s)
        return True

    def estop(self, reason: str) -> None:
        """Latch damping until ``reset``; the first reason is kept."""
        if self._estop_reason is None:
            self._estop_reason = reason
        self._sequence = None

    def reset(self) -> None:
        """Clear the e-stop latch. The driver goes to DAMP: stand up explicitly to resume."""
        self._estop_reason = None
        self._enter_damp()

    def stand_up(self, measured_q_rad: np.ndarray, goal_q_rad: np.ndarray, now_s: float, duration_s: float) -> bool:
        """Start a stand-up from the measured pose; returns False (refused) while the e-stop is latched."""
        return self._start_sequence(measured_q_rad, goal_q_rad, now_s, duration_s, Mode.STAND)

    def lie_down(self, measured_q_rad: np.ndarray, goal_q_rad: np.ndarray, now_s: float, duration_s: float) -> bool:
        """Start a lie-down from the measured pose, ending in DAMP; refused while the e-stop is latched."""
        return self._start_sequence(measured_q_rad, goal_q_rad, now_s, duration_s, Mode.DAMP)

    def _start_sequence(self, measured_q_rad: np.ndarray, goal_q_rad: np.ndarray, now_s: float,
                        duration_s: float, end_mode: Mode) -> bool:
        if self._estop_reason is not None:
            return False
        goal = np.clip(np.asarray(goal_q_rad, dtype=np.float64), self._lo, self._hi)
        self._sequence = PoseSequence(np.asarray(measured_q_rad, dtype=np.float64), goal, now_s, duration_s)
        self._sequence_end_mode = end_mode
        self._base_mode = Mode.SEQUENCE
        self._last_sent = None  # the sequence starts at the measured pose
        self.watchdog.clear()
        return True

    def _enter_damp(self) -> None:
        self._base_mode = Mode.DAMP
        self._sequence = None
        self._desired = None
        self._last_sent = None
        self.watchdog.clear()

    # ---- one control tick ---------------------------------------------------------------------------------
    def mode(self, now_s: float) -> Mode:
        """The mode ``send`` would use at ``now_s`` (without changing state)."""
        if self._estop_reason is not None:
            return Mode.ESTOP
        if self._base_mode is Mode.ACTIVE:
            return self.watchdog.mode(now_s)
        return self._base_mode

    def send(self, measured_q_rad: np.ndarray, measured_dq_rad_s: np.ndarray, now_s: float,
             desired_q_rad: np.ndarray | None = None) -> SentCommand:
        """The command to send this tick, given the measured joint state (J,) each.

        Args:
            measured_q_rad: (J,) measured joint positions.
            measured_dq_rad_s: (J,) measured joint velocities.
            now_s: current time on the clock used for ``command``.
            desired_q_rad: (J,) optional in-between target for ACTIVE mode (interpolation between two
                commands); the last ``command`` target is used when None.
        """
        q_meas = np.asarray(measured_q_rad, dtype=np.float64)
        dq_meas = np.asarray(measured_dq_rad_s, dtype=np.float64)
        shape = (self.config.num_joints,)
        if q_meas.shape != shape or dq_meas.shape != shape:
            self.estop(f"joint state has shapes {q_meas.shape} and {dq_meas.shape}, expected {shape}")
            q_meas = np.zeros(shape)  # a damping command needs no measurement (kp = 0)
            dq_meas = np.zeros(shape)
        elif not (np.all(np.isfinite(q_meas)) and np.all(np.isfinite(dq_meas))):
            self.estop("non-finite joint state from the robot")
        elif self._estop_reason is None and np.max(np.abs(dq_meas)) > self.config.max_velocity_rad_s:
            joint = int(np.argmax(np.abs(dq_meas)))
            self.estop(f"joint {joint} speed {dq_meas[joint]:.1f} rad/s exceeds "
                       f"max_velocity_rad_s={self.config.max_velocity_rad_s}")
        mode = self.mode(now_s)
        if mode is Mode.DAMP and self._base_mode is Mode.ACTIVE:
            self._enter_damp()  # the watchdog fired: latch until stand_up
        if mode in (Mode.DAMP, Mode.ESTOP):
            self._last_sent = None
            q_hold = np.where(np.isfinite(q_meas), q_meas, 0.0)
            return SentCommand(mode, q_hold, 0.0, self.config.damping_kd)
        if mode is Mode.SEQUENCE:
            desired, done = self._sequence.target(now_s)
            if done:
                self._desired = self._sequence.goal_q_rad
                self._base_mode = self._sequence_end_mode
                self._sequence = None
                if self._base_mode is Mode.DAMP:
                    self._enter_damp()
        else:  # ACTIVE follows the command, HOLD and STAND keep the last target
            if mode is Mode.ACTIVE:
                desired = self._desired if desired_q_rad is None else np.asarray(desired_q_rad, dtype=np.float64)
            else:
                desired = self._desired if self._last_sent is None else self._last_sent
        q_sent, clamped = self._limit(desired, q_meas)
        self._last_sent = q_sent
        return SentCommand(mode, q_sent, self.config.kp, self.config.kd, clamped)

    def _limit(self, desired: np.ndarray, q_meas: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Position limits, then the per-tick step, then the tracking-error bound (each masks what it changed)."""
        clamped: dict[str, np.ndarray] = {}
        q = np.clip(desired, self._lo, self._hi)
        _note(clamped, "position_limit", q != desired)
        if self._last_sent is not None:
            step = self.config.max_step_rad
            limited = np.clip(q, self._last_sent - step, self._last_sent + step)
            _note(clamped, "max_step", limited != q)
            q = limited
        err = self.config.max_tracking_error_rad
        limited = np.clip(q, q_meas - err, q_meas + err)
        _note(clamped, "tracking_error", limited != q)
        return limited, clamped


def _note(clamped: dict[str, np.ndarray], reason: str, mask: np.ndarray) -> None:
    if np.any(mask):
        clamped[reason] = mask
