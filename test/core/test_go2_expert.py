"""The Go2 trot expert on real MuJoCo: walks, slips on PTFE, sinks into foam, weaker variants are worse."""

import numpy as np
import pytest
from simdist_core.experts.go2_expert import make_go2_expert, measure_expert
from simdist_core.sim.base import make_env


def _walk(task, seconds, overrides=None, skill=1.0, seed=0):
    """Run the expert; return (env, stance foot heights, actions)."""
    env = make_env(task, {"command.vx_range_m_s": "0.6,0.6", **(overrides or {})})
    env.reset(seed=seed)
    expert = make_go2_expert(env, skill, np.random.default_rng(seed))
    stance_z, actions = [], []
    for step in range(int(seconds * 50)):
        action = expert.act(env)
        actions.append(action)
        result = env.step(action)
        if step >= 25:  # after the first half second
            priv = env.privileged_state()
            stance_z.extend(priv["foot_pos_world"][priv["foot_contacts"] > 0, 2])
        if result.terminated:
            break
    return env, np.array(stance_z), np.array(actions)


@pytest.mark.timeout(120)
def test_expert_walks_forward_on_flat_ground():
    env, _, actions = _walk("go2/flat", 5.0)
    metrics = env.metrics()
    assert not metrics["fell"]
    # 0.6 m/s for 5 s is 3 m; allow the start-up and tracking error.
    assert metrics["forward_progress_m"] > 2.3, metrics
    assert actions.dtype == np.float32 and np.all(np.abs(actions) <= 1.0)


@pytest.mark.timeout(120)
def test_expert_slips_more_on_ptfe_than_on_nominal_slope():
    ptfe, _, _ = _walk("go2/ptfe_slope", 3.0)
    nominal, _, _ = _walk("go2/slope", 3.0, {"terrain.slope_deg": "8"})
    slip_ptfe = ptfe.metrics()["foot_slip_m"] / ptfe.metrics()["duration_s"]
    slip_nominal = nominal.metrics()["foot_slip_m"] / nominal.metrics()["duration_s"]
    assert not nominal.metrics()["fell"]
    assert slip_ptfe > 2.0 * slip_nominal, (slip_ptfe, slip_nominal)


@pytest.mark.timeout(120)
def test_feet_sink_into_foam():
    _, flat_z, _ = _walk("go2/flat", 3.0)
    foam_env, foam_z, _ = _walk("go2/foam", 3.0)
    assert not foam_env.metrics()["fell"]
    # Rigid contact: stance foot centres ~9 mm up (radius 22 mm, ~13 mm penetration); foam: ~2-3 cm lower.
    assert np.mean(foam_z) < np.mean(flat_z) - 0.01, (np.mean(foam_z), np.mean(flat_z))


@pytest.mark.timeout(180)
def test_lower_skill_walks_worse_on_flat_ground():
    scores = {}
    for skill in (1.0, 0.4):
        r = measure_expert(
            "go2/flat", seconds=6.0, episodes=2, skill=skill, overrides={"command.vx_range_m_s": "0.6,0.6"}
        )
        # Progress minus a metre per fall-per-minute: lower skill must lose on this combined score.
        scores[skill] = r["forward_progress_m"] - r["falls_per_min"]
    assert scores[1.0] > scores[0.4] + 1.0, scores


def test_skill_must_be_in_unit_interval():
    with pytest.raises(ValueError, match="skill"):
        make_go2_expert(None, skill=1.5)
