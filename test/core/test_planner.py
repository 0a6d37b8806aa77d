"""MPPI planner: finds a known optimum, is seeded, warm-starts, never emits a non-finite action."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from simdist_core.models import Latent, WorldModel, WorldModelConfig
from simdist_core.planning import PRESETS, MPPIPlanner, PlannerConfig, bench, planner_preset
from simdist_core.planning.bench import random_model_input
from simdist_core.planning.mppi import episode_noise_seed
from simdist_core.robots import GO2
from torch import nn

SMALL = WorldModelConfig(latent_dim=16, width=16, heads=2, ffn=32, encoder_hidden=32, policy_layers=1)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """The CI machine has 2 shared cores: 2 intra-op threads contend with everything else running."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

GOAL = torch.tensor([0.3, -0.2])
OPTIMUM_A0 = 2 * GOAL  # (0.6, -0.4): inside the bounds, so the optimum is interior


class QuadraticModel(nn.Module):
    """Analytic stand-in with the planner's model interface (not a mock: real dynamics and reward).

    Latent = 2-D position of a lagging position servo: z_{k+1} = (z_k + a_k) / 2 (a_k = commanded target);
    reward r_k = -|z_{k+1} - GOAL|^2; value 0. From z0 = 0 the unique optimal plan is a_0 = 2 GOAL
    (reach the goal in one step), then a_k = GOAL (hold it): return 0, every other plan scores < 0.
    """

    def __init__(self, horizon=25, prior=None, nan_reward_if=None):
        super().__init__()
        self.spec = SimpleNamespace(action_dim=2, horizon=horizon)
        self.prior = prior  # (H, A) the policy prior's plan, or zeros
        self.nan_reward_if = nan_reward_if  # callable actions (N, H, A) -> bool mask (N,) of NaN rewards
        self.calls = 0

    def encode(self, obs):
        return Latent(obs["z"], obs["z"][:, None])

    def predict(self, latent, actions):
        self.calls += 1
        z, zs = latent.z.expand(actions.shape[0], -1), []
        for k in range(actions.shape[1]):
            z = 0.5 * (z + actions[:, k])
            zs.append(z)
        return torch.stack(zs, 1)  # (N, H, 2)

    def reward(self, latent, zs, actions):
        r = -(zs - GOAL).pow(2).sum(-1)  # (N, H)
        if self.nan_reward_if is not None:
            r = torch.where(self.nan_reward_if(actions)[:, None], torch.full_like(r, float("nan")), r)
        return r

    def value(self, latent, zs):
        return zs.new_zeros(zs.shape[:2])

    def pi(self, latent):
        prior = torch.zeros(self.spec.horizon, 2) if self.prior is None else self.prior
        return prior[None].expand(latent.z.shape[0], -1, -1)

    def decode_probe(self, z):
        return torch.cat([z, z.new_zeros(*z.shape[:-1], 1)], -1)


ORIGIN = Latent(torch.zeros(1, 2), torch.zeros(1, 1, 2))


def _closed_loop(planner, ticks):
    """Run the planner on the stand-in system itself: execute each first action, re-plan from the new state."""
    z, results, distances = torch.zeros(1, 2), [], []
    for _ in range(ticks):
        results.append(planner.plan_latent(Latent(z, z[:, None])))
        z = 0.5 * (z + torch.from_numpy(results[-1].action)[None])
        distances.append(float((z - GOAL).abs().max()))
    return results, distances


@pytest.mark.parametrize("seed", [0, 1])
def test_reference_mppi_finds_the_known_optimum_of_a_quadratic_model(seed):
    results, distances = _closed_loop(MPPIPlanner(QuadraticModel(), planner_preset("reference"), seed=seed), 15)
    first = results[0]
    assert first.fallback is None and first.action.dtype == np.float32
    # from scratch (no prior, no warm start) the first action is within 0.2 of (0.6, -0.4) (a zero plan is 0.6 off)
    assert np.abs(first.action - OPTIMUM_A0.numpy()).max() < 0.2, first.action
    assert np.abs(first.mean[2:10] - GOAL.numpy()).max() < 0.3  # then hold: a_k = GOAL
    assert -0.1 < first.value <= 0  # the optimal return is 0
    # closed loop: the servo is held at the goal (it started 0.3 away)
    assert np.mean(distances[-8:]) < 0.05, distances
    np.testing.assert_allclose(first.probe[:, :2], first.latents, atol=1e-6)


