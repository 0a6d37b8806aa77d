"""Ramp the velocity command the planner sees, so a walking robot starts from rest gently.

Why: on the PTFE slope stand-in the Go2 world models keep a slippery gait they are handed at speed (9 of 10
model x planner cases after a 3-s expert start) but cannot start one from rest: asked for the full command at
once, the first push-offs ask the feet for more shear than friction 0.22 gives, and the robot slides and falls.
The privileged expert ramps its own reference velocity from rest. Asked for a command that grows over 4 s, the
deployed planner walked at least 1 m in 11 of 30 episodes from rest where it did in none without (+0.70 m per
episode, paired; the same through the live graph; ``bench_results/PTFE_COMMAND_RAMP.md``). It does not make
dynamics-only adaptation win on that slope (same protocol).

What it is: a ramp generator in front of the planner's command input, the controller-side job a velocity
smoother does on a mobile robot (the task's command is the operator's; the ramp only decides how fast the
planner is asked to get there). Whenever the target changes, the output moves linearly from where it is to the
new target over ``ramp_s`` seconds; an episode start (a reset, the robot put down) puts it back at rest. Plain
Python, no clock of its own: the caller advances it once per control period, so the in-process rollout and
the encoder node of the live graph see the same command at the same step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

VELOCITY_COMMAND_ROBOTS = ("go2",)
"""Robots whose task command is a velocity (a ramp of UR5e's fixture pose would move the hole, not smooth a
motion)."""


class CommandRamp:
    """Linear ramp of a velocity command towards its latest target, one control period per :meth:`step`.

    Args:
        ramp_s: seconds a change of target takes to pass through (0: the target at once).
        dt_s: control period in seconds.
        dim: command width (Go2: vx m/s, vy m/s, yaw rate rad/s).
    """

    def __init__(self, ramp_s: float, dt_s: float, dim: int) -> None:
        if not np.isfinite(ramp_s) or ramp_s < 0:
            raise ValueError(f"ramp_s must be finite and >= 0, got {ramp_s=}")
        if not np.isfinite(dt_s) or dt_s <= 0:
            raise ValueError(f"dt_s must be finite and > 0, got {dt_s=}")
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim=}")
        self.ramp_s, self.dt_s, self.dim = float(ramp_s), float(dt_s), int(dim)
        self._value = np.zeros(dim, np.float64)
        self._start = np.zeros(dim, np.float64)
        self._target = np.zeros(dim, np.float64)
        self._elapsed_s = 0.0

    @property
    def value(self) -> np.ndarray:
        """The command the planner is asked for now (a copy)."""
        return self._value.astype(np.float32)

    def reset(self, target: np.ndarray) -> np.ndarray:
        """Episode start: at rest (0), ramping towards ``target`` from the next :meth:`step`; returns 0."""
        self._value[:] = 0.0
        self._retarget(self._checked(target))
        return self.value

    def step(self, target: np.ndarray) -> np.ndarray:
        """Advance one control period towards ``target`` (a new target restarts the ramp from here); the output."""
        target = self._checked(target)
        if not np.array_equal(target, self._target):
            self._retarget(target)
        self._elapsed_s += self.dt_s
        share = 1.0 if self.ramp_s == 0 else min(1.0, self._elapsed_s / self.ramp_s)
        self._value = self._start + share * (self._target - self._start)
        return self.value

    def _retarget(self, target: np.ndarray) -> None:
        self._start, self._target, self._elapsed_s = self._value.copy(), target, 0.0

    def _checked(self, target: np.ndarray) -> np.ndarray:
        target = np.asarray(target, np.float64).reshape(-1)
        if target.shape != (self.dim,) or not np.all(np.isfinite(target)):
            raise ValueError(f"command target must be {self.dim} finite values, got {target.tolist()}")
        return target.copy()


def ramp_for(spec: Any, ramp_s: float) -> CommandRamp | None:  # noqa: ANN401  (a RobotSpec)
    """The ramp a robot's controller uses (None when ``ramp_s`` is 0).

    Raises:
        ValueError: ``ramp_s`` > 0 for a robot whose command is not a velocity, or a negative ``ramp_s``.
    """
    if ramp_s == 0:
        return None
    if spec.name not in VELOCITY_COMMAND_ROBOTS:
        raise ValueError(f"a command ramp smooths velocity commands ({', '.join(VELOCITY_COMMAND_ROBOTS)}); "
                         f"{spec.name}'s command is not one (command_ramp_s={ramp_s})")
    return CommandRamp(ramp_s, 1.0 / spec.control_hz, spec.command_dim)
