"""Go2 base velocity from the IMU's acceleration fused with leg kinematics: a linear Kalman filter.

Why: leg odometry alone (``go2_leg_odometry.LegOdometry``) reads a sinking or sliding stance foot as base
motion, and the low-pass filter that calms it lags the base. The accelerometer sees neither; it drifts instead.
Legged robots fuse the two (MIT Cheetah 3's linear Kalman filter, Bledt et al. 2018; slip rejection by the
innovation, Bloesch et al. 2013). This is that filter, small enough to read in one sitting:

* state: the base velocity in the odometry (world) frame ``v`` and the accelerometer's bias ``b`` (base frame);
* predict, once a control period, with the mean world-frame specific force ``f`` of that period's IMU samples
  (``SpecificForceMean``: the driver adds each 500 Hz LowState): ``v += (f + g - R b) dt``; ``b`` walks;
* correct with each stance foot's kinematic velocity (``R (-(J dq + w x p))``, as the leg odometry), one foot at
  a time; a foot whose innovation lies beyond the gate (chi-squared, 3 degrees of freedom) is slipping or sinking:
  it is rejected and counted, and the IMU carries the estimate through.

The orientation is the IMU's own (the Go2's attitude estimate), taken as exact: its tilt error shows up as an
acceleration bias, which the filter estimates. Without IMU samples in a period (``None``) the velocity is held
and its uncertainty grows. Units: m, s, rad; the foot force in the sensor's raw units, as ``LegOdometry``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from simdist_core.sim.go2_leg_odometry import LegKinematics, integrate_pose, stance_velocities
from simdist_core.sim.go2_obs import quat_to_rotmat

GRAVITY_M_S2 = np.array([0.0, 0.0, -9.81])
"""Gravity in the odometry frame (z up, REP 103); an accelerometer at rest reads ``-g`` (specific force)."""


@dataclass(frozen=True, kw_only=True)
class FusionConfig:
    """Noise model of the filter (standard deviations), fixed from the sensors' nature, not tuned on a task."""

    contact_threshold: float = 20.0
    """Foot force reading above which a foot counts as in stance (as ``EstimatorConfig``)."""
    accel_std_m_s2: float = 2.5
    """Unmodelled acceleration over a period (trotting vibration, accelerometer noise): velocity process noise."""
    accel_std_without_imu_m_s2: float = 10.0
    """The same for a period without IMU samples (the velocity is held): the body's own acceleration, a trot's."""
    bias_walk_m_s2: float = 0.01
    """Random walk of the accelerometer bias per square-root second."""
    initial_bias_std_m_s2: float = 0.2
    """Prior on the bias at reset (a 1 deg tilt error alone is 0.17 m/s^2)."""
    leg_velocity_std_m_s: float = 0.1
    """Noise of one stance foot's kinematic velocity (joint velocity noise, foot rolling)."""
    slip_gate_chi2: float = 11.34
    """Reject a foot whose innovation's squared Mahalanobis distance exceeds this (chi-squared, 3 dof, 99 %)."""
    plausible_gravity_range_m_s2: tuple[float, float] = (6.0, 14.0)
    """The accelerometer's specific force, averaged over ~0.4 s, must lie in this range (a walking robot's is near
    g); outside it (wrong units, a dead or saturated sensor) the IMU is not used and ``implausible_imu_periods``
    counts it, so the estimate follows the legs alone instead of integrating a wrong reading."""

    def __post_init__(self) -> None:
        for name in ("accel_std_m_s2", "accel_std_without_imu_m_s2", "bias_walk_m_s2", "initial_bias_std_m_s2",
                     "leg_velocity_std_m_s", "slip_gate_chi2"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")


class SpecificForceMean:
    """Mean world-frame specific force (``R a``) of the IMU samples since the last ``take``; thread-safe.

    The driver adds every LowState (500 Hz, its SDK thread) and the estimator takes the mean once a period:
    the mean times the period is the velocity change the accelerometer saw, which one sample is not.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sum = np.zeros(3)
        self._count = 0
        self.samples = 0
        """Samples added since construction (corrupt ones not counted)."""

    def __getstate__(self) -> dict:
        """Copyable (data generation deep-copies envs to branch rollouts): everything but the lock."""
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def add(self, quat_wxyz: np.ndarray, accel_m_s2: np.ndarray) -> None:
        """One IMU sample: orientation (base -> odometry frame) and accelerometer reading (base frame)."""
        world = quat_to_rotmat(np.asarray(quat_wxyz, dtype=np.float64)) @ np.asarray(accel_m_s2, dtype=np.float64)
        if not np.all(np.isfinite(world)):
            return  # a corrupt sample is dropped, not averaged in
        with self._lock:
            self._sum += world
            self._count += 1
            self.samples += 1

    def take(self) -> np.ndarray | None:
        """The mean since the last call (None: no sample), and start over."""
        with self._lock:
            mean = self._sum / self._count if self._count else None
            self._sum = np.zeros(3)
            self._count = 0
        return mean


class ImuLegFusion:
    """Base velocity (base frame), position and height; a drop-in for ``LegOdometry`` with an IMU input."""

    def __init__(self, config: FusionConfig | None = None) -> None:
        self.config = config if config is not None else FusionConfig()
        self.kin = LegKinematics()
        self.rejected_feet = 0
        """Stance-foot measurements rejected by the slip gate, since construction."""
        self.accepted_feet = 0
        self.implausible_imu_periods = 0
        """Control periods whose IMU mean was set aside as implausible, since construction."""
        self._force_norm_m_s2 = float(np.linalg.norm(GRAVITY_M_S2))  # running mean of |specific force|
        self.reset()

    def reset(self) -> None:
        """Forget the estimate (a new episode starts at rest at the origin); the bias prior starts over too."""
        c = self.config
        self.x = np.zeros(6)  # [v (world), b (base frame)]
        self.cov = np.diag([0.01] * 3 + [c.initial_bias_std_m_s2**2] * 3)
        self.lin_vel_m_s = np.zeros(3)
        """Base linear velocity in the base frame."""
        self.pos_m = np.zeros(3)
        """Integrated base position in the odometry frame (z = kinematic height above the stance feet)."""
        self.stance = np.zeros(4, dtype=bool)

    def update(self, q_rad: np.ndarray, dq_rad_s: np.ndarray, gyro_rad_s: np.ndarray, quat_wxyz: np.ndarray,
               foot_force: np.ndarray, dt_s: float, specific_force_world_m_s2: np.ndarray | None) -> np.ndarray:
        """Predict over ``dt_s`` with the period's mean specific force, correct with the stance feet; base-frame v.

        Args as ``LegOdometry.update``, plus ``specific_force_world_m_s2`` (3,): ``SpecificForceMean.take()``.
        """
        rot = quat_to_rotmat(np.asarray(quat_wxyz, dtype=np.float64))
        self._predict(rot, dt_s, self._plausible(specific_force_world_m_s2))
        pos, vel = self.kin.feet(q_rad, dq_rad_s)
        self.stance = np.asarray(foot_force) > self.config.contact_threshold
        for sample in stance_velocities(pos, vel, gyro_rad_s)[self.stance]:
            self._correct(rot @ sample)
        self.lin_vel_m_s = rot.T @ self.x[:3]
        integrate_pose(self.pos_m, rot, self.lin_vel_m_s, pos, self.stance, dt_s)
        return self.lin_vel_m_s

    def _plausible(self, force: np.ndarray | None) -> np.ndarray | None:
        """The period's specific force, or None while its running magnitude is not a gravity's."""
        if force is None:
            return None
        self._force_norm_m_s2 += 0.05 * (float(np.linalg.norm(force)) - self._force_norm_m_s2)
        low, high = self.config.plausible_gravity_range_m_s2
        if low <= self._force_norm_m_s2 <= high:
            return force
        self.implausible_imu_periods += 1
        return None

    def _predict(self, rot: np.ndarray, dt_s: float, force: np.ndarray | None) -> None:
        c = self.config
        transition = np.eye(6)
        if force is not None:
            transition[:3, 3:] = -rot * dt_s
            self.x[:3] += (force + GRAVITY_M_S2 - rot @ self.x[3:]) * dt_s
        accel_std = c.accel_std_m_s2 if force is not None else c.accel_std_without_imu_m_s2
        q_v = (accel_std * dt_s) ** 2
        process_noise = np.diag([q_v] * 3 + [c.bias_walk_m_s2**2 * dt_s] * 3)
        self.cov = transition @ self.cov @ transition.T + process_noise

    def _correct(self, z_world: np.ndarray) -> None:
        """One foot's velocity measurement of ``v`` (H = [I 0]), unless the gate calls it a slip."""
        innovation = z_world - self.x[:3]
        innov_cov = self.cov[:3, :3] + np.eye(3) * self.config.leg_velocity_std_m_s**2
        innov_cov_inv = np.linalg.inv(innov_cov)
        if float(innovation @ innov_cov_inv @ innovation) > self.config.slip_gate_chi2:
            self.rejected_feet += 1
            return
        self.accepted_feet += 1
        gain = self.cov[:, :3] @ innov_cov_inv  # (6, 3)
        self.x += gain @ innovation
        self.cov = (np.eye(6) - gain @ np.eye(3, 6)) @ self.cov
        self.cov = 0.5 * (self.cov + self.cov.T)  # keep it symmetric against round-off