def test_zero_prior_small_budget_cannot_find_it():
    """The same check fails for the latency-bound cpu budget without a useful prior: the test can fail."""
    _, distances = _closed_loop(MPPIPlanner(QuadraticModel(), planner_preset("cpu"), seed=0), 15)
    assert np.mean(distances[-8:]) > 0.1


@pytest.mark.parametrize("preset", ["reference", "cpu", "prior"])
def test_policy_prior_samples_are_used(preset):
    # a perfect prior is among the candidates, so the plan keeps it (exactly with one elite, nearly with a preset)
    optimum = GOAL.repeat(25, 1)
    optimum[0] = OPTIMUM_A0
    cfg = PlannerConfig(num_samples=0, num_pi_samples=4, iterations=1, num_elites=1)
    result = MPPIPlanner(QuadraticModel(prior=optimum), cfg, seed=0).plan_latent(ORIGIN)
    np.testing.assert_allclose(result.action, OPTIMUM_A0.numpy(), atol=1e-6)
    first = MPPIPlanner(QuadraticModel(prior=optimum), planner_preset(preset), seed=0).plan_latent(ORIGIN)
    assert np.abs(first.action - OPTIMUM_A0.numpy()).max() < 0.1


def test_prior_preset_executes_the_better_of_prior_and_warm_start():
    optimum = GOAL.repeat(25, 1)
    optimum[0] = OPTIMUM_A0
    model = QuadraticModel(prior=optimum)
    planner = MPPIPlanner(model, planner_preset("prior"), seed=0)
    first = planner.plan_latent(ORIGIN)  # the prior's plan beats the zero warm start
    np.testing.assert_allclose(first.action, OPTIMUM_A0.numpy(), atol=1e-6)
    model.prior = torch.zeros(25, 2)  # the prior turns bad: last tick's plan (now "hold the goal") is kept
    at_goal = Latent(GOAL[None].clone(), GOAL[None, None].clone())
    second = planner.plan_latent(at_goal)
    np.testing.assert_allclose(second.action, GOAL.numpy(), atol=1e-6)
    assert model.calls == 2 * 2  # per tick: prior + warm start in one rollout, then the chosen mean; no sampling


def test_prior_candidates_are_rolled_out_once_per_tick():
    model = QuadraticModel()
    cfg = PlannerConfig(num_samples=8, num_pi_samples=4, iterations=3, num_elites=4)
    MPPIPlanner(model, cfg).plan_latent(ORIGIN)
    assert model.calls == 3 + 1  # one batch per iteration (the first also holds the prior), the final mean


def test_one_batch_predicts_what_its_parts_predict_alone():
    # Why the first iteration may roll the prior candidates out together with its Gaussian ones: candidates do
    # not interact in the model, so plans equal the two-pass planner's up to float rounding (measured on the
    # shipped Go2 model over 40 ticks: max |action difference| 3.5e-6).
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL).eval()
    with torch.inference_mode():
        latent = model.encode(random_model_input(GO2))
    acts = torch.rand(13, 25, GO2.action_dim) * 2 - 1
    with torch.inference_mode():
        whole = model.predict(latent, acts)
        parts = torch.cat([model.predict(latent, acts[:5]), model.predict(latent, acts[5:])])
    torch.testing.assert_close(whole, parts, rtol=1e-5, atol=1e-5)


def _small_planner(seed, **overrides):
    torch.manual_seed(1)
    model = WorldModel(GO2, SMALL)
    return MPPIPlanner(model, planner_preset("cpu", **overrides), seed=seed), model


def test_seeded_determinism_and_reset():
    obs = random_model_input(GO2)
    a, _ = _small_planner(seed=7)
    b, _ = _small_planner(seed=7)
    c, _ = _small_planner(seed=8)
    ra, rb, rc = a.plan(obs), b.plan(obs), c.plan(obs)
    np.testing.assert_array_equal(ra.mean, rb.mean)
    assert not np.array_equal(ra.mean, rc.mean)
    # warm start: the second tick starts from the shifted mean; reset() forgets it
    assert a._prev_mean is not None
    a.reset()
    assert a._prev_mean is None


