"""The simulated robot's pace follows what the control loop keeps up with."""

import pytest
from simdist_core.sim.pacing import RealTimeGovernor


def _window(gov, share, steps=100):
    fresh = int(round(share * steps))
    return gov.record(steps, fresh)


def test_a_loop_that_keeps_up_runs_at_the_factor_asked_for():
    gov = RealTimeGovernor(ceiling=1.0, floor=0.25, window_steps=100)
    for _ in range(20):
        assert _window(gov, 1.0) == 1.0
    assert gov.reductions == 0


def test_missed_commands_slow_the_clock_down_to_the_floor_and_it_recovers_when_the_loop_keeps_up():
    gov = RealTimeGovernor(ceiling=1.0, floor=0.25, window_steps=100)
    assert _window(gov, 0.85) == pytest.approx(0.7)
    assert _window(gov, 0.85) == pytest.approx(0.49)
    for _ in range(10):
        _window(gov, 0.5)
    assert gov.rtf == 0.25, "never below the floor"
    assert _window(gov, 0.97) == 0.25, "between keep and recover: hold"
    for _ in range(100):
        _window(gov, 1.0)
    assert gov.rtf == 1.0, "back up to the factor asked for, never above it"


def test_windows_start_with_the_first_command():
    """Before the planner is up nothing answers the robot: that is not a loop falling behind."""
    gov = RealTimeGovernor(ceiling=1.0, floor=0.25, window_steps=100)
    for _ in range(50):
        gov.record(10, 0)
    assert gov.rtf == 1.0 and gov.reductions == 0
    gov.record(1, 1)
    _window(gov, 0.0, steps=99)
    assert gov.rtf < 1.0 and gov.reductions == 1


def test_a_new_ceiling_caps_the_pace():
    gov = RealTimeGovernor(ceiling=1.0, floor=0.25, window_steps=10)
    gov.set_ceiling(0.2)
    assert gov.rtf == 0.2 and gov.floor == 0.2
    for _ in range(10):
        _window(gov, 1.0, steps=10)
    assert gov.rtf == 0.2


@pytest.mark.parametrize("kwargs", [dict(ceiling=1.0, floor=0.0), dict(ceiling=0.5, floor=1.0),
                                    dict(ceiling=1.0, floor=0.5, keep=0.99, recover=0.9),
                                    dict(ceiling=1.0, floor=0.5, decrease=1.0)])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        RealTimeGovernor(**kwargs)


def test_bad_counts_are_refused():
    gov = RealTimeGovernor(ceiling=1.0, floor=0.25)
    with pytest.raises(ValueError):
        gov.record(5, 6)
