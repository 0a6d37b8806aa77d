"""What the model's probe head predicts, as points in space: for RViz markers and for videos.

The probe head decodes a latent into something physical (``RobotSpec.probe``): the Go2's base velocity
in its yaw-aligned frame, or the UR5e's tool-tip position in the robot base frame (= the world frame of
the simulated arm). A plan's predicted latents thus become a predicted path that can be drawn next to
the one the robot really took.
"""

from __future__ import annotations

import math

import numpy as np

PROBE_KINDS = ("base_velocity", "tcp_position")


def probe_to_positions(probe: np.ndarray, kind: str, dt_s: float) -> np.ndarray:
    """Turn the probe head's output ``(H, 3)`` into points to draw ``(H + 1, 3)``.

    ``"base_velocity"`` (Go2): yaw-frame base velocity integrated over the horizon, starting at the
    origin of the yaw-aligned base frame. ``"tcp_position"`` (UR5e): positions as decoded, the first one
    repeated so both kinds return H + 1 points.

    Raises:
        ValueError: ``probe`` is not (H, 3), or ``kind`` is not one of ``PROBE_KINDS``.
    """
    probe = np.asarray(probe, np.float64)
    if probe.ndim != 2 or probe.shape[1] != 3:
        raise ValueError(f"probe must be (H, 3), got {probe.shape}")
    if kind == "base_velocity":
        return np.concatenate([np.zeros((1, 3)), np.cumsum(probe * dt_s, axis=0)])  # (H + 1, 3)
    if kind == "tcp_position":
        return np.concatenate([probe[:1], probe])
    raise ValueError(f"unknown probe kind {kind!r}; valid: {list(PROBE_KINDS)}")


def probe_to_world(probe: np.ndarray, kind: str, dt_s: float, origin_m: np.ndarray, yaw_rad: float) -> np.ndarray:
    """The predicted path ``(H + 1, 3)`` in the world frame.

    Args:
        probe: (H, 3) decoded probe of the plan's predicted latents.
        kind: ``RobotSpec.probe``.
        dt_s: control period (one predicted step).
        origin_m: (3,) where the path starts: the Go2's base position when it planned (ignored for the
            UR5e, whose probe is already a position in the world frame).
        yaw_rad: the Go2 base's heading when it planned (ignored for the UR5e).
    """
    local = probe_to_positions(probe, kind, dt_s)  # (H + 1, 3)
    if kind == "tcp_position":
        return local
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return np.asarray(origin_m, np.float64)[None] + local @ rot.T