def test_a_reseeding_reset_makes_the_next_plans_independent_of_the_earlier_ones():
    obs = random_model_input(GO2)
    fresh, _ = _small_planner(seed=7)
    used, _ = _small_planner(seed=7)
    for _ in range(3):
        used.plan(obs)
    used.reset()  # warm start forgotten, noise continues: not the fresh planner's plan
    assert not np.array_equal(used.plan(obs).mean, fresh.plan(obs).mean)
    fresh.reset(noise_seed=episode_noise_seed(7, 3))
    used.reset(noise_seed=episode_noise_seed(7, 3))
    for _ in range(2):  # both restart from the same seed: identical plans, tick after tick
        np.testing.assert_array_equal(used.plan(obs).mean, fresh.plan(obs).mean)
    fresh.reset(noise_seed=episode_noise_seed(7, 3))
    used.reset(noise_seed=episode_noise_seed(7, 4))  # the next episode: noise of its own
    assert not np.array_equal(used.plan(obs).mean, fresh.plan(obs).mean)


def test_episode_noise_seeds_differ_between_episodes_and_planner_seeds():
    seeds = {episode_noise_seed(s, k) for s in range(3) for k in range(100)}
    assert len(seeds) == 300 and all(0 <= x < 2**63 for x in seeds)
    assert episode_noise_seed(1, 5) == episode_noise_seed(1, 5)


def test_plan_from_observation_shapes_and_bounds():
    planner, model = _small_planner(seed=0)
    result = planner.plan(random_model_input(GO2))
    h, a = planner.cfg.horizon, GO2.action_dim
    assert result.fallback is None
    assert result.action.shape == (a,) and result.action.dtype == np.float32
    assert np.all(np.abs(result.action) <= 1) and np.all(np.abs(result.mean) <= 1)
    assert result.mean.shape == (h, a) and result.latents.shape == (h, SMALL.latent_dim)
    assert result.probe.shape == (h, 3) and np.isfinite(result.value)


def test_skipping_the_mean_rollout_changes_no_plan_and_it_can_be_predicted_afterwards():
    """``predict_mean=False`` (the planner node's tick): same actions tick after tick; ``predict_last_mean`` then
    gives exactly what the plan would have carried."""
    obs = random_model_input(GO2)
    full, lean = _small_planner(seed=3)[0], _small_planner(seed=3)[0]
    with pytest.raises(RuntimeError, match="no plan"):
        lean.predict_last_mean()
    for _ in range(3):
        a, b = full.plan(obs), lean.plan(obs, predict_mean=False)
        np.testing.assert_array_equal(a.action, b.action)
        np.testing.assert_array_equal(a.mean, b.mean)
        assert b.latents is None and b.probe is None and np.isnan(b.value)
        latents, probe, value = lean.predict_last_mean()
        np.testing.assert_array_equal(latents, a.latents)
        np.testing.assert_array_equal(probe, a.probe)
        assert value == a.value
    lean.reset()
    with pytest.raises(RuntimeError, match="no plan"):
        lean.predict_last_mean()


def test_partly_non_finite_scores_are_dropped_not_executed():
    nan_if = lambda actions: actions[:, 0, 0] > 0.0  # noqa: E731  candidates that push +x first are NaN
    planner = MPPIPlanner(QuadraticModel(nan_reward_if=nan_if), planner_preset("reference"), seed=0)
    result = planner.plan_latent(ORIGIN)
    assert result.fallback is None and result.num_nonfinite > 0
    assert np.isfinite(result.action).all() and result.action[0] <= 0.0


@pytest.mark.parametrize("case", ["all_rewards_nan", "nan_latent", "nan_weights"])
def test_non_finite_model_outputs_never_reach_the_action(case):
    if case == "all_rewards_nan":
        planner = MPPIPlanner(QuadraticModel(nan_reward_if=lambda a: torch.ones(a.shape[0], dtype=torch.bool)))
        result = planner.plan_latent(ORIGIN)
    elif case == "nan_latent":
        planner = MPPIPlanner(QuadraticModel())
        planner.plan_latent(ORIGIN)
        result = planner.plan_latent(Latent(torch.full((1, 2), float("nan")), torch.zeros(1, 1, 2)))
        assert planner._prev_mean is None  # a fallback also drops the warm start
    else:
        planner, model = _small_planner(seed=0)
        with torch.no_grad():
            model.dynamics.action_embed.weight[0, 0] = float("nan")
        result = planner.plan(random_model_input(GO2))
    assert result.fallback is not None
    np.testing.assert_array_equal(result.action, np.zeros_like(result.action))
    assert np.isfinite(result.mean).all() and np.isfinite(result.latents).all()


