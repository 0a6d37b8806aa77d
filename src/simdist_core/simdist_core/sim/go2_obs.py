"""Go2 observations from raw sensor readings, shared by the sim env and the real-robot encoder node.

``proprio_from_sensors`` is THE proprio computation: the sim env calls it on ``Go2Env.sensors()`` and
the ROS encoder node calls it on the real robot's LowState / state estimate, so both produce the same
(35,) vector (layout ``robots.GO2.proprio_fields``)::

    [0:3]   base_lin_vel       base frame, m/s (state estimator / sim ground truth)
    [3:6]   base_ang_vel       IMU gyro, base frame, rad/s
    [6:9]   projected_gravity  unit gravity direction in the base frame (0, 0, -1 when level)
    [9:21]  joint_pos          joint angles minus DEFAULT_POSE_RAD, MuJoCo order, rad
    [21:33] joint_vel          MuJoCo order, rad/s
    [33:35] gait_phase         (cos, sin) of the gait clock ``gait_phase_rad``

Gait clock: ``phase_rad = 2 pi * (t_s / gait_period_s mod 1)`` with ``t_s`` the time since the episode
(or the controller) started (default period 0.3 s). The expert trots on the same clock: FL+RR in stance
while phase/2pi is in [0, duty), FR+RL while (phase/2pi + 0.5) mod 1 is in [0, duty) (``go2_rewards.
stance_schedule``, duty 0.6). The planner and encoder reproduce it from their own start time.

Height map (``height_map_from_heights``): a (21, 15) grid in the yaw-aligned base frame with 0.1 m
spacing; row i is x = 0.5 + (i - 10) * 0.1 m ahead of the base (-0.5 .. 1.5 m, row 0 behind), column j
is y = (j - 7) * 0.1 m to the left (-0.7 .. 0.7 m). Each value is terrain height minus base height, in
metres (about -0.27 when standing on flat ground).
"""

from __future__ import annotations

import math

import numpy as np

from simdist_core.robots import GO2
from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD

HEIGHT_MAP_CENTER_AHEAD_M = 0.5

SENSOR_KEYS: tuple[str, ...] = (
    "joint_pos",
    "joint_vel",
    "joint_torque",
    "imu_quat",
    "imu_gyro",
    "imu_acc",
    "base_lin_vel",
    "base_pos",
    "foot_contact_forces",
    "height_map",
)
"""Keys of ``Go2Env.sensors()``."""


def quat_to_rotmat(quat_wxyz: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3), body to world, of a unit quaternion (w, x, y, z)."""
    w, x, y, z = quat_wxyz
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def yaw_from_quat(quat_wxyz: np.ndarray) -> float:
    """Heading angle (rad) of the body x axis in the world xy plane."""
    w, x, y, z = quat_wxyz
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def wrap_rad(angle: float) -> float:
    """An angle in [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def gait_phase_rad(time_s: float, gait_period_s: float) -> float:
    """The gait clock: phase in [0, 2 pi) at ``time_s`` seconds after start."""
    return 2 * math.pi * ((time_s / gait_period_s) % 1.0)


def proprio_from_sensors(
    sensors: dict[str, np.ndarray], command: np.ndarray, phase_rad: float, *, check: bool = True
) -> np.ndarray:
    """The (35,) float32 proprio vector (layout in the module docstring).

    Args:
        sensors: at least ``base_lin_vel`` (3,), ``imu_gyro`` (3,), ``imu_quat`` (4,) wxyz,
            ``joint_pos`` (12,) absolute, ``joint_vel`` (12,), MuJoCo order.
        command: (3,) task command (vx, vy, yaw rate); not part of the Go2 proprio, checked only so
            callers pass the same arguments for every robot.
        phase_rad: gait clock phase (``gait_phase_rad``).
        check: validate keys, shapes and finiteness (the sim env skips it for speed; external callers
            such as the encoder node keep it on).

    Raises:
        ValueError: a missing key, a wrong shape or a non-finite value (named in the message).
    """
    if check:
        _check_sensors(sensors, command, phase_rad)
    quat = np.asarray(sensors["imu_quat"], dtype=np.float64)
    quat = quat / max(float(np.linalg.norm(quat)), 1e-9)
    gravity_body = quat_to_rotmat(quat).T @ np.array([0.0, 0.0, -1.0])
    out = np.concatenate(
        [
            sensors["base_lin_vel"],
            sensors["imu_gyro"],
            gravity_body,
            np.asarray(sensors["joint_pos"]) - DEFAULT_POSE_RAD,
            sensors["joint_vel"],
            [math.cos(phase_rad), math.sin(phase_rad)],
        ]
    )
    return out.astype(np.float32)


def _check_sensors(sensors: dict[str, np.ndarray], command: np.ndarray, phase_rad: float) -> None:
    expected = {"base_lin_vel": 3, "imu_gyro": 3, "imu_quat": 4, "joint_pos": 12, "joint_vel": 12}
    for key, width in expected.items():
        if key not in sensors:
            raise ValueError(f"sensors lacks {key!r}; got keys {sorted(sensors)}")
        value = np.asarray(sensors[key])
        if value.shape != (width,):
            raise ValueError(f"sensors[{key!r}] must have shape ({width},), got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"sensors[{key!r}] is not finite: {value}")
    if np.asarray(command).shape != (GO2.command_dim,):
        raise ValueError(f"command must have shape ({GO2.command_dim},), got {np.asarray(command).shape}")
    if not math.isfinite(phase_rad):
        raise ValueError(f"phase_rad must be finite, got {phase_rad}")


def _height_map_grid() -> tuple[np.ndarray, np.ndarray]:
    rows, cols = GO2.height_map_shape  # type: ignore[misc]
    res = GO2.height_map_resolution_m
    ahead = HEIGHT_MAP_CENTER_AHEAD_M + (np.arange(rows) - (rows - 1) / 2) * res  # (rows,)
    left = (np.arange(cols) - (cols - 1) / 2) * res  # (cols,)
    return np.meshgrid(ahead, left, indexing="ij")  # 2 x (rows, cols)


_GRID_AHEAD_M, _GRID_LEFT_M = _height_map_grid()


def height_map_points(base_xy_m: np.ndarray, yaw_rad: float) -> tuple[np.ndarray, np.ndarray]:
    """World (x, y) of the height-map cells, each (21, 15), for a base at ``base_xy_m`` with heading ``yaw_rad``."""
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    return (
        base_xy_m[0] + c * _GRID_AHEAD_M - s * _GRID_LEFT_M,
        base_xy_m[1] + s * _GRID_AHEAD_M + c * _GRID_LEFT_M,
    )
