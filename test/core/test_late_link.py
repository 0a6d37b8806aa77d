"""The emulated late command link and the in-flight commands the planner plans around (shared with the node)."""

from types import SimpleNamespace

import numpy as np
import pytest
from simdist_core.eval.closed_loop import EvalConfig
from simdist_core.eval.late_link import LINK_TIMINGS, LateLink, LinkTiming
from simdist_core.eval.rollout import run_episode
from simdist_core.planning.in_flight import InFlightCommands
from simdist_core.sim.base import make_env

ALTERNATE = LinkTiming(transitions=((0.0, 1.0), (1.0, 0.0)))  # latencies 1, 0, 1, 0, ... (the first from 0)


def _drive(link: LateLink, steps: int, plans: bool = False) -> list[tuple[float, int | None]]:
    out = []
    for t in range(steps):
        plan = np.array([[10.0 * t + k] for k in range(4)]) if plans else None
        action, delay = link.step(np.array([10.0 * t]), plan)
        out.append((float(action[0]), delay))
    return out


def test_on_time_link_applies_every_command_at_once():
    link = LateLink(LinkTiming(transitions=((1.0,),)), 1, np.random.default_rng(0))
    assert _drive(link, 4) == [(0.0, 0), (10.0, 0), (20.0, 0), (30.0, 0)]
    assert link.counts == {"steps": 4, "fresh_command_steps": 4, "default_pose_steps": 0}


def test_late_commands_repeat_the_newest_one_and_count_the_steps_without_a_fresh_command():
    link = LateLink(ALTERNATE, 1, np.random.default_rng(0))
    # Tick 0 arrives at step 1 with tick 1; tick 2 arrives at step 3 with tick 3: step 0 holds the default pose,
    # steps 2 and 4 repeat the command of the step before, one period older.
    assert _drive(link, 5) == [(0.0, None), (10.0, 0), (10.0, 1), (30.0, 0), (30.0, 1)]
    assert link.counts == {"steps": 5, "fresh_command_steps": 2, "default_pose_steps": 1}
    assert link.summary()["fresh_command_fraction"] == pytest.approx(0.5)
    link.reset()
    assert _drive(link, 1) == [(0.0, None)], "a new episode starts with nothing in flight"


def test_playing_the_plan_applies_the_row_the_delay_points_at():
    link = LateLink(ALTERNATE, 1, np.random.default_rng(0), play_plan=True)
    # Step 2 has tick 1's command one period late: its row 1 (11), not row 0 again.
    assert _drive(link, 5, plans=True) == [(0.0, None), (10.0, 0), (11.0, 1), (30.0, 0), (31.0, 1)]
    assert _drive(LateLink(ALTERNATE, 1, np.random.default_rng(0), play_plan=True), 3) == [
        (0.0, None), (10.0, 0), (10.0, 1)], "a command without a plan is repeated"


def test_an_incremental_robot_moves_only_on_a_fresh_command_and_reports_the_last_one():
    link = LateLink(ALTERNATE, 1, np.random.default_rng(0), incremental=True)
    # As the repeating robot above, but steps 2 and 4 (no fresh command) move nothing; the robot still reports the
    # newest command as executed (the UR5e driver's executed_command), with its delay.
    assert _drive(link, 5, plans=True) == [(0.0, None), (10.0, 0), (0.0, 1), (30.0, 0), (0.0, 1)]
    assert float(link.executed[0]) == 30.0
    assert link.counts == {"steps": 5, "fresh_command_steps": 2, "default_pose_steps": 1, "unmoved_steps": 2}
    with pytest.raises(ValueError, match="cannot play a plan"):
        LateLink(ALTERNATE, 1, np.random.default_rng(0), incremental=True, play_plan=True)
    with pytest.raises(ValueError, match="need a late_link"):
        EvalConfig(task="ur5e/peg", incremental_commands=True)
    with pytest.raises(ValueError, match="cannot play a plan"):
        EvalConfig(task="ur5e/peg", late_link="one_core", incremental_commands=True, play_plan=True)