def test_swap_model_between_ticks():
    planner, _ = _small_planner(seed=0)
    obs = random_model_input(GO2)
    planner.plan(obs)
    torch.manual_seed(2)
    other = WorldModel(GO2, SMALL)
    planner.swap_model(other)
    assert planner.model is other and planner._prev_mean is not None  # warm start kept
    assert planner.plan(obs).fallback is None
    with pytest.raises(ValueError, match="action_dim"):
        planner.swap_model(QuadraticModel())


def test_config_validation_and_presets():
    ref = PRESETS["reference"]
    assert (ref.horizon, ref.num_samples, ref.num_pi_samples, ref.iterations, ref.num_elites) == (25, 450, 22, 8, 64)
    assert (ref.temperature, ref.max_std, ref.min_std, ref.discount) == (0.25, 2.0, 0.05, 0.99)
    with pytest.raises(ValueError, match="num_elites"):
        PlannerConfig(num_samples=10, num_pi_samples=2, num_elites=13)
    with pytest.raises(ValueError, match="min_std"):
        PlannerConfig(min_std=3.0)
    with pytest.raises(KeyError, match="valid"):
        planner_preset("gpu")
    with pytest.raises(ValueError, match="horizon"):
        MPPIPlanner(QuadraticModel(horizon=10), PlannerConfig(horizon=25))
    for bad in (-0.1, float("nan")):
        with pytest.raises(ValueError, match="prior_weight"):
            PlannerConfig(prior_weight=bad)
    assert all(p.prior_weight == 0.0 for p in PRESETS.values()), "the shipped presets keep the plain objective"


def _away_prior():
    """A prior plan far from the optimum (-0.5, +0.5 every step: the optimum is near (0.3, -0.2))."""
    return torch.tensor([-0.5, 0.5]).repeat(25, 1)


@pytest.mark.parametrize("num_pi_samples", [4, 0])
def test_prior_weight_zero_is_the_plain_objective_bit_for_bit(num_pi_samples):
    """prior_weight=0 plans exactly what the planner without the field plans (same seed, tick after tick)."""
    kw = dict(num_samples=16, num_pi_samples=num_pi_samples, iterations=3, num_elites=4, max_std=0.5)
    plain = MPPIPlanner(QuadraticModel(prior=_away_prior()), PlannerConfig(**kw), seed=3)
    zero = MPPIPlanner(QuadraticModel(prior=_away_prior()), PlannerConfig(**kw, prior_weight=0.0), seed=3)
    weighted = MPPIPlanner(QuadraticModel(prior=_away_prior()), PlannerConfig(**kw, prior_weight=1.0), seed=3)
    a, b, c = _closed_loop(plain, 4)[0], _closed_loop(zero, 4)[0], _closed_loop(weighted, 4)[0]
    for ra, rb in zip(a, b, strict=True):
        np.testing.assert_array_equal(ra.mean, rb.mean)
        assert ra.value == rb.value
    assert not np.array_equal(a[0].mean, c[0].mean), "a weight does change the plan"


def test_planned_mean_moves_toward_the_prior_as_the_weight_grows():
    """On the quadratic model, with a prior plan away from the optimum: the larger the weight, the closer the plan."""
    prior = _away_prior()
    distances, values = [], []
    for weight in (0.0, 1.0, 10.0, 100.0, 1000.0):
        cfg = planner_preset("reference", prior_weight=weight)
        result = MPPIPlanner(QuadraticModel(prior=prior), cfg, seed=0).plan_latent(ORIGIN)
        distances.append(float((torch.from_numpy(result.mean) - prior).pow(2).sum(-1).mean()))
        values.append(result.value)
    assert all(d1 > d2 for d1, d2 in zip(distances[:-1], distances[1:], strict=True)), distances
    assert distances[-1] < 0.05 * distances[0], distances  # a large weight nearly executes the prior's plan
    # the model's return (reported without the penalty) is given up for the closeness: best with no weight
    assert values[0] == max(values) and values[-1] < values[0] - 0.5, values


