"""The encoder's observations -> per-step dataset records: the live replay path.

The encoder node builds one observation per control step from the sensor topics and publishes it on
``observation`` together with the action the robot executed just before it (the row it appends to the
model's history). The replay buffer turns that stream into records with :class:`StepPairer`, so the data
the dynamics are finetuned on are the observations the encoder encoded, bit for bit, with the same
episode cuts and the same Go2 gait clock. (Recorded bags, which hold the raw sensor topics, go through
:class:`simdist_core.data.transitions.TransitionAssembler` instead.)

Why not assemble from the sensor topics in the replay buffer as well: on a 2-vCPU machine a Python node
pays ~0.4 ms of CPU for every message it receives (``simdist bench messages``); at 50 Hz the six or seven
sensor, command and clock topics cost the replay buffer ~30 % of a core, which the control loop was
missing. One message per step costs it a sixth of that.

Pairing rule: the observation of step k+1 carries ``action_before`` = a_k, the action executed from step k,
so step k becomes the record ``(obs_k, a_k)`` when observation k+1 arrives, if both belong to the same
episode and are one control period apart. The last observation of an episode has no action after it and
is not recorded (as in the bag path). Anything else starts a new episode, counted by reason
(:attr:`StepPairer.boundaries`): a hole the replay buffer saw (a malformed observation), the encoder's own
episode start (announced reset, jump, gap, first step), a change of the encoder's episode counter (an
observation of the new episode was lost), a stamp that does not advance, or a gap of more than
``max_gap_s`` (a step the encoder skipped or that was lost).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from simdist_core.data.transitions import make_record
from simdist_core.robots import RobotSpec


@dataclass(frozen=True, kw_only=True)
class ObservedStep:
    """One observation as the encoder built it (the ``observation`` topic, decoded and validated)."""

    obs: Mapping[str, np.ndarray]
    """``proprio``, ``command`` (robots with a task command), ``height_map`` (Go2) or ``image`` (UR5e)."""
    action_before: np.ndarray
    """(A,) the executed action that led to this observation (meaningless on an episode's first step)."""
    t_ns: int
    """Observation stamp (the ``joint_states`` stamp)."""
    episode_start: bool
    """The encoder restarted its history here."""
    episode: int
    """How many episodes the encoder has started (detects a lost first observation of an episode)."""


BOUNDARY_REASONS = ("first", "hole", "encoder_restart", "episode_changed", "stamp_not_increasing", "gap")


@dataclass
class StepPairer:
    """Pairs consecutive encoder observations into records (rule in the module docstring).

    Args:
        spec: the robot (record layout).
        max_gap_s: consecutive observations further apart than this start a new episode. Keep it under two
            control periods: a record stands for exactly one period of dynamics.
        first_episode_id: episode id of the first record (a resumed replay buffer continues after the ids
            already on disk, so episodes never merge across a restart).
    """

    spec: RobotSpec
    max_gap_s: float
    first_episode_id: int = 0
    episode_id: int = field(init=False)
    """Episode id of the next record."""
    steps: int = field(init=False, default=0)
    """Records made so far."""
    boundaries: dict[str, int] = field(init=False)
    """Episode starts by reason (:data:`BOUNDARY_REASONS`)."""
    _prev: ObservedStep | None = field(init=False, default=None)
    _records_in_episode: int = field(init=False, default=0)
    _after_hole: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if not 0 < self.max_gap_s:
            raise ValueError(f"max_gap_s must be > 0, got {self.max_gap_s=}")
        self.episode_id = self.first_episode_id
        self.boundaries = dict.fromkeys(BOUNDARY_REASONS, 0)

    def boundary(self, prev: ObservedStep | None, step: ObservedStep) -> str | None:
        """Why ``step`` cannot follow ``prev`` in one episode, or None if it does."""
        if prev is None:
            return "hole" if self._after_hole else "first"
        if step.episode_start:
            return "encoder_restart"
        if step.episode != prev.episode:
            return "episode_changed"
        if step.t_ns <= prev.t_ns:
            return "stamp_not_increasing"
        if (step.t_ns - prev.t_ns) * 1e-9 > self.max_gap_s:
            return "gap"
        return None

    def on_step(self, step: ObservedStep) -> dict[str, np.ndarray] | None:
        """Take the next observation; returns the record of the previous one, or None at an episode start."""
        prev, self._prev = self._prev, step
        reason = self.boundary(prev, step)
        self._after_hole = False
        if reason is not None:
            self.boundaries[reason] += 1
            if self._records_in_episode:
                self.episode_id += 1
                self._records_in_episode = 0
            return None
        assert prev is not None  # boundary() returns "first" otherwise
        self._records_in_episode += 1
        self.steps += 1
        return make_record(self.spec, prev.obs, step.action_before, prev.t_ns, self.episode_id)

    def break_episode(self) -> None:
        """The stream has a hole (a malformed or lost observation): the next one starts a new episode."""
        self._prev = None
        self._after_hole = True
