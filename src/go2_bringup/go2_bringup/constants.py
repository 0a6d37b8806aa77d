"""What the Go2 driver takes from the simulation's single source of truth (``simdist_core.sim.go2_constants``).

No permutation or pose is written down twice: this module only derives the driver's views of them.
"""

from __future__ import annotations

import numpy as np
from simdist_core.sim import go2_constants as gc

JOINT_LIMIT_MARGIN_RAD = 0.05
"""Targets stay this far inside the MJCF joint range (the real joints hit mechanical stops there)."""
LIE_DOWN_POSE_RAD: np.ndarray = np.array([0.0, 1.25, -2.65] * 4, dtype=np.float64)
"""Folded legs, belly on the ground (MuJoCo order); within the calf range of the MJCF."""


def joint_permutations() -> tuple[np.ndarray, np.ndarray]:
    """(MUJOCO_TO_SDK, SDK_TO_MUJOCO): ``sdk = mj[MUJOCO_TO_SDK]``, ``mj = sdk[SDK_TO_MUJOCO]``."""
    return gc.MUJOCO_TO_SDK.copy(), gc.SDK_TO_MUJOCO.copy()


def foot_permutations() -> tuple[np.ndarray, np.ndarray]:
    """Per-leg version of ``joint_permutations`` (foot force arrays have one entry per leg)."""
    mj_to_sdk = np.array([gc.LEGS.index(leg) for leg in gc.SDK_LEGS], dtype=np.int64)
    sdk_to_mj = np.array([gc.SDK_LEGS.index(leg) for leg in gc.LEGS], dtype=np.int64)
    return mj_to_sdk, sdk_to_mj


def joint_limits_rad(margin_rad: float = JOINT_LIMIT_MARGIN_RAD) -> tuple[np.ndarray, np.ndarray]:
    """Joint position range (12,) x 2 from the Go2 MJCF, shrunk by ``margin_rad``, MuJoCo order.

    Raises:
        FileNotFoundError: the Go2 model is not installed (the message names the package).
    """
    import mujoco
    from simdist_core.sim.assets import go2_xml_path

    model = mujoco.MjModel.from_xml_path(str(go2_xml_path()))
    ranges = np.array([model.jnt_range[model.joint(name).id] for name in gc.JOINT_NAMES], dtype=np.float64)
    return ranges[:, 0] + margin_rad, ranges[:, 1] - margin_rad
