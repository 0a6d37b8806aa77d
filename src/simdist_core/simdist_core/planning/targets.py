"""A plan of normalised actions in the robot's own units, for display (``plan`` topic, logs).

The Go2's action is a joint position target: each step of the plan becomes the radians its low level
(``Go2LowLevel.targets``, the conversion the simulator and the real driver apply to every command) would
send. The UR5e's action is a Cartesian step of the tool target that its IK servo turns into joint targets
only against the measured state, so its plan has no joint positions and stays normalised.
"""

from __future__ import annotations

import numpy as np


def plan_joint_targets(robot: str, mean: np.ndarray) -> tuple[tuple[str, ...], np.ndarray] | None:
    """(joint names, (H, J) joint targets in rad) of a plan ``mean`` (H, A), or None if the action is not one."""
    if robot != "go2":
        return None
    from simdist_core.sim.go2_constants import JOINT_NAMES
    from simdist_core.sim.go2_lowlevel import Go2LowLevel

    mean = np.asarray(mean, np.float64)
    if mean.ndim != 2 or mean.shape[1] != len(JOINT_NAMES):
        raise ValueError(f"go2 plan must be (H, {len(JOINT_NAMES)}), got {mean.shape}")
    return JOINT_NAMES, Go2LowLevel().targets(mean)
