"""Per-robot mapping between raw sensor dicts (``RobotEnv.sensors()``) and the driver's ROS messages.

Both directions live here so the simulated robot publishes exactly what the encoder reads, and the
encoder computes proprio with the same core function the env uses (``go2_obs.proprio_from_sensors``,
``ur5e.proprio_from_sensors``).

Topics per robot (keys of ``SENSOR_TOPICS``):
    Go2   ``joint_states`` (pos, vel, torque), ``imu`` (quat, gyro, acc), ``odom`` (base pose; twist in the base
          frame = state estimate), ``height_map`` (32FC1, yaw-aligned base frame ``base_yaw``); also ``foot_contacts``.
    UR5e  ``joint_states`` (pos, vel), ``odom`` (TCP pose in the robot base frame, ``child_frame_id`` "tcp"; what
          ur_rtde's ``getActualTCPPose`` gives), ``wrench`` (tared force/torque in the base frame), ``camera``
          (rgb8, ``camera_optical_frame``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from simdist_core.robots import RobotSpec
from simdist_core.sim.robot_frames import CAMERA_FRAME, YAW_FRAME

from simdist_ros import msgs

SENSOR_TOPICS: dict[str, tuple[str, ...]] = {
    "go2": ("joint_states", "imu", "odom", "height_map"),
    "ur5e": ("joint_states", "odom", "wrench", "camera"),
}
"""Sensor messages an observation needs, per robot (``camera`` = ``topics.CAMERA_IMAGE``)."""
PUBLISHED_SENSORS: dict[str, tuple[str, ...]] = {
    "go2": (*SENSOR_TOPICS["go2"], "foot_contacts"),
    "ur5e": SENSOR_TOPICS["ur5e"],
}
"""The keys of :func:`sensors_to_messages` per robot: what a simulated robot publishes (and nothing else, so
it needs no grant for another robot's topics under DDS security)."""

BASE_FRAME = {"go2": "base_link", "ur5e": "base"}
"""Frame of base-frame quantities per robot."""
PATH_FRAME = {"go2": YAW_FRAME, "ur5e": "base"}
"""Frame of the planner's predicted paths (the probe head's kind): Go2 base velocities integrated from the
yaw-aligned base frame (the height map's frame too), UR5e tool-tip positions in the robot base frame."""


def tf_inputs(robot: str, sensors: Mapping[str, np.ndarray]) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
    """What ``robot_tf.RobotTf.publish`` needs from a sensor dict: joint positions and the Go2's base pose."""
    base = (sensors["base_pos"], sensors["imu_quat"]) if robot == "go2" else None
    return sensors["joint_pos"], base


def joint_names(robot: str) -> tuple[str, ...]:
    """MuJoCo joint names in core order (the names the driver puts in ``JointState.name``)."""
    if robot == "go2":
        from simdist_core.sim.go2_constants import JOINT_NAMES

        return JOINT_NAMES
    if robot == "ur5e":
        from simdist_core.sim.ur5e_constants import ARM_JOINTS

        return ARM_JOINTS
    raise KeyError(f"no sensor mapping for robot {robot!r}; valid: {sorted(SENSOR_TOPICS)}")


def sensors_to_messages(
    robot: str, sensors: Mapping[str, np.ndarray], names: tuple[str, ...], t_ns: int
) -> dict[str, Any]:
    """Driver side: one message per sensor topic (and ``foot_contacts`` for Go2), stamped ``t_ns``."""
    frame = BASE_FRAME[robot]
    effort = sensors.get("joint_torque", np.zeros(len(names)))
    out: dict[str, Any] = {
        "joint_states": msgs.make_joint_state(names, sensors["joint_pos"], sensors["joint_vel"], effort, t_ns)
    }
    if robot == "go2":
        out["imu"] = msgs.make_imu(sensors["imu_quat"], sensors["imu_gyro"], sensors["imu_acc"], t_ns, "imu")
        out["odom"] = msgs.make_odom(sensors["base_pos"], sensors["imu_quat"], sensors["base_lin_vel"],
                                     sensors["imu_gyro"], t_ns, "odom", frame)  # fmt: skip
        out["height_map"] = msgs.make_height_map(sensors["height_map"], t_ns, YAW_FRAME)
        out["foot_contacts"] = msgs.make_float64_array(sensors["foot_contact_forces"])
    else:
        zeros = np.zeros(3)
        out["odom"] = msgs.make_odom(sensors["tcp_pos"], sensors["tcp_quat"], zeros, zeros, t_ns, frame, "tcp")
        out["wrench"] = msgs.make_wrench(sensors["wrench"][:3], sensors["wrench"][3:], t_ns, frame)
        if "image" in sensors:
            out["camera"] = msgs.make_rgb8(sensors["image"], t_ns, CAMERA_FRAME)
    return out


def obs_from_messages(
    spec: RobotSpec,
    latest: Mapping[str, Any],
    names: tuple[str, ...],
    command: np.ndarray,
    phase_time_s: float,
    gait_period_s: float,
) -> dict[str, np.ndarray]:
    """Encoder side: validated messages -> one observation (layout in ``simdist_core.robots``).

    Args:
        spec: the robot.
        latest: newest message per key of ``SENSOR_TOPICS[spec.name]``.
        names: joint names in core order.
        command: (C,) task command (Go2: velocity; UR5e: registered fixture pose).
        phase_time_s: seconds on the gait clock (Go2).
        gait_period_s: gait clock period (Go2).

    Raises:
        ValueError: a malformed message (``msgs.MessageError``) or a core proprio check failed.
    """
    pos, vel, effort = msgs.joint_state_to_arrays(latest["joint_states"], names)
    if spec.name == "go2":
        from simdist_core.sim.go2_obs import gait_phase_rad, proprio_from_sensors

        quat, gyro, acc = msgs.imu_to_arrays(latest["imu"])
        _, _, lin_vel, _ = msgs.odom_to_arrays(latest["odom"])
        sensors = {"joint_pos": pos, "joint_vel": vel, "joint_torque": effort, "imu_quat": quat, "imu_gyro": gyro,
                   "imu_acc": acc, "base_lin_vel": lin_vel}  # fmt: skip
        proprio = proprio_from_sensors(sensors, command, gait_phase_rad(phase_time_s, gait_period_s))
        height = msgs.height_map_to_array(latest["height_map"], spec.height_map_shape)  # type: ignore[arg-type]
        return {"proprio": proprio, "command": np.asarray(command, np.float32), "height_map": height}
    if spec.name == "ur5e":
        from simdist_core.sim.ur5e import proprio_from_sensors

        tcp_pos, tcp_quat, _, _ = msgs.odom_to_arrays(latest["odom"])
        sensors = {"joint_pos": pos, "joint_vel": vel, "tcp_pos": tcp_pos, "tcp_quat": tcp_quat,
                   "wrench": msgs.wrench_to_array(latest["wrench"])}  # fmt: skip
        image = msgs.rgb8_to_array(latest["camera"], spec.image_shape)  # type: ignore[arg-type]
        return {"proprio": proprio_from_sensors(sensors), "command": np.asarray(command, np.float32), "image": image}
    raise KeyError(f"no sensor mapping for robot {spec.name!r}; valid: {sorted(SENSOR_TOPICS)}")
