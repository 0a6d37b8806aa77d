"""RLPD and IQL on tiny real data: generated Go2 rollouts offline, the real Go2 env online."""

import numpy as np
import pytest
import torch
from _train_testlib import TINY, tiny_model
from simdist_core.baselines import IQLConfig, RLPDConfig, flat_obs
from simdist_core.baselines.common import (
    AgentPlanner,
    EncodedObservation,
    FlatObservation,
    OfflineTransitions,
    ReplayBuffer,
    obs_dim,
    observation_for,
)
from simdist_core.baselines.iql import IQLAgent, expectile_loss, iql_batch
from simdist_core.baselines.rlpd import RLPDAgent, rlpd_batch
from simdist_core.baselines.runner import RLBaseline
from simdist_core.data import generate
from simdist_core.data.dataset import Dataset
from simdist_core.data.history import ObservationHistory
from simdist_core.robots import GO2, UR5E
from simdist_core.sim.base import make_env

pytestmark = pytest.mark.timeout(600)
torch.set_num_threads(1)

HISTORY = 3
# Small networks and batches: the behaviour under test does not depend on size.
RLPD = RLPDConfig(hidden=32, layers=1, num_critics=4, critic_subset=2, utd_ratio=2, batch_size=16, offline_steps=3,
                  update_every=5, history=HISTORY)
IQL = IQLConfig(hidden=32, layers=1, batch_size=16, offline_steps=3, update_every=5, history=HISTORY)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("rl") / "data"
    args = ["--robot", "go2", "--task", "flat", "--steps", "400", "--seed", "5", "--set", "episode_length_s=1",
            "--set", "data.value.episodes=2", "--set", "data.value.train_steps=50",
            "--set", "data.value.branch_states=2", "--set", "data.value.branch_steps=10", "--no-fsync",
            "--out", str(out)]
    assert generate.main(args) == 0
    return Dataset(out)


def _params(module):
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def _changed(before, module):
    return {name for name, p in module.named_parameters() if not torch.equal(before[name], p.detach())}


def _add_marked(buffer, n):
    """``n`` online transitions with a marker reward (1e6) that no generated transition has."""
    d = obs_dim(GO2, HISTORY)
    for _ in range(n):
        buffer.add(torch.zeros(d), torch.zeros(GO2.action_dim), 1e6, torch.zeros(d), False)


def test_offline_transitions_follow_the_stored_rows(dataset):
    offline = OfflineTransitions(dataset, GO2, FlatObservation(GO2, HISTORY), seed=0)
    rows = offline.sampler.starts[:20]
    b = offline.transitions(rows)
    assert b["obs"].shape == b["next_obs"].shape == (20, obs_dim(GO2, HISTORY))
    p = GO2.proprio_dim
    newest = slice((HISTORY - 1) * p, HISTORY * p)  # the newest proprio row of the flat window
    np.testing.assert_allclose(b["obs"][:, newest], dataset.gather("obs/proprio", rows))
    np.testing.assert_allclose(b["next_obs"][:, newest], dataset.gather("obs/proprio", rows + 1))
    np.testing.assert_allclose(b["action"], dataset.gather("action", rows))
    np.testing.assert_allclose(b["reward"], dataset.gather("reward", rows))
    np.testing.assert_array_equal(b["done"].numpy(), dataset.gather("terminated", rows + 1).astype(np.float32))


def test_flat_obs_is_the_encoder_input_window():
    env = make_env("go2/flat")
    history = ObservationHistory(GO2)
    history.reset(env.reset(seed=0))
    x = flat_obs(history.model_input(), GO2.history)
    assert x.shape == (1, obs_dim(GO2, GO2.history))
    assert obs_dim(GO2, GO2.history) == 25 * (GO2.proprio_dim + GO2.action_dim) + 3 + 21 * 15


def test_rlpd_batches_are_half_offline_half_online(dataset):
    offline = OfflineTransitions(dataset, GO2, FlatObservation(GO2, HISTORY), seed=0)
    online = ReplayBuffer(obs_dim(GO2, HISTORY), GO2.action_dim, capacity=100)
    rng = np.random.default_rng(0)
    assert torch.all(rlpd_batch(offline, online, 64, 0.5, rng)["reward"] < 1e3), "all offline before any online"
    _add_marked(online, 10)
    batch = rlpd_batch(offline, online, 64, 0.5, rng)
    assert len(batch["reward"]) == 64 and int((batch["reward"] == 1e6).sum()) == 32


