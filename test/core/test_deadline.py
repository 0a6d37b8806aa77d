"""The deadline-aware sample budget: steps the Gaussian sample count down when plans overrun, back up when not."""

from __future__ import annotations

import math

import pytest
from simdist_core.planning.deadline import SampleBudget, SampleBudgetConfig
from simdist_core.planning.mppi import MPPIPlanner, planner_preset

PERIOD = 0.02  # 50 Hz: the target is 0.6 x 20 ms = 12 ms


def _feed(budget: SampleBudget, plan_s: float, ticks: int) -> int:
    n = budget.num_samples
    for _ in range(ticks):
        n = budget.observe(plan_s)
    return n


def test_overrunning_plans_step_the_count_down_to_the_floor_and_no_further():
    budget = SampleBudget(32, PERIOD, SampleBudgetConfig(window=10, min_samples=2))
    assert _feed(budget, 0.015, 9) == 32  # no decision before a full window
    assert _feed(budget, 0.015, 1) == 24  # floor(32 * 0.75)
    assert _feed(budget, 0.015, 10) == 18
    assert _feed(budget, 0.015, 100) == 2  # the floor, whatever the overrun
    assert budget.num_samples == 2 and budget.reductions == 8 and budget.increases == 0
    assert math.isclose(budget.last_quantile_s, 0.015)


def test_room_to_spare_grows_back_to_the_configured_count_never_above():
    budget = SampleBudget(32, PERIOD, SampleBudgetConfig(window=5))
    _feed(budget, 0.05, 50)
    assert budget.num_samples == 0
    assert _feed(budget, 0.001, 5) == 1  # from 0: at least +1
    assert _feed(budget, 0.001, 1000) == 32
    assert budget.increases >= 5


def test_between_the_thresholds_the_count_holds():
    budget = SampleBudget(32, PERIOD, SampleBudgetConfig(window=5))
    _feed(budget, 0.05, 5)
    held = budget.num_samples
    assert _feed(budget, 0.010, 100) == held  # 10 ms: under 12 ms target, above 0.6 x 12 = 7.2 ms


def test_the_quantile_ignores_rare_spikes_and_bad_times():
    budget = SampleBudget(32, PERIOD, SampleBudgetConfig(window=20, quantile=0.9))
    for i in range(20):
        budget.observe(0.05 if i == 0 else 0.009)  # one spike in 20 is above the 90th percentile's reach
    assert budget.num_samples == 32 and budget.reductions == 0
    for bad in (float("nan"), -1.0, float("inf")):
        budget.observe(bad)
    assert budget.num_samples == 32


@pytest.mark.parametrize(
    "kwargs", [{"target_fraction": 0.0}, {"quantile": 1.5}, {"window": 0}, {"shrink": 1.0}, {"grow_below": 0.0},
               {"min_samples": -1}],
)
def test_config_is_validated(kwargs):
    with pytest.raises(ValueError):
        SampleBudgetConfig(**kwargs)
    with pytest.raises(ValueError):
        SampleBudget(8, 0.0)


def test_the_planner_takes_a_new_count_between_ticks_and_keeps_elites_feasible():
    from test_planner import ORIGIN, QuadraticModel  # the analytic stand-in of the planner tests

    model = QuadraticModel()
    planner = MPPIPlanner(model, planner_preset("cpu", horizon=model.spec.horizon), seed=0)
    assert planner.min_num_samples == 0  # 8 elites fit into the 8 prior candidates
    latent = ORIGIN
    for n in (32, 5, 0, 12):
        assert planner.set_num_samples(n) == n
        result = planner.plan_latent(latent)
        assert result.fallback is None and result.action.shape == (model.spec.action_dim,)
    strict = MPPIPlanner(model, planner_preset("cpu", horizon=model.spec.horizon, num_elites=12), seed=0)
    assert strict.set_num_samples(0) == 4 and strict.cfg.num_samples == 4
