"""Scripted UR5e expert: success on the narrow grid, contact-rich demos, skill degradation, measure_expert."""

import numpy as np
import pytest
from simdist_core.experts.ur5e_expert import ExpertConfig, make_ur5e_expert, measure_expert
from simdist_core.sim.base import make_env


@pytest.mark.timeout(240)
@pytest.mark.parametrize("task", ["ur5e/peg", "ur5e/table_leg"])
def test_expert_succeeds_on_the_narrow_grid(task):
    result = measure_expert(task, 10, {"fixture.grid": "narrow"}, seed=100)
    assert result["success_rate"] >= 0.9, result


def test_expert_demos_touch_the_fixture():
    """The injected 1.5 mm pose error makes the part land on the lip: demos contain contact."""
    env = make_env("ur5e/peg", {"render": "false"})
    expert = make_ur5e_expert(env)
    env.reset(seed=7)
    expert.reset(env, np.random.default_rng(7))
    peak, phases, done = 0.0, set(), False
    while not done:
        result = env.step(expert.act(env))
        peak = max(peak, result.info["contact_force_n"])
        phases.add(expert.phase)
        done = result.terminated or result.truncated
    assert env.metrics()["success"]
    assert peak > 5.0 and "search" in phases


def test_skill_degrades_the_config_and_validates():
    full, weak = ExpertConfig.from_skill(1.0), ExpertConfig.from_skill(0.2)
    assert weak.pose_error_m > full.pose_error_m and weak.action_noise > full.action_noise
    assert weak.spiral_speed_m == 0.0 and full.spiral_speed_m > 0.0
    with pytest.raises(ValueError, match="skill"):
        make_ur5e_expert(None, skill=1.5)
    with pytest.raises(ValueError, match="episodes"):
        measure_expert("ur5e/peg", 0)


def test_expert_actions_are_normalised_float32():
    env = make_env("ur5e/table_leg", {"render": "false"})
    expert = make_ur5e_expert(env, skill=0.3, rng=np.random.default_rng(0))
    env.reset(seed=0)
    expert.reset(env, np.random.default_rng(0))
    for _ in range(20):
        action = expert.act(env)
        assert action.shape == (4,) and action.dtype == np.float32 and np.all(np.abs(action) <= 1.0)
        env.step(action)


def _run_until(env, expert, phase):
    """Step the expert until it enters ``phase``."""
    for _ in range(env.max_steps):
        env.step(expert.act(env))
        if expert.phase == phase:
            return
    raise AssertionError(f"the expert never reached {phase!r}")


def test_resume_picks_up_the_phase_the_state_is_in():
    """A continuation from the lip searches on (no lift to hover height); from the start it approaches."""
    import copy

    env = make_env("ur5e/peg", {"render": "false"})
    env.reset(seed=7)
    fresh = make_ur5e_expert(env)
    fresh.resume(env, np.random.default_rng(1))
    assert fresh.phase == "approach"
    expert = make_ur5e_expert(env)
    expert.reset(env, np.random.default_rng(7))
    _run_until(env, expert, "search")
    top_z = float(env.privileged_state()["fixture_pos"][2]) + env.cfg.scene.fixture_height_m
    heights = {}
    for how in ("resume", "reset"):
        clone = copy.deepcopy(env)
        taker = make_ur5e_expert(clone)
        getattr(taker, how)(clone, np.random.default_rng(3))
        peak, done = 0.0, False
        while not done:
            result = clone.step(taker.act(clone))
            peak = max(peak, float(clone.privileged_state()["tcp_pos"][2]) - top_z)
            done = result.terminated or result.truncated
        heights[how] = peak
        if how == "resume":
            assert clone.metrics()["success"]
    assert heights["resume"] < 0.006 < heights["reset"], heights
    _run_until(env, expert, "insert")
    inserted = make_ur5e_expert(env)
    inserted.resume(env, np.random.default_rng(4))
    assert inserted.phase == "insert"
