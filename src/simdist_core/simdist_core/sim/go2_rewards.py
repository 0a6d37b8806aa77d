"""Named reward terms, the gait schedule and privileged value features of the Go2 tasks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np

from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD, NOMINAL_STANDING_HEIGHT_M

if TYPE_CHECKING:
    from simdist_core.sim.go2_config import Go2EnvConfig

PAIR_OFFSET: np.ndarray = np.array([0.0, 0.5, 0.5, 0.0])
"""Phase offset (fraction of a period) of each leg, MuJoCo order: a diagonal trot (FL+RR, FR+RL)."""

VALUE_FEATURE_NAMES: tuple[str, ...] = (
    ("height_above_terrain_m",)
    + tuple(f"base_lin_vel_body_{a}" for a in "xyz")
    + tuple(f"base_ang_vel_body_{a}" for a in "xyz")
    + tuple(f"projected_gravity_{a}" for a in "xyz")
    + tuple(f"joint_pos_rel_{i}" for i in range(12))
    + tuple(f"joint_vel_{i}" for i in range(12))
    + tuple(f"foot_contact_{i}" for i in range(4))
    + ("command_vx", "command_vy", "command_yaw_rate", "phase_cos", "phase_sin")
    + ("friction", "slope_rad", "is_foam", "kp_scale", "base_mass_offset_kg", "time_fraction")
)
"""Layout of ``privileged_state()["value_features"]`` (49 floats)."""


def stance_schedule(phase_rad: float, duty: float) -> np.ndarray:
    """Which legs (4,) bool the gait clock wants in stance: leg phase (phase/2pi + offset) mod 1 < duty."""
    leg_phase = (phase_rad / (2 * math.pi) + PAIR_OFFSET) % 1.0
    return leg_phase < duty


def reward_terms(
    state: dict[str, np.ndarray], action: np.ndarray, prev_action: np.ndarray, fell: bool, config: Go2EnvConfig
) -> dict[str, float]:
    """Weighted named reward terms of one control step (the env sums them)."""
    w = config.rewards
    v = state["base_lin_vel_body"]
    omega = state["base_ang_vel_body"]
    cmd = state["command"]
    gravity = state["rot"].T @ np.array([0.0, 0.0, -1.0])
    # Orientation is judged relative to the slope the robot is meant to follow (pitched with the terrain).
    slope_gravity_x = math.sin(float(state["slope_rad"])) * state["rot"][0, 0]
    sigma2 = w.tracking_sigma_m_s**2
    raw = {
        "tracking_lin_vel": math.exp(-float(np.sum((v[:2] - cmd[:2]) ** 2)) / sigma2),
        "tracking_ang_vel": math.exp(-float((omega[2] - cmd[2]) ** 2) / sigma2),
        "lin_vel_z": float(v[2] ** 2),
        "ang_vel_xy": float(np.sum(omega[:2] ** 2)),
        "orientation": float((gravity[0] - slope_gravity_x) ** 2 + gravity[1] ** 2),
        "base_height": float((float(state["height_above_terrain_m"]) - NOMINAL_STANDING_HEIGHT_M) ** 2),
        "torques": float(np.sum(state["joint_torque"] ** 2)),
        "action_rate": float(np.sum((action - prev_action) ** 2)),
        "gait": float(np.mean(state["foot_contacts"] == state["desired_stance"])),
        "fall": 1.0 if fell else 0.0,
    }
    return {name: getattr(w, name) * value for name, value in raw.items()}


def value_features(
    core: dict[str, np.ndarray],
    phase_rad: float,
    domain: dict[str, float],
    terrain_params: dict[str, float],
    data: mujoco.MjData,
    scene: Any,  # go2_scene.Go2Scene (typed loosely to avoid an import cycle)
    time_fraction: float,
) -> np.ndarray:
    """Fixed-width (49,) float32 privileged features for fitting a value function (``VALUE_FEATURE_NAMES``)."""
    gravity = core["rot"].T @ np.array([0.0, 0.0, -1.0])
    out = np.concatenate(
        [
            [float(core["height_above_terrain_m"])],
            core["base_lin_vel_body"],
            core["base_ang_vel_body"],
            gravity,
            data.qpos[scene.qpos_adr] - DEFAULT_POSE_RAD,
            data.qvel[scene.dof_adr],
            core["foot_contacts"].astype(np.float64),
            core["command"],
            [math.cos(phase_rad), math.sin(phase_rad)],
            [
                domain.get("friction", 0.0),
                float(core["slope_rad"]),
                terrain_params["terrain_is_foam"],
                domain.get("kp_scale", 1.0),
                domain.get("base_mass_offset_kg", 0.0),
                time_fraction,
            ],
        ]
    )
    return out.astype(np.float32)