def test_prior_weight_applies_to_the_prior_and_warm_start_candidates_too():
    """With no Gaussian samples the pool is the prior's plan and the warm start: a weight turns the choice."""
    optimum = GOAL.repeat(25, 1)
    optimum[0] = OPTIMUM_A0
    cfg = dict(num_samples=0, num_pi_samples=1, iterations=1, num_elites=1)
    # tick 1 executes the optimum (the prior); tick 2 the prior turns bad but last tick's plan is better
    for weight, expect_prior in ((0.0, False), (100.0, True)):
        model = QuadraticModel(prior=optimum)
        planner = MPPIPlanner(model, PlannerConfig(**cfg, prior_weight=weight), seed=0)
        planner.plan_latent(ORIGIN)
        model.prior = _away_prior()
        second = planner.plan_latent(Latent(GOAL[None].clone(), GOAL[None, None].clone()))
        expected = _away_prior()[0] if expect_prior else GOAL
        np.testing.assert_allclose(second.action, expected.numpy(), atol=1e-6)


def test_bench_command_writes_its_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--preset", "cpu", "--ticks", "2", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    for key in ("preset", "device", "horizon", "samples", "iterations", "p50_ms", "p99_ms", "node_tick_p99_ms", "ticks",
                "multistep_ms", "autoregressive_ms", "torch_threads", "machine"):
        assert key in record
    assert record["ticks"] == 2 and record["p99_ms"] >= record["p50_ms"] > 0
    assert "random init" in capsys.readouterr().out


def test_sampled_rollouts_show_the_last_plans_candidates_without_changing_plans():
    """``sampled_rollouts(K)``: K candidates of the last iteration, best first; plans stay the same as without it."""
    plain, shown = (MPPIPlanner(QuadraticModel(), planner_preset("cpu"), seed=4) for _ in range(2))
    probes, returns = shown.sampled_rollouts(6)
    assert probes.shape == (0, 25, 3) and returns.shape == (0,), "nothing planned yet"
    for _ in range(3):
        a, b = plain.plan_latent(ORIGIN), shown.plan_latent(ORIGIN)
        np.testing.assert_array_equal(a.mean, b.mean)  # same sampling stream, tick after tick
        probes, returns = shown.sampled_rollouts(6)
        assert probes.shape == (6, 25, 3) and np.all(np.diff(returns) <= 0), "best first"
        # each probe is the model's decoding of that candidate's predicted latents (stand-in: (z, 0))
        assert np.all(probes[..., 2] == 0.0) and not np.allclose(probes[0], probes[-1])
    shown.reset()
    assert shown.sampled_rollouts(6)[0].shape[0] == 0, "a reset forgets what the last plan considered"
    few = MPPIPlanner(QuadraticModel(), PlannerConfig(num_samples=3, num_pi_samples=0, iterations=1, num_elites=1),
                      seed=0)
    few.plan_latent(ORIGIN)
    assert few.sampled_rollouts(50)[0].shape[0] == 4  # at most every candidate (3 samples + the warm start)


def test_plan_joint_targets_use_the_commands_conversion():
    from simdist_core.planning.targets import plan_joint_targets
    from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD, JOINT_NAMES
    from simdist_core.sim.go2_lowlevel import Go2LowLevel

    mean = np.random.default_rng(0).uniform(-1, 1, (25, 12))
    names, targets = plan_joint_targets("go2", mean)
    assert names == JOINT_NAMES and targets.shape == (25, 12)
    for row, target in zip(mean, targets, strict=True):  # step by step, what the low level sends for that action
        np.testing.assert_array_equal(target, Go2LowLevel().targets(row))
    np.testing.assert_array_equal(plan_joint_targets("go2", np.zeros((3, 12)))[1], np.tile(DEFAULT_POSE_RAD, (3, 1)))
    assert plan_joint_targets("ur5e", np.zeros((25, 4))) is None  # a Cartesian tool step, not a joint target


def test_committed_actions_start_every_candidate_and_the_plan_acts_after_them():
    # One action is already in flight: the servo will move to z1 = (0 + c) / 2 before this plan's action acts,
    # so the action to send is the one that reaches the goal from z1 (2 GOAL - z1), not from z0 (2 GOAL).
    c = np.array([[0.2, 0.0]], np.float32)
    z1 = 0.5 * torch.from_numpy(c[0])
    result = MPPIPlanner(QuadraticModel(), planner_preset("reference"), seed=0).plan_latent(ORIGIN, committed=c)
    np.testing.assert_array_equal(result.mean[0], c[0])
    np.testing.assert_array_equal(result.action, result.mean[1])
    assert np.abs(result.action - (2 * GOAL - z1).numpy()).max() < 0.2, result.action
    with pytest.raises(ValueError, match="committed"):
        MPPIPlanner(QuadraticModel(), planner_preset("cpu")).plan_latent(ORIGIN, committed=np.zeros((1, 3)))
    with pytest.raises(ValueError, match="finite"):
        MPPIPlanner(QuadraticModel(), planner_preset("cpu")).plan_latent(ORIGIN, committed=np.full((1, 2), np.nan))


