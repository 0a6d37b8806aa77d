"""LiDAR height map without ROS: synthetic clouds of known terrain, checked against the sim's grid convention."""

import math

import numpy as np
import pytest
from go2_bringup.height_map import HeightMapConfig, HeightMapper, grid_heights, points_to_world
from simdist_core.robots import GO2
from simdist_core.sim.go2_obs import height_map_points

BASE_Z = 0.3


def _terrain_cloud(height_fn, rng, n=60_000, extent=3.0):
    """Dense uniform samples of z = height_fn(x, y) over a square around the origin (odometry frame)."""
    xy = rng.uniform(-extent, extent, size=(n, 2))
    return np.column_stack([xy, height_fn(xy[:, 0], xy[:, 1])])


def _yaw_quat(yaw):
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


def _expected(height_fn, base, yaw):
    """What the sim puts in each cell: terrain height under the cell centre minus base height."""
    gx, gy = height_map_points(base[:2], yaw)
    return height_fn(gx, gy) - base[2], gx, gy


@pytest.mark.parametrize("yaw", [0.0, 0.6])
def test_flat_ground(yaw):
    rng = np.random.default_rng(0)
    mapper = HeightMapper()
    mapper.add_cloud(_terrain_cloud(lambda x, y: np.zeros_like(x), rng), stamp_s=0.0)
    base = np.array([0.2, -0.1, BASE_Z])
    hm = mapper.height_map(base, _yaw_quat(yaw), now_s=0.1)
    assert hm.shape == GO2.height_map_shape and hm.dtype == np.float32
    np.testing.assert_allclose(hm, -BASE_Z, atol=1e-6)


def test_step_in_a_rotated_frame_lands_in_the_sim_cells():
    rng = np.random.default_rng(1)

    def step(x, y):
        return np.where(x > 0.9, 0.15, 0.0)

    base, yaw = np.array([0.0, 0.0, BASE_Z]), 0.5
    mapper = HeightMapper()
    mapper.add_cloud(_terrain_cloud(step, rng), 0.0)
    hm = mapper.height_map(base, _yaw_quat(yaw), 0.0)
    expected, gx, _ = _expected(step, base, yaw)
    clear = np.abs(gx - 0.9) > 0.08  # cells straddling the edge average both levels
    np.testing.assert_allclose(hm[clear], expected[clear], atol=1e-6)
    assert np.any(np.isclose(hm, 0.15 - BASE_Z)) and np.any(np.isclose(hm, -BASE_Z))  # both levels seen
    # Row 0 is behind, the last row ahead: the step is ahead, so it shows in the high rows.
    assert hm[-1].mean() > hm[0].mean()


def test_slope_matches_cell_centres():
    rng = np.random.default_rng(2)
    slope = math.tan(math.radians(10))

    def ramp(x, y):
        return slope * x

    base, yaw = np.array([0.3, 0.4, BASE_Z]), -0.3
    mapper = HeightMapper()
    mapper.add_cloud(_terrain_cloud(ramp, rng, n=200_000), 0.0)
    hm = mapper.height_map(base, _yaw_quat(yaw), 0.0)
    expected, _, _ = _expected(ramp, base, yaw)
    # A cell's mean of a plane equals its centre value up to sampling noise (slope * res / sqrt(12 * n)).
    np.testing.assert_allclose(hm, expected, atol=0.004)


def test_holes_take_the_nearest_filled_cell_and_robot_points_are_ignored():
    config = HeightMapConfig()
    # Points only in two cells: row 0 col 0 at 0.1 m and row 20 col 14 at 0.2 m (base at the origin, yaw 0).
    res = config.resolution_m
    cell_x = lambda r: config.center_ahead_m + (r - 10) * res  # noqa: E731
    cell_y = lambda c: (c - 7) * res  # noqa: E731
    pts = np.array([[cell_x(0), cell_y(0), 0.1], [cell_x(20), cell_y(14), 0.2],
                    [0.0, 0.0, -0.05]])  # the last one is on the robot's own body: ignored
    hm = grid_heights(pts, np.zeros(3), 0.0, config)
    assert hm[0, 0] == pytest.approx(0.1) and hm[20, 14] == pytest.approx(0.2)
    assert hm[1, 1] == pytest.approx(0.1) and hm[19, 13] == pytest.approx(0.2)  # nearest filled cell
    assert set(np.unique(hm)) == {np.float32(0.1), np.float32(0.2)}


def test_no_points_means_no_map_and_old_clouds_expire():
    mapper = HeightMapper(HeightMapConfig(window_s=0.5))
    assert mapper.height_map(np.zeros(3), _yaw_quat(0.0), 0.0) is None
    mapper.add_cloud(np.array([[0.5, 0.0, 0.0], [np.nan, 0.0, 0.0]]), stamp_s=0.0)
    assert mapper.dropped_non_finite == 1
    assert mapper.height_map(np.array([0, 0, BASE_Z]), _yaw_quat(0.0), 0.2) is not None
    assert mapper.height_map(np.array([0, 0, BASE_Z]), _yaw_quat(0.0), 1.0) is None
    assert mapper.num_points == 0
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        mapper.add_cloud(np.zeros((4, 2)), 0.0)


def test_point_buffer_is_bounded():
    mapper = HeightMapper(HeightMapConfig(max_points=100))
    for k in range(5):
        mapper.add_cloud(np.zeros((40, 3)), float(k))
    assert mapper.num_points <= 100


def test_points_to_world_uses_mounting_and_base_pose():
    # Sensor 0.2 m ahead of the base, pitched down 90 deg would be complex: use a yawed mount of 90 deg.
    mount = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # sensor x = base y
    pts = points_to_world(np.array([[1.0, 0.0, 0.0]]), np.array([1.0, 2.0, 0.3]), _yaw_quat(0.0), mount,
                          np.array([0.2, 0.0, 0.1]))
    np.testing.assert_allclose(pts, [[1.2, 3.0, 0.4]])
