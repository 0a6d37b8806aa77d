"""Names and fixed numbers of the simulated UR5e + Robotiq 2F-85 (MuJoCo order everywhere).

Simulation code looks IDs up by these names at init (indices are never hard-coded). The real driver and the ROS
encoder use the same joint order and the same wrench scaling, so they live here, not in a config.
"""

from __future__ import annotations

import numpy as np

ARM_JOINTS: tuple[str, ...] = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)
"""The six arm joints, MuJoCo (= UR controller) order."""

ARM_ACTUATORS: tuple[str, ...] = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
"""Position servos of the arm, one per joint, same order."""

GRIPPER_PREFIX = "gripper/"
"""Name prefix of every element of the attached 2F-85."""
FINGER_ACTUATOR = GRIPPER_PREFIX + "fingers_actuator"
GRIPPER_BASE_BODY = GRIPPER_PREFIX + "base"
"""Gripper body the welded part hangs from (its z axis is the tool axis)."""
WRIST_MOUNT_BODY = GRIPPER_PREFIX + "base_mount"
"""First gripper body: the wrist force/torque sensor measures what it transmits to ``wrist_3_link``."""

BASE_BODY = "base"
"""Robot base; its frame is the world frame of the scene (and the frame of every TCP quantity)."""
PART_BODY = "part"
"""The welded peg / table leg."""
TCP_SITE = "tcp"
"""Tip of the part; x axis = tool yaw reference, z axis = tool axis (down when roll/pitch are locked)."""
FT_SITE = "wrist_ft"
FORCE_SENSOR = "wrist_force"
TORQUE_SENSOR = "wrist_torque"
FIXTURE_BODY = "fixture"
"""Mocap body holding the hole; its origin is the hole centre on the table surface."""
SCENE_CAMERA = "scene_cam"
OUT_OF_VIEW_BODIES: tuple[str, ...] = ("base", "shoulder_link", "upper_arm_link")
"""Links the scene camera never sees; their visual meshes are not drawn (``SceneConfig.hide_out_of_view_links``)."""

HOME_QPOS_RAD = np.array([-1.5708, -1.5708, 1.5708, -1.5708, -1.5708, 0.0])
"""Menagerie ``home`` keyframe: tool pointing down above the table."""

TOOL_DOWN_ROT = np.diag([1.0, -1.0, -1.0])
"""Tool orientation at yaw 0: tool z axis down, tool x axis along base x (roll/pitch locked)."""

WRENCH_FORCE_SCALE_N = 20.0
"""Proprio wrench force = tared force (N, base frame) / this."""
WRENCH_TORQUE_SCALE_NM = 2.0
"""Proprio wrench torque = tared torque (N m, base frame) / this."""
WRENCH_CLIP = 10.0
"""Scaled wrench components are clipped to +-this (a 200 N / 20 N m spike must not blow up the encoder)."""
