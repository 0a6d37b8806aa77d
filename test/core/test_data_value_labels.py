"""Expert value function: discounted targets, bootstrapped truncation, fit quality, safe save/load."""

import numpy as np
import pytest
import torch
from simdist_core.data.value_labels import (
    ExpertEpisode,
    ValueFitConfig,
    ValueFunction,
    discounted_targets,
    fit_value_function,
)

GAMMA = 0.99
torch.set_num_threads(1)


def test_discounted_targets_hand_computed():
    ep = ExpertEpisode(np.zeros((4, 1), np.float32), np.array([1.0, 2.0, 3.0]), terminated=True)
    # G2 = 3, G1 = 2 + 0.99*3 = 4.97, G0 = 1 + 0.99*4.97 = 5.9203, final state 0
    np.testing.assert_allclose(discounted_targets(ep, GAMMA, tail_value=50.0), [5.9203, 4.97, 3.0, 0.0])
    truncated = ExpertEpisode(ep.features, ep.rewards, terminated=False)
    np.testing.assert_allclose(discounted_targets(truncated, GAMMA, tail_value=10.0)[-2:], [3 + 9.9, 10.0])


def _truncated_episodes(n=12, length=300, seed=0):
    """Reward s per step with a per-episode constant s: the infinite-horizon value is 100 s.

    Features are (s, time fraction); the time fraction must be ignored by the fit.
    """
    rng = np.random.default_rng(seed)
    out = []
    for s in rng.uniform(0.0, 1.0, n):
        feats = np.stack([np.full(length + 1, s), np.arange(length + 1) / length], axis=1).astype(np.float32)
        out.append(ExpertEpisode(feats, np.full(length, s), terminated=False))
    return out


def test_bootstrapped_fit_recovers_infinite_horizon_value():
    cfg = ValueFitConfig(train_steps=300, batch_size=256, bootstrap_rounds=3)
    vf = fit_value_function(_truncated_episodes(), cfg, seed=0)
    probe = np.array([[0.2, 0.5], [0.8, 0.5], [0.8, 1.0]], np.float32)
    # Monte Carlo alone averages to ~68 s; three bootstrap rounds reach ~98.6 s (fixed point 100 s)
    np.testing.assert_allclose(vf(probe), [20.0, 80.0, 80.0], rtol=0.08)
    mc_cfg = ValueFitConfig(train_steps=300, batch_size=256, bootstrap_rounds=0)
    mc_only = fit_value_function(_truncated_episodes(), mc_cfg)
    assert mc_only(probe)[1] < 0.8 * vf(probe)[1], "bootstrapping should raise the value of truncated states"


def test_terminated_episodes_do_not_bootstrap():
    length = 120
    feats = np.stack([np.arange(length, -1, -1) / 100.0, np.zeros(length + 1)], axis=1).astype(np.float32)
    episodes = [ExpertEpisode(feats, np.ones(length), terminated=True)] * 4
    vf = fit_value_function(episodes, ValueFitConfig(train_steps=400, batch_size=256), seed=1)
    remaining = np.array([120, 60, 10, 1])
    expected = (1 - GAMMA**remaining) / (1 - GAMMA)  # 70.1, 45.3, 9.56, 1.0
    got = vf(np.stack([remaining / 100.0, np.zeros(4)], axis=1).astype(np.float32))
    np.testing.assert_allclose(got, expected, atol=2.5)
    assert vf.meta["fit_r2"] > 0.98


def test_save_load_round_trip_and_tamper_detection(tmp_path):
    vf = fit_value_function(_truncated_episodes(n=3, length=50), ValueFitConfig(train_steps=50, bootstrap_rounds=0))
    vf.save(tmp_path)
    loaded = ValueFunction.load(tmp_path)
    x = np.random.default_rng(0).uniform(0, 1, (7, 2)).astype(np.float32)
    np.testing.assert_array_equal(loaded(x), vf(x))
    assert loaded.meta["columns"] == [0] and loaded.feature_dim == 2
    with pytest.raises(ValueError, match="width 2"):
        loaded(np.zeros((1, 3), np.float32))
    with pytest.raises(ValueError, match="finite"):
        loaded(np.full((1, 2), np.nan, np.float32))
    data = bytearray((tmp_path / "value_fn.safetensors").read_bytes())
    data[-1] ^= 0x01
    (tmp_path / "value_fn.safetensors").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256"):
        ValueFunction.load(tmp_path)


def test_fit_rejects_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        fit_value_function([])
    bad = ExpertEpisode(np.full((3, 2), np.nan, np.float32), np.zeros(2), terminated=True)
    with pytest.raises(ValueError, match="non-finite"):
        fit_value_function([bad])
    with pytest.raises(ValueError, match="gamma"):
        ValueFitConfig(gamma=1.0)


def test_branch_states_default_per_robot_and_ur5e_continuations():
    """Go2 branches by default, the UR5e only when asked; its continuations run on copies of the env."""
    from simdist_core.data.rollout import BehaviourConfig, branch_expert_episodes
    from simdist_core.sim.base import make_env

    assert ValueFitConfig().branch_states_for("go2") == 64
    assert ValueFitConfig().branch_states_for("ur5e") == 0
    assert ValueFitConfig(branch_states=5).branch_states_for("ur5e") == 5
    with pytest.raises(ValueError, match="branch_states"):
        ValueFitConfig(branch_states=-1)
    env = make_env("ur5e/peg", {"render": "false"})
    episodes = branch_expert_episodes(env, BehaviourConfig(max_episode_steps=env.max_steps), 2, seed=0,
                                      branch_steps=20, branch_prob=0.1)
    assert len(episodes) == 2
    for ep in episodes:
        assert ep.features.shape[1] == 10 and len(ep.features) == len(ep.rewards) + 1 <= 21
        assert np.isfinite(ep.features).all() and np.isfinite(ep.rewards).all()
