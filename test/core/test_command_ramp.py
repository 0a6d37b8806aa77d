"""Command ramp: the velocity command the planner sees grows from rest to the task's, in-process as in the graph."""

import numpy as np
import pytest
from simdist_core.eval.closed_loop import EvalConfig
from simdist_core.eval.rollout import run_episode
from simdist_core.planning.command_ramp import CommandRamp, ramp_for
from simdist_core.robots import get_robot
from simdist_core.sim.base import make_env

pytestmark = pytest.mark.timeout(120)


def test_ramp_reaches_the_target_linearly_in_ramp_s_then_holds_it():
    ramp = CommandRamp(ramp_s=0.1, dt_s=0.02, dim=3)
    target = np.array([0.5, 0.0, -0.2])
    assert np.all(ramp.reset(target) == 0)  # put down: at rest
    seen = [ramp.step(target) for _ in range(7)]
    assert [round(float(v[0]), 6) for v in seen] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5]
    assert seen[2][2] == pytest.approx(-0.12)


def test_a_new_target_ramps_from_where_the_command_is_and_reset_goes_back_to_rest():
    ramp = CommandRamp(ramp_s=0.1, dt_s=0.02, dim=1)
    ramp.reset(np.array([1.0]))
    for _ in range(2):
        ramp.step(np.array([1.0]))  # at 0.4
    assert ramp.step(np.array([0.0]))[0] == pytest.approx(0.32)  # 0.4 -> 0 over 5 steps: 0.08 per step
    assert ramp.reset(np.array([0.0]))[0] == 0.0


def test_zero_ramp_passes_the_target_through():
    ramp = CommandRamp(ramp_s=0.0, dt_s=0.02, dim=2)
    ramp.reset(np.array([0.7, 0.1]))
    assert ramp.step(np.array([0.7, 0.1])) == pytest.approx([0.7, 0.1])


@pytest.mark.parametrize("bad", [[np.nan, 0, 0], [0.5, 0.0], [np.inf, 0, 0]])
def test_a_bad_target_is_refused_and_the_command_is_kept(bad):
    ramp = CommandRamp(ramp_s=1.0, dt_s=0.02, dim=3)
    ramp.reset(np.array([0.5, 0, 0]))
    before = ramp.step(np.array([0.5, 0, 0]))
    with pytest.raises(ValueError, match="finite"):
        ramp.step(np.array(bad, np.float64))
    assert ramp.value == pytest.approx(before)


@pytest.mark.parametrize("ramp_s, dt_s", [(-1.0, 0.02), (np.nan, 0.02), (1.0, 0.0)])
def test_bad_settings_are_refused(ramp_s, dt_s):
    with pytest.raises(ValueError):
        CommandRamp(ramp_s=ramp_s, dt_s=dt_s, dim=3)


def test_only_velocity_commands_ramp():
    assert ramp_for(get_robot("go2"), 0.0) is None
    assert ramp_for(get_robot("go2"), 4.0).dt_s == pytest.approx(0.02)
    with pytest.raises(ValueError, match="velocity"):
        ramp_for(get_robot("ur5e"), 4.0)
    with pytest.raises(ValueError, match="command_ramp_s"):
        EvalConfig(task="go2/flat", command_ramp_s=-1.0)


class _CommandWatcher:
    """A planner that holds the default pose and remembers the command of every model input it plans from."""

    def __init__(self):
        self.commands = []

    def reset(self):
        self.commands = []

    def plan(self, model_input):
        self.commands.append(model_input["command"][0].numpy().copy())
        return np.zeros(12, np.float32)


def test_the_planner_and_the_recorded_observations_see_the_ramped_command():
    env, planner, recorded = make_env("go2/flat"), _CommandWatcher(), []
    run_episode(env, planner, seed=3, max_steps=10, command_ramp_s=0.1,
                on_reset=lambda obs: recorded.append(obs["command"]),
                on_step=lambda obs, action, result: recorded.append(result.obs["command"]))
    task = env.command.astype(np.float32)
    assert task[0] >= 0.3  # go2/flat asks for a walk: a ramp to see
    seen = np.stack(planner.commands)
    assert seen[0] == pytest.approx(np.zeros(3))  # the first plan: at rest
    assert seen[1] == pytest.approx(0.2 * task) and seen[4] == pytest.approx(0.8 * task)
    assert seen[5] == pytest.approx(task) and seen[9] == pytest.approx(task)
    assert np.stack(recorded[:10]) == pytest.approx(seen)  # what is recorded is what was planned from
    assert env.command.astype(np.float32) == pytest.approx(task)  # the task's command itself is untouched


def test_without_a_ramp_the_planner_sees_the_task_command_from_the_start():
    env, planner = make_env("go2/flat"), _CommandWatcher()
    run_episode(env, planner, seed=3, max_steps=3)
    assert np.stack(planner.commands) == pytest.approx(np.tile(env.command.astype(np.float32), (3, 1)))


def test_eval_cli_refuses_a_ramp_for_a_task_without_a_velocity_command(tmp_path, capsys):
    from simdist_core.eval.closed_loop import main

    assert main(["--checkpoint", str(tmp_path), "--task", "ur5e/peg", "--command-ramp-s", "2"]) == 2
    assert "velocity" in capsys.readouterr().err