@pytest.mark.parametrize("delay", [1, 2])
def test_compensating_a_delay_holds_the_servo_closer_to_the_goal(delay):
    """The stand-in system run with its commands delayed: planning for the state they will act on does better."""

    def run(compensate):
        planner = MPPIPlanner(QuadraticModel(), planner_preset("reference"), seed=0)
        z, in_flight, errors = torch.zeros(1, 2), [np.zeros(2, np.float32)] * delay, []
        for _ in range(20):
            committed = np.stack(in_flight) if compensate else None
            in_flight.append(planner.plan_latent(Latent(z, z[:, None]), committed=committed).action)
            z = 0.5 * (z + torch.from_numpy(in_flight.pop(0))[None])
            errors.append(float((z - GOAL).abs().sum()))
        return float(np.mean(errors))

    assert run(compensate=True) < 0.8 * run(compensate=False)  # measured 0.74x (delay 1), 0.66x (delay 2)


class ValuedModel(QuadraticModel):
    """The quadratic stand-in with a terminal value: ``value_fn`` of the end position (N, 1, 2) -> (N, 1)."""

    def __init__(self, value_fn, **kw):
        super().__init__(**kw)
        self.value_fn = value_fn

    def value(self, latent, zs):
        return self.value_fn(zs)


def _lure(zs):
    """A value that is optimistic where the reward says nothing good: large for end positions left of x = -0.3."""
    return 200.0 * torch.relu(-zs[..., 0] - 0.3)


def test_a_capped_terminal_value_cannot_lure_the_search_beyond_the_prior_plans_value():
    """Uncapped, a value that is optimistic where the reward says nothing good makes the plan end there (it walks to
    the goal, then dashes left for the terminal value). Capped at the value of the prior's plan (zeros: it ends at
    the origin, value 0) every lure is cut to 0: the plan ends at the goal, and the capped planner plans exactly what
    the planner without a value plans, tick after tick."""
    kw = dict(num_samples=64, num_pi_samples=4, iterations=4, num_elites=8, max_std=1.0)
    plans = {name: MPPIPlanner(ValuedModel(_lure), PlannerConfig(**kw, **extra), seed=0).plan_latent(ORIGIN)
             for name, extra in (("lured", {}), ("capped", dict(terminal_value_cap=True)))}
    assert plans["lured"].latents[-1, 0] < -0.3 < 0.0 < plans["capped"].latents[-1, 0], plans  # GOAL x is +0.3
    capped = _closed_loop(MPPIPlanner(ValuedModel(_lure), PlannerConfig(**kw, terminal_value_cap=True), seed=0), 6)
    no_value = _closed_loop(MPPIPlanner(ValuedModel(_lure), PlannerConfig(**kw, terminal_value=False), seed=0), 6)
    for a, b in zip(capped[0], no_value[0], strict=True):
        np.testing.assert_array_equal(a.mean, b.mean)


def test_a_cap_leaves_values_below_the_prior_plans_untouched():
    """Where no plan's end is valued above the prior's (value -|z|^2, the prior's zero plan ends at its maximum), the
    capped planner plans exactly what the uncapped one plans, tick after tick: the value can still veto."""
    kw = dict(num_samples=16, num_pi_samples=4, iterations=3, num_elites=4, max_std=0.5)
    value = lambda zs: -zs.pow(2).sum(-1)  # noqa: E731
    plain = MPPIPlanner(ValuedModel(value), PlannerConfig(**kw), seed=5)
    capped = MPPIPlanner(ValuedModel(value), PlannerConfig(**kw, terminal_value_cap=True), seed=5)
    for a, b in zip(_closed_loop(plain, 4)[0], _closed_loop(capped, 4)[0], strict=True):
        np.testing.assert_array_equal(a.mean, b.mean)
        assert a.value == b.value
    no_value = MPPIPlanner(ValuedModel(value), PlannerConfig(**kw, terminal_value=False), seed=5)
    assert not np.array_equal(_closed_loop(no_value, 1)[0][0].mean, _closed_loop(capped, 1)[0][0].mean)


