"""The Go2's IMU + leg-kinematics Kalman filter on kinematically consistent states, and as the env's estimate."""

import numpy as np
import pytest
from simdist_core.sim import go2_constants as gc
from simdist_core.sim.base import make_env
from simdist_core.sim.go2_imu_leg_fusion import GRAVITY_M_S2, FusionConfig, ImuLegFusion, SpecificForceMean
from test_go2_leg_odometry import _consistent_dq

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
AT_REST = -GRAVITY_M_S2  # an accelerometer at rest reads the specific force +g up
ALL_STANCE = np.full(4, 100.0)


def test_at_rest_with_a_biased_accelerometer_the_bias_is_learned_and_the_velocity_stays_zero():
    fusion = ImuLegFusion()
    q = gc.DEFAULT_POSE_RAD.copy()
    bias = np.array([0.15, -0.1, 0.05])
    for _ in range(2500):  # 50 s at 50 Hz: the bias is slow to tell from the velocity (it is meant to be)
        vel = fusion.update(q, np.zeros(12), np.zeros(3), IDENTITY, ALL_STANCE, 0.02, AT_REST + bias)
    np.testing.assert_allclose(vel, 0.0, atol=0.01)
    np.testing.assert_allclose(fusion.x[3:], bias, atol=0.02)
    assert fusion.rejected_feet == 0


def test_follows_a_walking_base_from_consistent_legs():
    fusion = ImuLegFusion()
    q = gc.DEFAULT_POSE_RAD.copy()
    v_base, omega = np.array([0.5, 0.1, 0.0]), np.array([0.0, 0.0, 0.2])
    dq = _consistent_dq(fusion.kin, q, v_base, omega)
    fusion.x[:3] = v_base  # already walking: no acceleration for the IMU to see
    for _ in range(50):
        vel = fusion.update(q, dq, omega, IDENTITY, ALL_STANCE, 0.02, AT_REST)
    np.testing.assert_allclose(vel, v_base, atol=1e-3)


def test_a_slipping_foot_is_rejected_and_the_others_carry_the_estimate():
    fusion = ImuLegFusion()
    q = gc.DEFAULT_POSE_RAD.copy()
    dq = _consistent_dq(fusion.kin, q, np.zeros(3), np.zeros(3))
    dq[0:3] = _consistent_dq(fusion.kin, q, np.array([-1.5, 0.0, 0.0]), np.zeros(3))[0:3]  # FL slides 1.5 m/s
    for _ in range(100):
        vel = fusion.update(q, dq, np.zeros(3), IDENTITY, ALL_STANCE, 0.02, AT_REST)
    np.testing.assert_allclose(vel, 0.0, atol=0.02)
    assert fusion.rejected_feet >= 95 and fusion.accepted_feet == 300


def test_without_imu_samples_the_velocity_holds_and_its_uncertainty_grows():
    fusion = ImuLegFusion()
    fusion.x[:3] = [0.3, 0.0, 0.0]
    before = fusion.cov[0, 0]
    vel = fusion.update(gc.DEFAULT_POSE_RAD, np.zeros(12), np.zeros(3), IDENTITY, np.zeros(4), 0.02, None)
    np.testing.assert_allclose(vel, [0.3, 0.0, 0.0])
    assert fusion.cov[0, 0] > before + (FusionConfig().accel_std_without_imu_m_s2 * 0.02) ** 2 * 0.99
    fusion.reset()
    np.testing.assert_array_equal(fusion.lin_vel_m_s, 0.0)


def test_an_accelerometer_in_the_wrong_units_is_set_aside_and_the_legs_carry_the_estimate():
    """An IMU reading in g instead of m/s^2 (|f| ~ 1 at rest) would integrate 8.8 m/s^2 of phantom acceleration:
    the filter stops using it within a few periods, counts it, and the legs keep the estimate at rest."""
    fusion = ImuLegFusion()
    q = gc.DEFAULT_POSE_RAD.copy()
    for _ in range(100):
        vel = fusion.update(q, np.zeros(12), np.zeros(3), IDENTITY, ALL_STANCE, 0.02, AT_REST / 9.81)
    np.testing.assert_allclose(vel, 0.0, atol=0.05)
    assert fusion.implausible_imu_periods > 80  # all but the ~11 periods the running magnitude takes to leave g


def test_specific_force_mean_rotates_averages_drops_nan_and_starts_over():
    mean = SpecificForceMean()
    assert mean.take() is None
    yaw90 = np.array([np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)])
    mean.add(yaw90, np.array([1.0, 0.0, 9.81]))  # base x = world y
    mean.add(IDENTITY, np.array([0.0, 0.0, 9.81]))
    mean.add(IDENTITY, np.array([np.nan, 0.0, 9.81]))
    np.testing.assert_allclose(mean.take(), [0.0, 0.5, 9.81], atol=1e-12)
    assert mean.take() is None
    with pytest.raises(ValueError, match="accel_std_m_s2"):
        FusionConfig(accel_std_m_s2=0.0)


def _expert_episode(overrides: dict[str, str], seed: int = 3, steps: int = 150) -> dict[str, float]:
    from simdist_core.experts import make_policy

    env = make_env("go2/foam", overrides)
    env.reset(seed=seed)
    expert = make_policy(env, 1.0, np.random.default_rng(0))
    for _ in range(steps):
        env.step(expert.act(env))
    return {**env.metrics(), "command": env.command.copy()}


def test_the_env_emulates_the_fusion_without_changing_the_episode_and_it_beats_leg_odometry_on_foam():
    """``base_velocity_source=imu_leg_fusion`` with emulated IMU errors: the same episode (the expert acts on the
    privileged state), a velocity error reported per episode, and smaller than the leg odometry's on foam."""
    legs = _expert_episode({"base_velocity_source": "leg_odometry"})
    fused = _expert_episode({"base_velocity_source": "imu_leg_fusion", "imu_acc_bias_m_s2": "0.2",
                             "imu_acc_noise_m_s2": "0.1"})
    np.testing.assert_array_equal(fused["command"], legs["command"])
    assert fused["forward_progress_m"] == pytest.approx(legs["forward_progress_m"], abs=1e-9)
    assert 0.0 < fused["base_vel_rmse_m_s"] < 0.75 * legs["base_vel_rmse_m_s"]
    with pytest.raises(ValueError, match="imu_acc_bias_m_s2"):
        make_env("go2/flat", {"imu_acc_bias_m_s2": "-1"})


@pytest.mark.parametrize("source", ["true", "leg_odometry", "imu_leg_fusion"])
def test_the_env_deep_copies_with_any_velocity_source(source):
    """Data generation deep-copies envs to branch expert rollouts: the estimators (and the IMU's lock) must copy,
    and the copy must go on from the same state on its own."""
    import copy

    env = make_env("go2/flat", {"base_velocity_source": source})
    env.reset(seed=1)
    env.step(np.zeros(12))
    twin = copy.deepcopy(env)
    a, b = env.step(np.full(12, 0.1)), twin.step(np.full(12, 0.1))
    np.testing.assert_array_equal(a.obs["proprio"], b.obs["proprio"])
    twin._imu.add(IDENTITY, AT_REST)  # its own lock and sums
    assert twin._imu.take() is not None and env._imu.take() is None
