"""Go2 leg odometry on kinematically consistent states: stance feet fixed in the world, known base motion."""

import numpy as np
import pytest
from simdist_core.sim import go2_constants as gc
from simdist_core.sim.go2_leg_odometry import EstimatorConfig, LegKinematics, LegOdometry

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def _consistent_dq(kin, q, v_base, omega):
    """Joint velocities that keep every foot still in the world while the base moves with (v_base, omega)."""
    pos, _ = kin.feet(q, np.zeros(12))
    dq = np.zeros(12)
    for leg in range(4):
        cols = slice(3 * leg, 3 * leg + 3)
        unit = np.zeros(12)
        jac = np.zeros((3, 3))
        for k in range(3):  # foot velocity per unit joint speed, column by column
            unit[:] = 0.0
            unit[3 * leg + k] = 1.0
            jac[:, k] = kin.feet(q, unit)[1][leg]
        dq[cols] = np.linalg.solve(jac, -(v_base + np.cross(omega, pos[leg])))
    return dq


def test_recovers_the_base_velocity_from_stance_legs():
    rng = np.random.default_rng(0)
    odom = LegOdometry(EstimatorConfig(filter_alpha=1.0))
    q = gc.DEFAULT_POSE_RAD + rng.uniform(-0.1, 0.1, 12)
    v_base, omega = np.array([0.4, -0.1, 0.05]), np.array([0.0, 0.1, 0.3])
    dq = _consistent_dq(odom.kin, q, v_base, omega)
    est = odom.update(q, dq, omega, IDENTITY, np.full(4, 100.0), dt_s=0.02)
    np.testing.assert_allclose(est, v_base, atol=1e-9)
    assert odom.stance.all()
    # Standing height from the default pose: the feet are ~0.27 m below the base (go2_sim.md: 0.256-0.27).
    assert 0.2 < odom.pos_m[2] < 0.32


def test_swing_legs_are_ignored_and_no_contact_decays():
    odom = LegOdometry(EstimatorConfig(filter_alpha=1.0, decay_without_contact=0.5))
    q = gc.DEFAULT_POSE_RAD.copy()
    v_base = np.array([0.3, 0.0, 0.0])
    dq = _consistent_dq(odom.kin, q, v_base, np.zeros(3))
    dq[3:6] += 5.0  # FR swings wildly, but it is not in stance
    est = odom.update(q, dq, np.zeros(3), IDENTITY, np.array([100.0, 0.0, 100.0, 100.0]), dt_s=0.02)
    np.testing.assert_allclose(est, v_base, atol=1e-9)
    est = odom.update(q, dq, np.zeros(3), IDENTITY, np.zeros(4), dt_s=0.02)
    np.testing.assert_allclose(est, v_base * 0.5, atol=1e-12)


def test_position_integrates_the_rotated_velocity():
    odom = LegOdometry(EstimatorConfig(filter_alpha=1.0))
    q = gc.DEFAULT_POSE_RAD.copy()
    dq = _consistent_dq(odom.kin, q, np.array([1.0, 0.0, 0.0]), np.zeros(3))
    yaw90 = np.array([np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)])  # base x points along world y
    for _ in range(10):
        odom.update(q, dq, np.zeros(3), yaw90, np.full(4, 100.0), dt_s=0.1)
    np.testing.assert_allclose(odom.pos_m[:2], [0.0, 1.0], atol=1e-9)


def test_kinematics_feet_are_below_the_hips():
    pos, _ = LegKinematics().feet(gc.DEFAULT_POSE_RAD, np.zeros(12))
    assert pos.shape == (4, 3) and np.all(pos[:, 2] < -0.2)
    np.testing.assert_array_equal(np.sign(pos[:, 1]), gc.LEG_SIDE)  # left legs at +y


def test_config_is_validated():
    with pytest.raises(ValueError, match="filter_alpha"):
        EstimatorConfig(filter_alpha=0.0)