def test_the_capped_objective_caps_by_the_anchor_and_needs_one():
    planner = MPPIPlanner(ValuedModel(_lure), PlannerConfig(num_samples=4, num_pi_samples=1, iterations=1,
                                                            num_elites=1, terminal_value_cap=True))
    left = torch.full((1, 25, 2), -1.0)  # ends at (-1, -1): lure value 140 uncapped
    capped = planner.objective(ORIGIN, left, anchor=torch.zeros(25, 2))
    planner.cfg = PlannerConfig(num_samples=4, num_pi_samples=1, iterations=1, num_elites=1)
    uncapped = planner.objective(ORIGIN, left, anchor=torch.zeros(25, 2))
    assert float(uncapped - capped) > 100.0  # the lure's value, discounted, is gone (the prior penalty is 0 here)
    planner.cfg = PlannerConfig(num_samples=4, num_pi_samples=1, iterations=1, num_elites=1, terminal_value_cap=True)
    with pytest.raises(ValueError, match="anchor"):
        planner.objective(ORIGIN, left, anchor=None)
    for bad in (dict(num_pi_samples=0), dict(terminal_value=False)):
        with pytest.raises(ValueError, match="terminal_value_cap"):
            PlannerConfig(**{**dict(num_samples=4, num_pi_samples=1, iterations=1, num_elites=1), **bad},
                          terminal_value_cap=True)


class DeadbeatPriorModel(QuadraticModel):
    """The quadratic stand-in with a prior that reads the state: reach the goal in one step (a = 2 GOAL - z), then
    hold it (a = GOAL) — the right plan from whatever latent it is asked from."""

    def pi(self, latent):
        first = (2 * GOAL - latent.z)[:, None]  # (B, 1, 2)
        return torch.cat([first, GOAL.expand(latent.z.shape[0], self.spec.horizon - 1, 2)], 1)


def test_a_tied_planner_compensating_a_delay_follows_the_prior_from_the_state_after_the_commands_in_flight():
    tied = dict(num_samples=16, num_pi_samples=1, iterations=1, num_elites=4, prior_weight=1e6, pi_noise_std=0.0)
    committed = np.array([[-0.4, 0.2]], np.float32)  # in flight: the state the next command meets is (z0 + c) / 2
    after = 0.5 * torch.from_numpy(committed[0])
    plans = {flag: MPPIPlanner(DeadbeatPriorModel(), PlannerConfig(**tied, prior_after_committed=flag), seed=0)
             .plan_latent(ORIGIN, committed=committed).action for flag in (False, True)}
    # From the observed state the prior's step 1 is "hold the goal", though the robot will not be there yet.
    np.testing.assert_allclose(plans[False], GOAL.numpy(), atol=1e-3)
    np.testing.assert_allclose(plans[True], (2 * GOAL - after).numpy(), atol=1e-3)

    def run(flag, delay=2):
        planner = MPPIPlanner(DeadbeatPriorModel(), PlannerConfig(**tied, prior_after_committed=flag), seed=0)
        z, in_flight, errors = torch.zeros(1, 2), [np.zeros(2, np.float32)] * delay, []
        for _ in range(20):
            in_flight.append(planner.plan_latent(Latent(z, z[:, None]), committed=np.stack(in_flight)).action)
            z = 0.5 * (z + torch.from_numpy(in_flight.pop(0))[None])
            errors.append(float((z - GOAL).abs().sum()))
        return float(np.mean(errors))

    assert run(True) < 0.8 * run(False)  # the delayed servo, planned around with each prior (measured 0.67x)


class FantasyModel(QuadraticModel):
    """The servo, except that a command whose x is below -0.5 puts it on the goal at once: what a finetuned model
    might come to believe about actions its new data never tried."""

    def predict(self, latent, actions):
        z, zs = latent.z.expand(actions.shape[0], -1), []
        for k in range(actions.shape[1]):
            z = torch.where(actions[:, k, :1] < -0.5, GOAL.expand_as(z), 0.5 * (z + actions[:, k]))
            zs.append(z)
        return torch.stack(zs, 1)


FAR = Latent(torch.tensor([[-1.5, 0.0]]), torch.tensor([[[-1.5, 0.0]]]))  # the goal is out of one step's reach


