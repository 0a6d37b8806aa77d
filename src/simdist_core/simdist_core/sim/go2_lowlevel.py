"""The one fixed low-level controller of the Go2: joint PD on normalised joint targets.

Expert, planner, data and real driver all act through this controller, so the world model
learns the effect of exactly what is recorded: a normalised action ``a`` in [-1, 1]^12 (MuJoCo
order) becomes a joint target and a PD torque, run at the physics rate (500 Hz)::

    q_target = DEFAULT_POSE_RAD + action_scale_rad * clip(a, -1, 1)
    tau      = clip(kp * (q_target - q) - kd * qd, -TORQUE_LIMIT_NM, +TORQUE_LIMIT_NM)

This is what the real Go2's motor PD loop computes from ``LowCmd`` (q = q_target, dq = 0, kp, kd,
tau = 0), so the real driver mirrors it by sending ``targets(action)`` with ``config.kp_nm_per_rad``
and ``config.kd_nms_per_rad`` (see ``Go2LowLevel.torque`` for the reference computation).

Sim-only term: the Menagerie MJCF models a passive joint damping of 2 N m s/rad (4x the reference
Kd) that halves walking speed (measured in this simulator). The sim PD adds ``+damping_comp * qd`` to
cancel it, so the simulated plant + PD behaves like the real PD on a joint without that extra
damping. The real driver does not send this term.

Speed: the PD runs inside ``mj_step`` as MuJoCo actuator dynamics (gain ``kp``, affine bias
``-kp q - (kd - damping_comp) qd``, torque clamp by ``forcerange``), so no Python runs per physics
step: one ``mj_step(model, data, nstep=10)`` per control step.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from simdist_core.sim.go2_constants import (
    ACTUATOR_NAMES,
    DEFAULT_POSE_RAD,
    MODEL_JOINT_DAMPING_NMS_PER_RAD,
    TORQUE_LIMIT_NM,
)


@dataclass(frozen=True, kw_only=True)
class LowLevelConfig:
    """Joint PD on normalised joint targets."""

    kp_nm_per_rad: float = 25.0
    """Proportional gain (the reference Go2 Kp)."""
    kd_nms_per_rad: float = 0.5
    """Derivative gain (the reference Go2 Kd)."""
    action_scale_rad: float = 1.0
    """Joint target offset from the default pose at |a| = 1. 1 rad covers the expert's trot on flat ground and
    10 deg slopes (thigh swing, calf flexion and gravity offsets ``tau/kp`` up to ~0.6 rad) without clipping."""
    damping_comp_nms_per_rad: float = MODEL_JOINT_DAMPING_NMS_PER_RAD
    """Sim-only cancellation of the MJCF's passive joint damping (0 disables it)."""

    def __post_init__(self) -> None:
        if not self.kp_nm_per_rad > 0:
            raise ValueError(f"kp_nm_per_rad must be > 0, got {self.kp_nm_per_rad=}")
        if not self.kd_nms_per_rad >= 0:
            raise ValueError(f"kd_nms_per_rad must be >= 0, got {self.kd_nms_per_rad=}")
        if not 0 < self.action_scale_rad <= 2.0:
            raise ValueError(f"action_scale_rad must be in (0, 2], got {self.action_scale_rad=}")
        if not 0 <= self.damping_comp_nms_per_rad <= MODEL_JOINT_DAMPING_NMS_PER_RAD:
            raise ValueError(
                f"damping_comp_nms_per_rad must be in [0, {MODEL_JOINT_DAMPING_NMS_PER_RAD}] (it cancels the model's "
                f"passive damping, never more), got {self.damping_comp_nms_per_rad=}"
            )


class Go2LowLevel:
    """Maps normalised actions to joint targets and implements the PD in MuJoCo actuators."""

    def __init__(self, config: LowLevelConfig | None = None) -> None:
        self.config = config if config is not None else LowLevelConfig()

    def targets(self, action: np.ndarray) -> np.ndarray:
        """Joint targets (12,) in radians for a normalised action (12,) (clipped to [-1, 1])."""
        return DEFAULT_POSE_RAD + self.config.action_scale_rad * np.clip(action, -1.0, 1.0)

    def action_from_targets(self, q_target_rad: np.ndarray) -> np.ndarray:
        """Normalised action (12,) float32 that commands ``q_target_rad`` (clipped to [-1, 1])."""
        action = (np.asarray(q_target_rad) - DEFAULT_POSE_RAD) / self.config.action_scale_rad
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def torque(self, q_target_rad: np.ndarray, q_rad: np.ndarray, qd_rad_s: np.ndarray) -> np.ndarray:
        """Reference PD torque (12,) of the real motor loop (no sim-only damping term), clamped."""
        c = self.config
        tau = c.kp_nm_per_rad * (q_target_rad - q_rad) - c.kd_nms_per_rad * qd_rad_s
        return np.clip(tau, -TORQUE_LIMIT_NM, TORQUE_LIMIT_NM)

    def configure_spec(self, spec: mujoco.MjSpec) -> None:
        """Turn the MJCF's torque motors into native PD actuators whose control is the joint target."""
        for name in ACTUATOR_NAMES:
            act = spec.actuator(name)
            index = ACTUATOR_NAMES.index(name)
            act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
            act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = np.array([-TORQUE_LIMIT_NM[index], TORQUE_LIMIT_NM[index]])
        self.set_gains_in_spec(spec)

    def set_gains_in_spec(self, spec: mujoco.MjSpec) -> None:
        """Write nominal gains into the spec's actuators."""
        for name in ACTUATOR_NAMES:
            act = spec.actuator(name)
            gain, bias = self._gain_bias(1.0, 1.0)
            act.gainprm[:3] = gain
            act.biasprm[:3] = bias

    def apply_gains(self, model: mujoco.MjModel, actuator_ids: np.ndarray, kp_scale: float, kd_scale: float) -> None:
        """Set (domain-randomised) gains in a compiled model: kp *= kp_scale, kd *= kd_scale."""
        gain, bias = self._gain_bias(kp_scale, kd_scale)
        model.actuator_gainprm[actuator_ids, :3] = gain
        model.actuator_biasprm[actuator_ids, :3] = bias

    def _gain_bias(self, kp_scale: float, kd_scale: float) -> tuple[np.ndarray, np.ndarray]:
        c = self.config
        kp = c.kp_nm_per_rad * kp_scale
        kd = c.kd_nms_per_rad * kd_scale
        return np.array([kp, 0.0, 0.0]), np.array([0.0, -kp, -(kd - c.damping_comp_nms_per_rad)])
