"""Hold the heading the operator asked for: turn a body-frame velocity command into one with a correcting yaw rate.

Why: a Go2 task's command is a body-frame velocity (forward speed, yaw rate). It says nothing about which way is
forward, so a heading error costs the model nothing it can see: on 5° and 10° slopes the shipped model turned round
in every episode, walking downhill at the commanded speed (``bench_results/go2_slope_heading.json``). The
privileged expert holds its heading with a heading controller; this is that controller on the command side, as
legged-robot training commonly does: the heading target starts at the robot's heading, advances with the operator's
yaw rate, and the yaw rate the planner is asked for is the operator's plus ``gain_per_s`` times the heading error,
limited to ``max_yaw_rate_rad_s``. The heading comes from the IMU's orientation (a robot has it; it drifts slowly).

Plain Python, no clock of its own: the caller advances it once per control period, like ``CommandRamp``. Used by
``simdist eval --heading-hold``, ``simdist bench adaptation --set heading_hold=true`` and the encoder node's
``heading_hold`` parameter (the live graph), all after the command ramp.
"""

from __future__ import annotations

import numpy as np

from simdist_core.planning.command_ramp import VELOCITY_COMMAND_ROBOTS
from simdist_core.sim.go2_obs import wrap_rad


class HeadingHold:
    """Command filter: the operator's (vx, vy, yaw rate) in, the same with a heading-holding yaw rate out.

    Args:
        dt_s: control period in seconds.
        gain_per_s: yaw rate asked per radian of heading error (the expert's ``heading_gain``, 1.0).
        max_yaw_rate_rad_s: limit of the yaw rate asked for (the pretraining command range, 0.5).
    """

    def __init__(self, dt_s: float, gain_per_s: float = 1.0, max_yaw_rate_rad_s: float = 0.5) -> None:
        for name, value in (("dt_s", dt_s), ("gain_per_s", gain_per_s), ("max_yaw_rate_rad_s", max_yaw_rate_rad_s)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        self.dt_s, self.gain_per_s, self.max_yaw_rate_rad_s = dt_s, gain_per_s, max_yaw_rate_rad_s
        self.target_rad: float | None = None
        """Heading target (None until :meth:`reset`)."""

    def reset(self, yaw_rad: float) -> None:
        """An episode starts (the robot put down): hold the heading it has now."""
        self.target_rad = float(yaw_rad)

    def command(self, operator: np.ndarray, yaw_rad: float) -> np.ndarray:
        """The command for this control period, and advance the target by the operator's yaw rate.

        Args:
            operator: (3,) the operator's (vx m/s, vy m/s, yaw rate rad/s), body frame.
            yaw_rad: the robot's heading now (IMU).
        """
        out = np.array(operator, dtype=np.float32, copy=True)
        if self.target_rad is None:
            self.reset(yaw_rad)
        if not np.isfinite(yaw_rad):
            return out  # no heading this period: the operator's command as it is
        error = wrap_rad(self.target_rad - yaw_rad)
        out[2] = np.clip(out[2] + self.gain_per_s * error, -self.max_yaw_rate_rad_s, self.max_yaw_rate_rad_s)
        self.target_rad = wrap_rad(self.target_rad + float(operator[2]) * self.dt_s)
        return out


def hold_for(spec: object, enabled: bool) -> HeadingHold | None:
    """The heading hold a robot's controller uses (None when not ``enabled``).

    Raises:
        ValueError: ``enabled`` for a robot whose command is not a velocity (a UR5e's is a fixture pose).
    """
    if not enabled:
        return None
    if spec.name not in VELOCITY_COMMAND_ROBOTS:
        raise ValueError(f"heading_hold: a heading hold turns a velocity command "
                         f"({', '.join(VELOCITY_COMMAND_ROBOTS)}); {spec.name}'s command is not one")
    return HeadingHold(spec.control_dt)
