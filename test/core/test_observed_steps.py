"""StepPairer: the encoder's observation stream -> records (the live replay path)."""

import numpy as np
import pytest
from simdist_core.data.observed_steps import ObservedStep, StepPairer
from simdist_core.robots import GO2

DT_NS = int(round(GO2.control_dt * 1e9))


def _step(k, *, t_ns=None, episode_start=False, episode=1):
    obs = {"proprio": np.full(GO2.proprio_dim, k, np.float32), "command": np.array([0.5, 0, 0], np.float32),
           "height_map": np.full(GO2.height_map_shape, -0.3, np.float32)}
    return ObservedStep(obs=obs, action_before=np.full(GO2.action_dim, 0.01 * k, np.float32),
                        t_ns=1_000_000_000 + k * DT_NS if t_ns is None else t_ns, episode_start=episode_start,
                        episode=episode)


def test_each_record_is_an_observation_with_the_action_executed_after_it():
    pairer = StepPairer(GO2, max_gap_s=1.5 * GO2.control_dt, first_episode_id=7)
    records = [pairer.on_step(_step(k, episode_start=k == 0)) for k in range(5)]
    assert records[0] is None  # nothing to pair the first observation with yet
    for k, record in enumerate(records[1:], start=1):  # observation k-1, action a_{k-1} (carried by observation k)
        np.testing.assert_array_equal(record["obs/proprio"], np.full(GO2.proprio_dim, k - 1, np.float32))
        np.testing.assert_array_equal(record["action"], np.full(GO2.action_dim, 0.01 * k, np.float32))
        assert record["t_ns"] == 1_000_000_000 + (k - 1) * DT_NS and record["episode_id"] == 7
    assert pairer.steps == 4 and pairer.boundaries["first"] == 1


@pytest.mark.parametrize("make_next, reason", [
    (lambda k: _step(k, episode_start=True), "encoder_restart"),
    (lambda k: _step(k, episode=2), "episode_changed"),
    (lambda k: _step(k, t_ns=1_000_000_000 + (k - 1) * DT_NS), "stamp_not_increasing"),
    (lambda k: _step(k + 1), "gap"),  # one step skipped: a record must stand for exactly one period
])
def test_no_record_spans_an_episode_boundary(make_next, reason):
    pairer = StepPairer(GO2, max_gap_s=1.5 * GO2.control_dt)
    for k in range(3):
        pairer.on_step(_step(k))
    first = make_next(3)
    assert pairer.on_step(first) is None, "the last observation before a boundary is not recorded"
    assert pairer.boundaries[reason] == 1
    after = [pairer.on_step(_step(i, t_ns=first.t_ns + i * DT_NS, episode=first.episode)) for i in (1, 2)]
    np.testing.assert_array_equal(after[0]["obs/proprio"], first.obs["proprio"])
    assert [int(r["episode_id"]) for r in after] == [1, 1], "the records after the boundary belong to the next one"


def test_a_hole_breaks_the_episode_and_an_empty_episode_uses_no_id():
    pairer = StepPairer(GO2, max_gap_s=1.5 * GO2.control_dt)
    assert pairer.on_step(_step(0)) is None
    pairer.break_episode()  # a malformed message between observation 0 and 1
    assert pairer.on_step(_step(1)) is None and pairer.boundaries["hole"] == 1
    record = pairer.on_step(_step(2))
    assert record is not None and record["episode_id"] == 0, "no record was made before the hole: id 0 is unused"


def test_max_gap_must_be_positive():
    with pytest.raises(ValueError, match="max_gap_s"):
        StepPairer(GO2, max_gap_s=0.0)
