"""Analytic leg kinematics of the Go2 (base frame), vectorised over the four legs."""

from __future__ import annotations

import numpy as np

from simdist_core.sim.go2_constants import (
    FOOT_IN_CALF_M,
    HIP_OFFSETS_M,
    LEG_SIDE,
    THIGH_LENGTH_M,
    THIGH_Y_OFFSET_M,
)

_CX, _CZ = FOOT_IN_CALF_M
_L2 = float(np.hypot(_CX, _CZ))
_ALPHA = float(np.arctan2(_CX, _CZ))
_MAX_REACH_M = THIGH_LENGTH_M + _L2 - 1e-4
_MIN_REACH_M = 0.08


def foot_ik(feet_base_m: np.ndarray) -> np.ndarray:
    """Joint angles (4, 3) (hip, thigh, calf) placing each foot-sphere centre at ``feet_base_m`` (4, 3).

    Unreachable targets are pulled onto the reachable shell, so the result is always finite.
    """
    p = feet_base_m - HIP_OFFSETS_M  # (4, 3) relative to the abduction joints
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    d = THIGH_Y_OFFSET_M * LEG_SIDE
    r2 = np.maximum(y * y + z * z, d * d + _MIN_REACH_M**2)
    z_plane = -np.sqrt(r2 - d * d)  # foot height in the leg plane (below the thigh joint)
    q0 = np.arctan2(z, y) - np.arctan2(z_plane, d)
    reach = np.clip(np.hypot(x, z_plane), _MIN_REACH_M, _MAX_REACH_M)
    scale = reach / np.maximum(np.hypot(x, z_plane), 1e-9)
    xs, zs = x * scale, z_plane * scale
    u_z = (THIGH_LENGTH_M**2 + _L2**2 - reach**2) / (2 * THIGH_LENGTH_M)
    q2 = -_ALPHA - 2 * np.pi + np.arccos(np.clip(u_z / _L2, -1.0, 1.0))
    u_x = _CX * np.cos(q2) + _CZ * np.sin(q2)
    v_x, v_z = u_x, -THIGH_LENGTH_M + u_z
    q1 = np.arctan2(xs, zs) - np.arctan2(v_x, v_z)
    q1 = (q1 + np.pi) % (2 * np.pi) - np.pi
    q0 = (q0 + np.pi) % (2 * np.pi) - np.pi
    return np.stack([q0, q1, q2], axis=1)


def foot_fk(q: np.ndarray) -> np.ndarray:
    """Foot-sphere centres (4, 3) in the base frame for joint angles (4, 3)."""
    q0, q1, q2 = q[:, 0], q[:, 1], q[:, 2]
    u_x = _CX * np.cos(q2) + _CZ * np.sin(q2)
    u_z = -_CX * np.sin(q2) + _CZ * np.cos(q2)
    v_x, v_z = u_x, -THIGH_LENGTH_M + u_z
    x = v_x * np.cos(q1) + v_z * np.sin(q1)
    z_plane = -v_x * np.sin(q1) + v_z * np.cos(q1)
    d = THIGH_Y_OFFSET_M * LEG_SIDE
    y = d * np.cos(q0) - z_plane * np.sin(q0)
    z = d * np.sin(q0) + z_plane * np.cos(q0)
    return np.stack([x, y, z], axis=1) + HIP_OFFSETS_M