def test_one_core_timing_matches_the_graph_it_was_fitted_to():
    link = LateLink(LINK_TIMINGS["one_core"], 1, np.random.default_rng(1))
    _drive(link, 20000)
    summary = link.summary()
    # What LINK_TIMINGS says: 27 / 68 / 5 % of steps 0 / 1 / 2+ periods late, a fresh command on 85 %.
    assert summary["delay_0_fraction"] == pytest.approx(0.27, abs=0.015)
    assert summary["delay_1_fraction"] == pytest.approx(0.68, abs=0.015)
    assert summary["delay_2_fraction"] == pytest.approx(0.05, abs=0.015)
    assert summary["fresh_command_fraction"] == pytest.approx(0.85, abs=0.015)


def test_link_timing_rejects_what_is_not_a_markov_chain():
    with pytest.raises(ValueError, match="square"):
        LinkTiming(transitions=((0.5, 0.5),))
    with pytest.raises(ValueError, match="summing to 1"):
        LinkTiming(transitions=((0.5, 0.6), (1.0, 0.0)))


def test_in_flight_commands_plan_around_the_median_reported_delay():
    commands = InFlightCommands(window=3, max_delay=4)
    assert commands.committed(horizon=8) is None and commands.counts[0] == 1  # nothing reported or sent
    for a in (1.0, 2.0, 3.0):
        commands.sent(np.array([a]))
    for d in (2.0, -1.0, float("nan"), 1.0, 2.0):  # unstamped (negative) and non-finite reports are ignored
        commands.reported(d)
    np.testing.assert_array_equal(commands.committed(horizon=8), [[2.0], [3.0]])  # median 2: the last two sent
    assert commands.delay(horizon=2) == 1, "the plan keeps one step of its own"
    commands.new_episode()
    assert commands.committed(horizon=8) is None, "a new episode's steps do not meet the last one's commands"
    assert InFlightCommands().delay(horizon=8, estimate=3) == 0, "capped by what was sent"


class _PlanRecorder:
    """A planner whose plan rows are tick + k / 100; keeps the ``committed`` each tick was given."""

    cfg = SimpleNamespace(horizon=4)

    def __init__(self):
        self.n, self.committed = 0, []

    def reset(self):
        self.n = 0

    def plan(self, model_input, committed=None, **_):
        self.n += 1
        self.committed.append(None if committed is None else [round(float(a), 4) for a in committed[:, 0]])
        mean = np.array([[0.1 * self.n + 0.01 * k] * 12 for k in range(4)], np.float32)
        return SimpleNamespace(action=mean[0], mean=mean, fallback=None)


@pytest.mark.parametrize("play_plan", [False, True])
def test_run_episode_through_a_late_link_plans_around_the_reported_delay(play_plan):
    planner, executed = _PlanRecorder(), []
    link = LateLink(LinkTiming(transitions=((0.0, 1.0), (0.0, 1.0))), 12, np.random.default_rng(0),
                    play_plan=play_plan)
    run_episode(make_env("go2/flat"), planner, seed=0, max_steps=4, compensate_delay=True, link=link,
                on_step=lambda obs, action, result: executed.append(round(float(action[0]), 4)))
    # Every command one period late: the default pose first, then the previous tick's command (its row 1 when the
    # robot plays plans); from the second tick on the planner starts from the one command in flight.
    assert executed == ([0.0, 0.11, 0.21, 0.31] if play_plan else [0.0, 0.1, 0.2, 0.3])
    assert planner.committed == [None, None, [0.2], [0.3]]


def test_late_link_configs_that_contradict_themselves_are_refused():
    with pytest.raises(ValueError, match="unknown late_link"):
        EvalConfig(task="go2/foam", late_link="nope")
    with pytest.raises(ValueError, match="own delay"):
        EvalConfig(task="go2/foam", late_link="one_core", action_delay=1)
    with pytest.raises(ValueError, match="need a late_link"):
        EvalConfig(task="go2/foam", play_plan=True)


def test_run_episode_with_an_incremental_robot_moves_nothing_on_steps_without_a_fresh_command():
    planner, applied = _PlanRecorder(), []
    link = LateLink(ALTERNATE, 12, np.random.default_rng(0), incremental=True)
    run_episode(make_env("go2/flat"), planner, seed=0, max_steps=4, link=link,
                on_step=lambda obs, action, result: applied.append(round(float(action[0]), 4)))
    # Tick 1's command acts at step 1; step 2 gets none (tick 2 arrives with tick 3 at step 3, the newest acting).
    assert applied == [0.0, 0.2, 0.0, 0.4]
    assert link.counts["unmoved_steps"] == 1
