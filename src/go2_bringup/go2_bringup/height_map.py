"""Robot-centred height map from LiDAR points (pure numpy, no ROS), in the simulator's convention.

The grid is the one ``simdist_core.sim.go2_obs`` defines (and the sim env fills by ray casts): (21, 15)
cells, 0.1 m apart, in the yaw-aligned base frame, centred 0.5 m ahead of the base; row i is
x = 0.5 + (i - 10) * 0.1 m ahead, column j is y = (j - 7) * 0.1 m to the left. Each value is terrain
height minus base height (about -0.27 m standing on flat ground).

Points are accumulated in the odometry (world) frame over a short window, because one L1 scan is sparse;
each cell takes the mean height of the points that fall in it (nearest-cell binning), and cells without
points take the value of the nearest cell that has some. With no points at all there is no map
(``None``): the caller must treat the height map as stale rather than invent flat ground.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from simdist_core.robots import GO2
from simdist_core.sim.go2_obs import HEIGHT_MAP_CENTER_AHEAD_M, quat_to_rotmat, yaw_from_quat


@dataclass(frozen=True, kw_only=True)
class HeightMapConfig:
    """Grid and filtering of the LiDAR height map."""

    rows: int = GO2.height_map_shape[0]
    """Cells along x (ahead)."""
    cols: int = GO2.height_map_shape[1]
    """Cells along y (left)."""
    resolution_m: float = GO2.height_map_resolution_m
    """Cell size."""
    center_ahead_m: float = HEIGHT_MAP_CENTER_AHEAD_M
    """Distance of the grid centre ahead of the base."""
    window_s: float = 1.0
    """Points older than this are forgotten (a moving robot keeps the terrain it just saw)."""
    max_points: int = 200_000
    """Memory bound of the point buffer (oldest clouds are dropped first)."""
    max_height_above_base_m: float = 0.3
    """Points higher than this above the base are ignored (overhangs, people)."""
    body_half_extent_m: tuple[float, float] = (0.4, 0.2)
    """(x, y) half size of a box around the base whose points are ignored (the robot's own legs)."""
    body_below_base_m: float = 0.15
    """The body box reaches this far below the base; points lower than that are ground and kept."""

    def __post_init__(self) -> None:
        if self.rows < 1 or self.cols < 1:
            raise ValueError(f"rows and cols must be >= 1, got {self.rows=}, {self.cols=}")
        for name in ("resolution_m", "window_s", "max_height_above_base_m", "body_below_base_m"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.max_points < 1:
            raise ValueError(f"max_points must be >= 1, got {self.max_points=}")


def transform_points(points: np.ndarray, rotation: np.ndarray, translation_m: np.ndarray) -> np.ndarray:
    """``rotation @ p + translation`` for points (N, 3) -> (N, 3)."""
    return points @ np.asarray(rotation).T + np.asarray(translation_m)


class HeightMapper:
    """Accumulates world-frame points and renders the robot-centred mean-height grid."""

    def __init__(self, config: HeightMapConfig | None = None) -> None:
        self.config = config if config is not None else HeightMapConfig()
        self._clouds: deque[tuple[float, np.ndarray]] = deque()
        self._num_points = 0
        self.dropped_non_finite = 0
        """Points dropped because a coordinate was NaN/inf (the L1 marks missing returns that way)."""

    @property
    def num_points(self) -> int:
        """Points currently buffered."""
        return self._num_points

    def add_cloud(self, points_world_m: np.ndarray, stamp_s: float) -> None:
        """Add one cloud (N, 3) already in the odometry frame.

        Raises:
            ValueError: not an (N, 3) array.
        """
        pts = np.asarray(points_world_m, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 3:
            raise ValueError(f"points must have shape (N, 3), got {pts.shape}")
        finite = np.all(np.isfinite(pts), axis=1)
        self.dropped_non_finite += int(np.sum(~finite))
        pts = pts[finite]
        self._clouds.append((stamp_s, pts))
        self._num_points += len(pts)
        while self._num_points > self.config.max_points and len(self._clouds) > 1:
            self._num_points -= len(self._clouds.popleft()[1])

    def _expire(self, now_s: float) -> None:
        while self._clouds and now_s - self._clouds[0][0] > self.config.window_s:
            self._num_points -= len(self._clouds.popleft()[1])

    def height_map(self, base_pos_m: np.ndarray, base_quat_wxyz: np.ndarray, now_s: float) -> np.ndarray | None:
        """The (rows, cols) float32 height map around the base, or None if no point is near it.

        Args:
            base_pos_m: (3,) base position in the odometry frame.
            base_quat_wxyz: (4,) base orientation in the odometry frame (only its yaw is used).
            now_s: current time on the clock of ``add_cloud`` stamps (expires old clouds).
        """
        self._expire(now_s)
        if not self._clouds:
            return None
        pts = np.concatenate([cloud for _, cloud in self._clouds])  # (N, 3)
        return grid_heights(pts, np.asarray(base_pos_m, dtype=np.float64), yaw_from_quat(base_quat_wxyz),
                            self.config)


def grid_heights(points_m: np.ndarray, base_pos_m: np.ndarray, yaw_rad: float,
                 config: HeightMapConfig) -> np.ndarray | None:
    """Mean terrain height minus base height per cell, holes filled from the nearest filled cell.

    Args:
        points_m: (N, 3) points in the odometry frame.
        base_pos_m: (3,) base position in the odometry frame.
        yaw_rad: base heading in the odometry frame.
        config: grid layout and filters.

    Returns:
        (rows, cols) float32, or None when no point falls in the grid.
    """
    c, s = np.cos(yaw_rad), np.sin(yaw_rad)
    d = points_m - base_pos_m  # (N, 3)
    ahead = c * d[:, 0] + s * d[:, 1]  # (N,) yaw-aligned base frame
    left = -s * d[:, 0] + c * d[:, 1]
    hx, hy = config.body_half_extent_m
    on_body = (np.abs(ahead) < hx) & (np.abs(left) < hy) & (d[:, 2] > -config.body_below_base_m)
    keep = ~on_body & (d[:, 2] < config.max_height_above_base_m)
    row = np.rint((ahead - config.center_ahead_m) / config.resolution_m + (config.rows - 1) / 2).astype(np.int64)
    col = np.rint(left / config.resolution_m + (config.cols - 1) / 2).astype(np.int64)
    keep &= (row >= 0) & (row < config.rows) & (col >= 0) & (col < config.cols)
    if not np.any(keep):
        return None
    cell = row[keep] * config.cols + col[keep]  # (K,) flat cell index
    size = config.rows * config.cols
    counts = np.bincount(cell, minlength=size)
    sums = np.bincount(cell, weights=d[keep, 2], minlength=size)
    filled = counts > 0
    heights = np.zeros(size)
    heights[filled] = sums[filled] / counts[filled]
    if not np.all(filled):
        grid_r, grid_c = np.divmod(np.arange(size), config.cols)
        src = np.flatnonzero(filled)
        holes = np.flatnonzero(~filled)
        dist2 = (grid_r[holes, None] - grid_r[None, src]) ** 2 + (grid_c[holes, None] - grid_c[None, src]) ** 2
        heights[holes] = heights[src[np.argmin(dist2, axis=1)]]  # (holes,) nearest filled cell
    return heights.reshape(config.rows, config.cols).astype(np.float32)


def points_to_world(points_sensor_m: np.ndarray, base_pos_m: np.ndarray, base_quat_wxyz: np.ndarray,
                    sensor_in_base_rot: np.ndarray, sensor_in_base_m: np.ndarray) -> np.ndarray:
    """Sensor-frame points (N, 3) -> odometry frame, through the base pose and the sensor's mounting."""
    in_base = transform_points(points_sensor_m, sensor_in_base_rot, sensor_in_base_m)
    return transform_points(in_base, quat_to_rotmat(np.asarray(base_quat_wxyz, dtype=np.float64)), base_pos_m)
