"""Leg-kinematic odometry for the Go2 in low-level mode (no sport-mode state estimator runs then).

Used by the hardware driver (``go2_bringup``) for its ``odom``, and by the simulator to emulate it
(``Go2EnvConfig.base_velocity_source``), so both run the same estimator.

The encoder needs the base linear velocity in the base frame (``odom`` twist, as the simulator gives it).
A foot in stance does not move in the world, so with the foot position ``p`` and its velocity ``J dq``
relative to the base (both in the base frame, from the MuJoCo Go2 model at the measured joint angles)::

    0 = v_base + omega x p + J dq      =>      v_base = -(J dq + omega x p)

Each stance foot (force sensor above ``contact_threshold``) gives one estimate; their mean is low-pass
filtered. With no foot in stance the last estimate decays (a jump has no kinematic velocity). Position is
the integral of the velocity rotated by the IMU orientation (drifts, as all leg odometry does); height is
the mean stance-foot depth below the base.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from simdist_core.sim import go2_constants as gc
from simdist_core.sim.assets import go2_xml_path
from simdist_core.sim.go2_obs import quat_to_rotmat


@dataclass(frozen=True, kw_only=True)
class EstimatorConfig:
    """Filtering of the leg odometry."""

    contact_threshold: float = 20.0
    """Foot force sensor reading (raw units) above which a foot counts as in stance."""
    filter_alpha: float = 0.2
    """Weight of a new velocity sample in the exponential filter (1 = no filtering)."""
    decay_without_contact: float = 0.98
    """Per-update factor on the velocity while no foot is in stance."""

    def __post_init__(self) -> None:
        if not 0.0 < self.filter_alpha <= 1.0:
            raise ValueError(f"filter_alpha must be in (0, 1], got {self.filter_alpha=}")
        if not 0.0 <= self.decay_without_contact <= 1.0:
            raise ValueError(f"decay_without_contact must be in [0, 1], got {self.decay_without_contact=}")


class LegKinematics:
    """Foot positions and Jacobians relative to the base (base frame), from the Go2 MJCF."""

    def __init__(self) -> None:
        self.model = mujoco.MjModel.from_xml_path(str(go2_xml_path()))
        self.data = mujoco.MjData(self.model)
        self._qadr = np.array([self.model.joint(n).qposadr[0] for n in gc.JOINT_NAMES])
        self._dof = np.array([self.model.joint(n).dofadr[0] for n in gc.JOINT_NAMES])
        self._feet = [self.model.geom(n).id for n in gc.FOOT_GEOM_NAMES]
        self._jacp = np.zeros((3, self.model.nv))
        self.data.qpos[:7] = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]  # base at the origin: world frame = base frame

    def feet(self, q_rad: np.ndarray, dq_rad_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Foot positions (4, 3) and joint-induced foot velocities (4, 3) in the base frame, legs FL, FR, RL, RR."""
        self.data.qpos[self._qadr] = q_rad
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        pos = np.zeros((4, 3))
        vel = np.zeros((4, 3))
        for leg, geom in enumerate(self._feet):
            pos[leg] = self.data.geom_xpos[geom]
            mujoco.mj_jacGeom(self.model, self.data, self._jacp, None, geom)
            vel[leg] = self._jacp[:, self._dof] @ dq_rad_s
        return pos, vel


class LegOdometry:
    """Base velocity (base frame), position and height from joint state, IMU and foot contacts."""

    def __init__(self, config: EstimatorConfig | None = None) -> None:
        self.config = config if config is not None else EstimatorConfig()
        self.kin = LegKinematics()
        self.lin_vel_m_s = np.zeros(3)
        """Filtered base linear velocity in the base frame."""
        self.pos_m = np.zeros(3)
        """Integrated base position in the odometry frame (z = kinematic height above the stance feet)."""
        self.stance = np.zeros(4, dtype=bool)

    def reset(self) -> None:
        """Forget the estimate (a new episode starts at rest at the origin)."""
        self.lin_vel_m_s = np.zeros(3)
        self.pos_m = np.zeros(3)
        self.stance = np.zeros(4, dtype=bool)

    def update(self, q_rad: np.ndarray, dq_rad_s: np.ndarray, gyro_rad_s: np.ndarray, quat_wxyz: np.ndarray,
               foot_force: np.ndarray, dt_s: float) -> np.ndarray:
        """Fold in one state sample; returns the filtered base velocity (3,) in the base frame.

        Args:
            q_rad: (12,) joint positions, MuJoCo order.
            dq_rad_s: (12,) joint velocities.
            gyro_rad_s: (3,) base angular velocity in the base frame.
            quat_wxyz: (4,) base orientation (IMU).
            foot_force: (4,) foot force readings, legs FL, FR, RL, RR.
            dt_s: time since the previous update (for the position integral).
        """
        pos, vel = self.kin.feet(q_rad, dq_rad_s)
        rot = quat_to_rotmat(np.asarray(quat_wxyz, dtype=np.float64))  # base -> odometry frame
        self.stance = np.asarray(foot_force) > self.config.contact_threshold
        if np.any(self.stance):
            samples = stance_velocities(pos, vel, gyro_rad_s)[self.stance]  # (n_stance, 3)
            a = self.config.filter_alpha
            self.lin_vel_m_s = (1.0 - a) * self.lin_vel_m_s + a * samples.mean(axis=0)
        else:
            self.lin_vel_m_s = self.lin_vel_m_s * self.config.decay_without_contact
        integrate_pose(self.pos_m, rot, self.lin_vel_m_s, pos, self.stance, dt_s)
        return self.lin_vel_m_s


def stance_velocities(foot_pos_m: np.ndarray, foot_vel_m_s: np.ndarray, gyro_rad_s: np.ndarray) -> np.ndarray:
    """Base velocity (base frame) each foot implies if it stands still in the world, (4, 3)."""
    return -(foot_vel_m_s + np.cross(gyro_rad_s, foot_pos_m))


def integrate_pose(pos_m: np.ndarray, rot: np.ndarray, base_vel_m_s: np.ndarray, foot_pos_m: np.ndarray,
                   stance: np.ndarray, dt_s: float) -> None:
    """Advance the odometry position in place: xy integrates the rotated velocity, z is the stance feet's depth."""
    pos_m[:2] += (rot @ base_vel_m_s)[:2] * dt_s
    if np.any(stance):
        pos_m[2] = -float(np.mean((foot_pos_m[stance] @ rot.T)[:, 2]))  # vertical depth of the stance feet