@pytest.mark.parametrize("how", ["min", "mean"])
def test_reference_returns_change_no_plan_until_a_model_is_swapped_in(how):
    kw = dict(num_samples=32, num_pi_samples=4, iterations=3, num_elites=8, max_std=1.0)
    plain = MPPIPlanner(QuadraticModel(), PlannerConfig(**kw), seed=3)
    pessimist = MPPIPlanner(QuadraticModel(), PlannerConfig(**kw, reference_returns=how), seed=3)
    for a, b in zip(_closed_loop(plain, 4)[0], _closed_loop(pessimist, 4)[0], strict=True):
        np.testing.assert_array_equal(a.mean, b.mean)


@pytest.mark.parametrize("how", ["min", "mean"])
def test_reference_returns_rank_each_plan_by_the_lower_or_the_mean_of_the_two_returns(how):
    cfg = PlannerConfig(num_samples=8, num_pi_samples=2, iterations=1, num_elites=4, reference_returns=how)
    actions = torch.rand(64, cfg.horizon, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1
    fantasy, servo = FantasyModel(), QuadraticModel()
    both = MPPIPlanner(fantasy, cfg, reference=servo).objective(FAR, actions, None)
    alone = [MPPIPlanner(m, PlannerConfig(**{**vars(cfg), "reference_returns": ""})).objective(FAR, actions, None)
             for m in (fantasy, servo)]
    torch.testing.assert_close(both, torch.minimum(*alone) if how == "min" else 0.5 * (alone[0] + alone[1]))
    assert (alone[0] > alone[1]).any()  # the fantasy does score some plans higher: the minimum is not trivial


def test_the_pessimistic_reference_keeps_the_search_off_what_only_the_finetuned_dynamics_believe():
    """Plain MPPI on the fantasy model commands x < -0.5 (it believes that reaches the goal); ranked by the lower
    return of it and the reference servo, those plans rank by the servo's low return, and the planner drives toward
    the goal (x > 0.5) as the servo alone would. The same holds when the fantasy arrives as a hot swap."""
    kw = dict(num_samples=64, num_pi_samples=4, iterations=4, num_elites=8, max_std=1.0)
    fooled = MPPIPlanner(FantasyModel(), PlannerConfig(**kw), seed=0).plan_latent(FAR)
    built = MPPIPlanner(FantasyModel(), PlannerConfig(**kw, reference_returns="min"), seed=0,
                        reference=QuadraticModel()).plan_latent(FAR)
    swapped_planner = MPPIPlanner(QuadraticModel(), PlannerConfig(**kw, reference_returns="min"), seed=0)
    swapped_planner.swap_model(FantasyModel())
    swapped = swapped_planner.plan_latent(FAR)
    assert fooled.action[0] < -0.5 < 0.5 < built.action[0], (fooled.action, built.action)
    np.testing.assert_array_equal(built.mean, swapped.mean)


def test_reference_returns_refuse_a_model_that_differs_outside_its_dynamics():
    planner, model = _small_planner(seed=0, reference_returns="min")
    adapted = WorldModel(GO2, SMALL)
    adapted.load_state_dict(model.state_dict())
    with torch.no_grad():
        next(adapted.dynamics.parameters()).add_(0.1)
    planner.swap_model(adapted)  # dynamics only: fine
    obs = random_model_input(GO2)
    assert planner.plan(obs).fallback is None
    before = {k: v.clone() for k, v in planner.reference.state_dict().items()}
    with torch.no_grad():  # the planner node loads the next update into the retired model's memory
        next(model.dynamics.parameters()).add_(1.0)
    for k, v in planner.reference.state_dict().items():  # the reference is the model the planner started with
        torch.testing.assert_close(v, before[k], rtol=0, atol=0)
    assert not torch.equal(next(planner.reference.dynamics.parameters()), next(model.dynamics.parameters()))
    retrained = WorldModel(GO2, SMALL)
    retrained.load_state_dict(adapted.state_dict())
    with torch.no_grad():
        next(retrained.encoder.parameters()).add_(0.1)
    with pytest.raises(ValueError, match="dynamics only"):
        planner.swap_model(retrained)
    assert planner.model is adapted  # the refused model never ran
    with pytest.raises(ValueError, match="dynamics only"):
        MPPIPlanner(retrained, planner_preset("cpu", reference_returns="min"), reference=adapted)
    MPPIPlanner(retrained, planner_preset("cpu"), reference=adapted)  # without the pessimism the reference is unused


def test_reference_returns_must_be_a_known_rule():
    with pytest.raises(ValueError, match="reference_returns"):
        PlannerConfig(reference_returns="max")
