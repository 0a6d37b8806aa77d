"""The heading hold in front of the Go2 planner's command: what it asks for, and that it runs in a rollout."""

import math

import numpy as np
import pytest
from simdist_core.planning.heading_hold import HeadingHold
from simdist_core.sim.go2_obs import wrap_rad, yaw_from_quat


def test_asks_for_a_yaw_rate_against_the_heading_error_within_its_limit():
    hold = HeadingHold(0.02, gain_per_s=1.0, max_yaw_rate_rad_s=0.5)
    hold.reset(0.0)
    np.testing.assert_allclose(hold.command(np.array([0.8, 0.0, 0.0]), 0.2), [0.8, 0.0, -0.2], atol=1e-6)
    np.testing.assert_allclose(hold.command(np.array([0.8, 0.0, 0.0]), -3.0), [0.8, 0.0, 0.5], atol=1e-6)
    # Across +-pi the error is the short way round: at 3.1 rad with the target at -3.1 it turns left by 0.083.
    hold.reset(-3.1)
    assert hold.command(np.zeros(3), 3.1)[2] == pytest.approx(wrap_rad(-3.1 - 3.1), abs=1e-6)


def test_the_target_follows_the_operators_yaw_rate_and_a_missing_heading_passes_the_command():
    hold = HeadingHold(0.02)
    hold.reset(0.0)
    for _ in range(50):  # 1 s at 0.3 rad/s: the target is now 0.3 rad
        hold.command(np.array([0.5, 0.0, 0.3]), 0.0)
    assert hold.target_rad == pytest.approx(0.3)
    assert hold.command(np.array([0.5, 0.0, 0.3]), 0.3)[2] == pytest.approx(0.3)
    np.testing.assert_allclose(hold.command(np.array([0.5, 0.0, 0.1]), float("nan")), [0.5, 0.0, 0.1], atol=1e-7)
    with pytest.raises(ValueError, match="gain_per_s"):
        HeadingHold(0.02, gain_per_s=0.0)


def test_yaw_from_quat():
    assert yaw_from_quat(np.array([math.cos(0.35), 0.0, 0.0, math.sin(0.35)])) == pytest.approx(0.7)


def test_a_rollout_with_the_hold_shows_the_planner_a_yaw_rate_against_the_robots_turn():
    from simdist_core.eval.rollout import run_episode
    from simdist_core.sim.base import make_env

    env = make_env("go2/flat", {})
    seen: list[tuple[float, float]] = []  # (yaw now, yaw rate the planner was asked for)

    class Twister:  # a planner that twists the legs one way, so the base turns
        cfg = None

        def reset(self):
            pass

        def plan(self, model_input):
            seen.append((yaw_from_quat(env.data.qpos[3:7]), float(model_input["command"].reshape(-1, 3)[-1, 2])))
            return np.tile(np.array([0.6, 0.0, 0.0], np.float32), 4)  # every hip abducted: the trunk yaws

    stats = run_episode(env, Twister(), seed=3, max_steps=60, heading_hold=True)
    yaw0 = seen[0][0]
    assert max(abs(asked) for _, asked in seen) > 0.02, "the base did not turn: nothing was tested"
    for yaw, asked in seen:
        assert asked == pytest.approx(np.clip(wrap_rad(yaw0 - yaw), -0.5, 0.5), abs=1e-5)
    assert stats.metrics["max_heading_change_rad"] == pytest.approx(max(abs(wrap_rad(y - yaw0)) for y, _ in seen),
                                                                    abs=0.05)
    with pytest.raises(ValueError, match="heading_hold"):
        run_episode(make_env("ur5e/peg", {}), Twister(), seed=3, max_steps=1, heading_hold=True)
