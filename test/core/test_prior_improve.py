"""Improving the policy prior through the model: only the prior changes, the planner's objective rises on held-out
states, the tie to the old prior bounds how far it moves, and the planner's objective is differentiable."""

import copy
import dataclasses

import pytest
import torch
from _train_testlib import TINY_PLANNER, collect, fit_normalizers, tiny_model
from simdist_core.data.sampler import WindowSampler
from simdist_core.planning.mppi import MPPIPlanner
from simdist_core.training.common import OptimConfig
from simdist_core.training.prior_improve import PriorImprovementConfig, improve_prior

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def lived(tmp_path_factory):
    """A tiny model (normalisers fitted) and experience it lived in a real task."""
    torch.set_num_threads(1)
    model = tiny_model()
    data = collect(tmp_path_factory.mktemp("lived"), "go2/flat", model=model, episodes=6, seed=3)
    fit_normalizers(model, data)
    return model, data


def _cfg(**kw):
    base = dict(steps=40, batch_size=16, holdout_fraction=0.25, holdout_windows=48,
                optim=OptimConfig(lr=1e-3, warmup_steps=5, cosine=False))
    return PriorImprovementConfig(**{**base, **kw})


def _planner_cfg(prior_weight):
    return dataclasses.replace(TINY_PLANNER, prior_weight=prior_weight)


def test_only_the_prior_changes_and_its_objective_rises(lived):
    model, data = lived
    before = copy.deepcopy(model.state_dict())
    new, report = improve_prior(model, data, _planner_cfg(1.0), _cfg())
    changed = {k.split(".")[0] for k, v in new.state_dict().items() if not torch.equal(before[k], v)}
    assert changed == {"policy"}
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "the caller's model changed"
    assert report.passed and report.new_objective > report.old_objective
    assert report.new_distance > 0 and 0 < report.n_holdout_windows <= 48 and len(report.history) == 40
    assert not any(p.requires_grad for p in new.parameters())


def test_the_tie_bounds_how_far_the_prior_moves(lived):
    model, data = lived
    _, loose = improve_prior(model, data, _planner_cfg(0.01), _cfg())
    _, tight = improve_prior(model, data, _planner_cfg(100.0), _cfg())
    assert tight.new_distance < loose.new_distance


def test_refuses_a_planner_without_a_tie(lived):
    model, data = lived
    with pytest.raises(ValueError, match="prior_weight > 0"):
        improve_prior(model, data, _planner_cfg(0.0), _cfg())


def test_planner_objective_is_what_plans_are_ranked_by_and_differentiable(lived):
    model, data = lived
    planner = MPPIPlanner(copy.deepcopy(model), _planner_cfg(2.0))
    batch = WindowSampler(data, model.spec, batch_size=1, seed=0).sample()
    with torch.no_grad():
        latent = model.encode({k: v[:, 0] for k, v in batch["obs"].items()})
    h, a = TINY_PLANNER.horizon, model.spec.action_dim
    actions = (0.3 * torch.randn(5, h, a)).requires_grad_(True)
    scored = planner.objective(latent, actions, torch.zeros(h, a))
    plain = planner.objective(latent, actions, None)
    torch.testing.assert_close(scored, plain - 2.0 * actions.pow(2).sum(-1).mean(-1))
    scored.sum().backward()
    assert actions.grad is not None and actions.grad.abs().sum() > 0
