"""Names, default pose and motor-order permutations of the Unitree Go2 (Menagerie model).

Core code uses MuJoCo order: legs FL, FR, RL, RR, each (hip, thigh, calf). The Unitree SDK
(``LowCmd.motor_cmd`` / ``LowState.motor_state``) uses legs FR, FL, RR, RL. Only drivers convert,
through the two named permutations below:

    sdk_array = mujoco_array[MUJOCO_TO_SDK]      # index i of the SDK array reads MuJoCo motor MUJOCO_TO_SDK[i]
    mujoco_array = sdk_array[SDK_TO_MUJOCO]
"""

from __future__ import annotations

import numpy as np

LEGS: tuple[str, ...] = ("FL", "FR", "RL", "RR")
"""MuJoCo leg order."""
SDK_LEGS: tuple[str, ...] = ("FR", "FL", "RR", "RL")
"""Unitree SDK leg order."""
JOINT_KINDS: tuple[str, ...] = ("hip", "thigh", "calf")

JOINT_NAMES: tuple[str, ...] = tuple(f"{leg}_{kind}_joint" for leg in LEGS for kind in JOINT_KINDS)
"""MJCF joint names, MuJoCo order."""
ACTUATOR_NAMES: tuple[str, ...] = tuple(f"{leg}_{kind}" for leg in LEGS for kind in JOINT_KINDS)
"""MJCF actuator names, MuJoCo order (equal to ``robots.GO2.action_names``)."""
FOOT_GEOM_NAMES: tuple[str, ...] = LEGS
"""Foot collision spheres are named after their leg."""
CALF_BODY_NAMES: tuple[str, ...] = tuple(f"{leg}_calf" for leg in LEGS)
ROOT_BODY_NAME = "base"
IMU_SITE_NAME = "imu"
FLOOR_GEOM_NAME = "floor"

SDK_JOINT_NAMES: tuple[str, ...] = tuple(f"{leg}_{kind}_joint" for leg in SDK_LEGS for kind in JOINT_KINDS)
MUJOCO_TO_SDK: np.ndarray = np.array([JOINT_NAMES.index(name) for name in SDK_JOINT_NAMES], dtype=np.int64)
"""``sdk = mujoco[MUJOCO_TO_SDK]``: for each SDK motor slot, the MuJoCo index it reads."""
SDK_TO_MUJOCO: np.ndarray = np.array([SDK_JOINT_NAMES.index(name) for name in JOINT_NAMES], dtype=np.int64)
"""``mujoco = sdk[SDK_TO_MUJOCO]``: for each MuJoCo joint, the SDK slot it reads."""

DEFAULT_POSE_RAD: np.ndarray = np.array([0.0, 0.9, -1.8] * 4, dtype=np.float64)
"""Standing joint pose (Menagerie ``home`` keyframe), MuJoCo order, (12,)."""
TORQUE_LIMIT_NM: np.ndarray = np.array([23.7, 23.7, 45.43] * 4, dtype=np.float64)
"""Motor torque limits from the MJCF ctrlrange, (12,)."""
MODEL_JOINT_DAMPING_NMS_PER_RAD = 2.0
"""Passive joint damping in the Menagerie MJCF (4x the reference Kd): compensated by ``Go2LowLevel``."""

# Leg geometry (base frame, metres), from the MJCF.
HIP_OFFSETS_M: np.ndarray = np.array(
    [[0.1934, 0.0465, 0.0], [0.1934, -0.0465, 0.0], [-0.1934, 0.0465, 0.0], [-0.1934, -0.0465, 0.0]]
)
"""Abduction joint origins in the base frame, (4, 3), MuJoCo leg order."""
LEG_SIDE: np.ndarray = np.array([1.0, -1.0, 1.0, -1.0])
"""+1 for left legs, -1 for right legs."""
THIGH_Y_OFFSET_M = 0.0955
THIGH_LENGTH_M = 0.213
FOOT_IN_CALF_M: tuple[float, float] = (-0.002, -0.213)
"""(x, z) of the foot sphere centre in the calf frame."""
FOOT_RADIUS_M = 0.022
NOMINAL_STANDING_HEIGHT_M = 0.27
"""Base height of the home keyframe above rigid ground."""