def test_rlpd_updates_change_actor_critics_and_temperature(dataset):
    agent = RLPDAgent(obs_dim(GO2, HISTORY), GO2.action_dim, RLPD)
    offline = OfflineTransitions(dataset, GO2, FlatObservation(GO2, HISTORY), seed=0)
    agent.obs_norm.fit(offline.sample(256)["obs"])
    actor, critic, target = _params(agent.actor), _params(agent.critic), _params(agent.target_critic)
    alpha = agent.log_alpha.item()
    for _ in range(3):
        logs = agent.train_step(offline, None)
        assert all(np.isfinite(v) for v in logs.values()), logs
    assert _changed(actor, agent.actor) == set(actor)
    assert _changed(critic, agent.critic) == set(critic)
    assert _changed(target, agent.target_critic) == set(target)  # polyak: moved towards the critic ...
    moved = max((p - target[n]).abs().max() for n, p in agent.target_critic.named_parameters())
    critic_now = dict(agent.critic.named_parameters())
    gap = max((p - critic_now[n]).abs().max() for n, p in agent.target_critic.named_parameters())
    assert 0 < moved < gap  # ... by a small step, not copied
    assert agent.log_alpha.item() != alpha
    obs = offline.sample(64)["obs"]
    for deterministic in (True, False):
        a = agent.act(obs, deterministic)
        assert a.shape == (64, GO2.action_dim) and torch.all(a.abs() <= 1.0)


def test_iql_updates_change_value_q_and_policy(dataset):
    agent = IQLAgent(obs_dim(GO2, HISTORY), GO2.action_dim, IQL)
    offline = OfflineTransitions(dataset, GO2, FlatObservation(GO2, HISTORY), seed=0)
    agent.obs_norm.fit(offline.sample(256)["obs"])
    nets = {name: (getattr(agent, name), _params(getattr(agent, name)))
            for name in ("q1", "q2", "value", "policy", "target_q1")}  # fmt: skip
    for _ in range(3):
        logs = agent.train_step(offline, None)
        assert all(np.isfinite(v) for v in logs.values()), logs
    for name, (net, before) in nets.items():
        assert _changed(before, net) == set(before), name
    obs = offline.sample(64)["obs"]
    for deterministic in (True, False):
        a = agent.act(obs, deterministic)
        assert a.shape == (64, GO2.action_dim) and torch.all(a.abs() <= 1.0)


def test_expectile_loss_weights_underestimates_by_tau():
    # target above the prediction (diff > 0) weighs tau, below weighs 1 - tau
    assert expectile_loss(torch.tensor([2.0]), 0.7).item() == pytest.approx(0.7 * 4.0)
    assert expectile_loss(torch.tensor([-2.0]), 0.7).item() == pytest.approx(0.3 * 4.0)


def test_iql_batches_sample_the_union_of_offline_and_online(dataset):
    offline = OfflineTransitions(dataset, GO2, FlatObservation(GO2, HISTORY), seed=0)
    online = ReplayBuffer(obs_dim(GO2, HISTORY), GO2.action_dim, capacity=len(offline))
    _add_marked(online, len(offline))  # as many online transitions as offline ones: about half of each batch
    share = float((iql_batch(offline, online, 2000, np.random.default_rng(0))["reward"] == 1e6).float().mean())
    assert 0.45 < share < 0.55


@pytest.mark.parametrize(("method", "cfg"), [("rlpd", RLPD), ("iql", IQL)])
def test_offline_then_online_in_the_real_env(dataset, method, cfg):
    baseline = RLBaseline(method, GO2, dataset, cfg)
    baseline.train_offline()
    assert baseline.updates == cfg.offline_steps
    env = make_env("go2/flat")
    episodes = baseline.collect(env, steps=30, episode_steps=20, seed=0)
    assert episodes == 2 and baseline.buffer.size == 30
    assert baseline.updates == cfg.offline_steps + 30 // cfg.update_every
    assert all(np.isfinite(v) for v in baseline.last_log.values())
    data = baseline.buffer.data
    # within an episode each stored next observation is the next stored observation
    torch.testing.assert_close(data["next_obs"][:19], data["obs"][1:20])
    assert torch.all(data["action"][:30].abs() <= 1.0)
    planner = baseline.evaluation_planner()
    history = ObservationHistory(GO2)
    history.reset(env.reset(seed=1))
    a1, a2 = planner.plan(history.model_input()), planner.plan(history.model_input())
    assert a1.shape == (GO2.action_dim,) and torch.equal(a1, a2), "evaluation acts with the mean action"
    assert isinstance(planner, AgentPlanner)


