"""Where an episode starts in a live sensor stream: the ONE rule shared by the encoder and the data path.

The encoder node (history restart, Go2 gait clock; the live replay buffer takes its episode starts from the
encoder's ``observation`` stream) and :class:`simdist_core.data.transitions.TransitionAssembler` (episode ids,
gait clock; the bag converter) feed each step to an :class:`EpisodeTracker`, so they cut the stream at the
same steps and count the gait clock from the same origin: replayed Go2 proprio then equals the encoder's after
a reset, and no training window spans a teleport.

A new episode starts at a step when
    * it is the first step the tracker sees;
    * a step was dropped since the last one (:meth:`EpisodeTracker.break_episode`): the stream has a hole;
    * its stamp does not increase (a simulator restarted its clock, or a replayed stream);
    * an announced boundary (``episode_start`` of the simulated robot) lies in ``(previous stamp, stamp]``;
    * a joint or the base / tool tip jumped further than a robot can move in one period (a reset, or a
      robot picked up and put down: real drivers announce nothing);
    * it comes more than ``max_gap_s`` after the previous step (the robot or a node stalled).

Announcements are untrusted (anything on DDS may publish them): they can only ADD boundaries, never
remove one, so a forged stamp splits an episode at worst. The set of pending announcements is bounded.
ROS-free: the nodes convert messages with :func:`header_stamp_ns` (rclpy and rosbags headers alike).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_GAP_PERIODS = 2.5
"""Steps further apart than this many control periods start a new episode (one lost sample is tolerated)."""

FIRST, BREAK, STAMP, ANNOUNCED, JOINT_JUMP, BASE_JUMP, GAP = (
    "first", "break", "stamp_not_increasing", "announced", "joint_jump", "base_jump", "gap")
"""Reasons :meth:`EpisodeTracker.step` gives for a new episode (in the order they are checked)."""


@dataclass(frozen=True, kw_only=True)
class EpisodeConfig:
    """Thresholds of the episode rule (defaults: the encoder's reset_jump_* parameters, Go2 at 50 Hz)."""

    max_gap_s: float = DEFAULT_GAP_PERIODS / 50.0
    """Consecutive steps further apart than this start a new episode (default 2.5 periods at 50 Hz)."""
    joint_jump_rad: float = 0.5
    """Any joint moving more than this between two steps means a reset (no joint moves 0.5 rad in 20 ms)."""
    base_jump_m: float = 0.3
    """The base (Go2) or tool tip (UR5e) moving more than this between two steps means a reset."""
    max_pending: int = 16
    """Most announced boundaries waiting to be crossed (the earliest are kept; see :meth:`EpisodeTracker.announce`)."""

    def __post_init__(self) -> None:
        for name in ("max_gap_s", "joint_jump_rad", "base_jump_m"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {self.max_pending=}")

    @classmethod
    def for_rate(cls, control_hz: float, **overrides: Any) -> EpisodeConfig:  # noqa: ANN401
        """The default rule for a stream at ``control_hz``: the gap is :data:`DEFAULT_GAP_PERIODS` periods."""
        return cls(**{"max_gap_s": DEFAULT_GAP_PERIODS / control_hz, **overrides})


def header_stamp_ns(header: Any) -> int:  # noqa: ANN401  (std_msgs/Header of rclpy or rosbags)
    """The stamp of an ``episode_start`` header in ns.

    Raises:
        ValueError: a missing, negative or non-normalised stamp (``nanosec`` must be < 1e9).
    """
    try:
        sec, nanosec = header.stamp.sec, header.stamp.nanosec
    except AttributeError as exc:
        raise ValueError(f"episode_start has no stamp: {exc}") from None
    if isinstance(sec, bool) or isinstance(nanosec, bool) or not isinstance(sec, int | np.integer) \
            or not isinstance(nanosec, int | np.integer):
        raise ValueError(f"episode_start stamp is not integral: sec={sec!r} nanosec={nanosec!r}")
    if sec < 0 or not 0 <= nanosec < 1_000_000_000:
        raise ValueError(f"episode_start stamp out of range: sec={sec} nanosec={nanosec}")
    return int(sec) * 1_000_000_000 + int(nanosec)


class EpisodeTracker:
    """Decides, step by step, whether a new episode starts, and owns the episode's clock origin.

    Memory is bounded: the previous step's stamp and positions, at most ``max_pending`` announced stamps and
    a few counters. ``announce`` may be called from another thread than ``step`` (a ROS subscription).

    Args:
        config: thresholds (default :class:`EpisodeConfig`).
    """

    def __init__(self, config: EpisodeConfig | None = None) -> None:
        self.config = config or EpisodeConfig()
        self._lock = threading.Lock()
        self._pending: list[int] = []  # announced boundaries not crossed yet, sorted
        self._last_t_ns: int | None = None
        self._last_pose: tuple[np.ndarray, np.ndarray] | None = None
        self._broken = False
        self.last_jump: tuple[float, float] = (math.nan, math.nan)
        """(largest joint change rad, base change m) at the last step, for log lines."""
        self.t0_ns: int | None = None
        """Stamp of the current episode's first step (the gait clock's origin); None before the first step."""
        self.episodes_started = 0
        """Episodes started so far (the first step starts episode 1)."""
        self.counts: dict[str, int] = {"announced": 0, "announce_rejected": 0, "announce_passed": 0,
                                       "announce_overflow": 0}
        """Announcements accepted / malformed / already passed on arrival / dropped because the set was full."""

    @property
    def pending(self) -> tuple[int, ...]:
        """Announced boundaries (ns) not crossed yet, earliest first."""
        with self._lock:
            return tuple(self._pending)

    def announce(self, t_ns: int) -> bool:
        """A new episode starts at the first step stamped ``>= t_ns`` (the previous step being before it).

        A boundary at or before the last step is already passed and ignored (the jump rule covers a late
        announcement). When ``max_pending`` boundaries wait, the latest one is dropped: a flood of forged
        far-future stamps then cannot push out a genuine near one. Returns True if the boundary is kept.
        """
        if isinstance(t_ns, bool) or not isinstance(t_ns, int | np.integer) or t_ns < 0:
            self.counts["announce_rejected"] += 1
            return False
        t_ns = int(t_ns)
        with self._lock:
            if self._last_t_ns is not None and t_ns <= self._last_t_ns:
                self.counts["announce_passed"] += 1
                return False
            if t_ns in self._pending:
                return True
            self._pending.append(t_ns)
            self._pending.sort()
            kept = True
            if len(self._pending) > self.config.max_pending:
                kept = self._pending.pop() != t_ns
                self.counts["announce_overflow"] += 1
            if kept:
                self.counts["announced"] += 1
            return kept

    def break_episode(self) -> None:
        """A step was dropped: the next step starts a new episode (a window must not span the hole)."""
        self._broken = True

    def step(self, t_ns: int, joint_pos: np.ndarray, base_pos: np.ndarray) -> str | None:
        """Feed one step; returns why a new episode starts here (one of the reason constants) or None.

        Args:
            t_ns: the step's observation stamp.
            joint_pos: joint positions (rad); only differences between steps are used, so any fixed order works.
            base_pos: (3,) base position (Go2 odom) or tool tip position (UR5e), metres.
        """
        t_ns = int(t_ns)
        pose = (np.asarray(joint_pos, np.float64).ravel(), np.asarray(base_pos, np.float64).ravel())
        with self._lock:  # announce() may run in another thread
            last, prev = self._last_t_ns, self._last_pose
            crossed = last is not None and any(last < b <= t_ns for b in self._pending)
            # Prune what this step has passed (crossed or not): the set only holds boundaries ahead.
            self._pending = [b for b in self._pending if b > t_ns]
            self._last_t_ns, self._last_pose = t_ns, pose
        self.last_jump = _jump(prev, pose)
        joint_jump, base_jump = self.last_jump
        reason = None
        if last is None:
            reason = FIRST
        elif self._broken:
            reason = BREAK
        elif t_ns <= last:
            reason = STAMP
        elif crossed:
            reason = ANNOUNCED
        elif not joint_jump <= self.config.joint_jump_rad:  # NaN (joint count changed) counts as a jump
            reason = JOINT_JUMP
        elif not base_jump <= self.config.base_jump_m:
            reason = BASE_JUMP
        elif (t_ns - last) * 1e-9 > self.config.max_gap_s:
            reason = GAP
        self._broken = False
        if reason is not None:
            self.t0_ns = t_ns  # the gait clock restarts with the episode, as in the simulator's reset
            self.episodes_started += 1
        return reason

    def clock_s(self, t_ns: int) -> float:
        """Seconds on the episode clock at ``t_ns`` (0 at the episode's first step): the Go2 gait clock.

        Every user computes it here, with the same expression, so their gait phases agree bit for bit.
        """
        if self.t0_ns is None:
            raise ValueError("clock_s before the first step")
        return (int(t_ns) - self.t0_ns) * 1e-9


def _jump(prev: tuple[np.ndarray, np.ndarray] | None, pose: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
    """(largest joint change rad, base change m) between two steps; NaN where the sizes differ or no previous."""
    if prev is None:
        return float("nan"), float("nan")
    joint = float(np.max(np.abs(pose[0] - prev[0]), initial=0.0)) if pose[0].shape == prev[0].shape else math.nan
    base = float(np.linalg.norm(pose[1] - prev[1])) if pose[1].shape == prev[1].shape else math.nan
    return joint, base