@pytest.fixture(scope="module")
def ur5e_dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("rl_ur5e") / "data"
    args = ["--robot", "ur5e", "--task", "peg", "--steps", "120", "--seed", "0", "--set", "episode_s=2",
            "--set", "data.value.episodes=1", "--set", "data.value.train_steps=50", "--set", "data.value.batch_size=64",
            "--no-fsync", "--out", str(out)]
    assert generate.main(args) == 0
    return Dataset(out)


def test_a_camera_robot_needs_the_encoder_and_gets_its_latent_not_pixels():
    with pytest.raises(ValueError, match="camera"):
        observation_for(UR5E, HISTORY, None)
    with pytest.raises(ValueError, match="camera"):
        obs_dim(UR5E, HISTORY)
    assert isinstance(observation_for(GO2, HISTORY, None), FlatObservation)
    model = tiny_model("ur5e")
    observe = observation_for(UR5E, HISTORY, model)
    assert isinstance(observe, EncodedObservation)
    env = make_env("ur5e/peg")
    history = ObservationHistory(UR5E)
    history.reset(env.reset(seed=0))
    model_input = history.model_input()
    x, d = observe(model_input), TINY.latent_dim
    assert x.shape == (1, observe.dim) and observe.dim == d + HISTORY * (UR5E.proprio_dim + UR5E.action_dim) + 3
    torch.testing.assert_close(x[:, :d], model.encode(model_input).z.detach())
    image = model_input["image"].clone()
    image[..., :8, :8] = 255 - image[..., :8, :8]  # another picture, same vectors: only z moves
    y = observe({**model_input, "image": image})
    assert not torch.equal(x[:, :d], y[:, :d]) and torch.equal(x[:, d:], y[:, d:])


def _assert_same_transitions(cached, fresh, rows, atol=0.0):
    a, b = cached.transitions(rows), fresh.transitions(rows)
    for key in ("obs", "action", "reward", "next_obs", "done"):
        torch.testing.assert_close(a[key], b[key], rtol=0.0 if atol == 0.0 else 1e-5, atol=atol, msg=key)


def test_cached_offline_transitions_are_the_ones_read_from_the_store(dataset):
    """The cache observes each row once: a row's observation as a window's first step and as the step after the
    row before must be the same vector, for every transition, episode ends included."""
    cached = OfflineTransitions(dataset, GO2, FlatObservation(GO2, HISTORY), seed=0, cache=True)
    fresh = OfflineTransitions(dataset, GO2, FlatObservation(GO2, HISTORY), seed=0, cache=False)
    starts = fresh.sampler.starts
    assert np.any(~np.isin(starts + 1, starts)), "the data must hold episode ends for this test to mean anything"
    _assert_same_transitions(cached, fresh, starts)
    rng = np.random.default_rng(0)
    _assert_same_transitions(cached, fresh, rng.choice(starts, 50))  # repeats and any order
    with pytest.raises(ValueError, match="transition starts"):
        cached.transitions(np.array([starts[-1] + 1]))  # an episode's last row has no next row


def test_encoded_offline_transitions_are_cached_and_match_encoding_each_batch(ur5e_dataset):
    model = tiny_model("ur5e")
    observe = EncodedObservation(model, HISTORY)
    cached = OfflineTransitions(ur5e_dataset, UR5E, observe, seed=0)  # on by default with the encoder
    fresh = OfflineTransitions(ur5e_dataset, UR5E, observe, seed=0, cache=False)
    assert cached._cache is not None and fresh._cache is None
    _assert_same_transitions(cached, fresh, fresh.sampler.starts, atol=1e-5)


def test_rl_baseline_on_the_ur5e_learns_through_the_frozen_encoder(ur5e_dataset):
    model = tiny_model("ur5e")
    encoder_before = _params(model)
    baseline = RLBaseline("iql", UR5E, ur5e_dataset, IQL, encoder_model=model)
    agent_before = _params(baseline.agent)
    baseline.train_offline()
    baseline.collect(make_env("ur5e/peg"), steps=10, episode_steps=10, seed=0)
    assert baseline.buffer.size == 10 and all(np.isfinite(v) for v in baseline.last_log.values())
    assert not _changed(encoder_before, model), "the world model's encoder is never trained by a baseline"
    assert _changed(agent_before, baseline.agent), "the agent itself learns"
