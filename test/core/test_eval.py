"""Closed-loop evaluation: real MuJoCo tasks, real MPPI planner over a (tiny) world model, JSON report."""

import json

import numpy as np
import pytest
import torch
from _train_testlib import TINY_PLANNER, tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.eval.closed_loop import EvalConfig, evaluate, main
from simdist_core.eval.rollout import run_episode
from simdist_core.planning.mppi import MPPIPlanner
from simdist_core.sim.base import make_env

pytestmark = pytest.mark.timeout(300)

SMALL = {"horizon": "8", "num_samples": "8", "num_pi_samples": "4", "iterations": "1", "num_elites": "4"}


def test_go2_report_has_metric_falls_and_planner_stats():
    torch.set_num_threads(1)
    report = evaluate(tiny_model("go2"), EvalConfig(task="go2/flat", episodes=2, seconds=0.4, seed=4321),
                      planner_overrides=SMALL)
    assert report["task"] == "go2/flat" and report["episodes"] == 2 and report["metric"] == "forward_progress_m"
    assert report["seed"] == 4321  # a report says which episodes it ran
    assert np.isfinite(report["forward_progress_m"]) and 0.0 <= report["falls"] <= 1.0
    assert len(report["per_episode"]) == 2
    assert 0 < report["summary"]["steps"] <= 2 * 20  # 0.4 s at 50 Hz per episode, less if it fell
    assert report["plan_ms_p99"] >= report["plan_ms_p50"] > 0
    assert report["planner"]["num_samples"] == 8 and report["planner"]["horizon"] == 8
    assert report["fallbacks"] == 0


def test_ur5e_report_has_success_rate():
    torch.set_num_threads(1)
    report = evaluate(tiny_model("ur5e"), EvalConfig(task="ur5e/peg", episodes=1, seconds=0.3),
                      planner_overrides=SMALL)
    assert report["metric"] == "success_rate"
    assert report["success_rate"] in (0.0, 1.0)  # one episode


def test_checkpoint_for_other_robot_is_refused():
    with pytest.raises(ValueError, match="go2"):
        evaluate(tiny_model("go2"), EvalConfig(task="ur5e/peg", episodes=1, seconds=0.1))


def test_cli_writes_json(tmp_path):
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    out = tmp_path / "eval.json"
    argv = ["--checkpoint", str(ckpt), "--task", "go2/ptfe_slope", "--episodes", "1", "--seconds", "0.3",
            "--json", str(out), *[a for k, v in SMALL.items() for a in ("--planner", f"{k}={v}")],
            "--set", "terrain.friction=0.3"]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert {"task", "episodes", "forward_progress_m", "falls", "wall_s", "plan_ms_p50"} <= report.keys()
    assert report["env_overrides"] == {"terrain.friction": "0.3"}


def test_cli_scores_plans_with_the_parent_checkpoint_too_when_asked(tmp_path, capsys):
    """``--planner reference_returns=min`` takes the reference from the manifest's ``parent_checkpoint`` (or
    ``--reference``), records it in the report, and refuses what cannot work, with one line each."""
    parent, child = tmp_path / "parent", tmp_path / "child"
    base = tiny_model("go2")
    save_checkpoint(parent, base, version=1)
    adapted = tiny_model("go2")
    adapted.load_state_dict(base.state_dict())
    with torch.no_grad():
        next(adapted.dynamics.parameters()).add_(0.05)
    save_checkpoint(child, adapted, version=2, extra={"parent_checkpoint": str(parent)})
    common = ["--task", "go2/flat", "--episodes", "1", "--seconds", "0.1",
              *[a for k, v in SMALL.items() for a in ("--planner", f"{k}={v}")]]
    out = tmp_path / "eval.json"
    assert main(["--checkpoint", str(child), *common, "--planner", "reference_returns=min", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["reference"] == str(parent) and report["planner"]["reference_returns"] == "min"
    assert main(["--checkpoint", str(child), *common, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["reference"] is None
    capsys.readouterr()
    assert main(["--checkpoint", str(child), *common, "--reference", str(parent)]) == 2  # without reference_returns
    assert "--reference only counts" in capsys.readouterr().err
    assert main(["--checkpoint", str(parent), *common, "--planner", "reference_returns=min"]) == 2  # no parent
    assert "give --reference" in capsys.readouterr().err
    other = tmp_path / "other"
    save_checkpoint(other, tiny_model("go2", seed=1), version=1)  # differs in every part
    assert main(["--checkpoint", str(child), *common, "--planner", "reference_returns=min",
                 "--reference", str(other)]) == 2
    assert "dynamics only" in capsys.readouterr().err


def test_run_episode_records_every_transition_with_exploration_noise():
    env = make_env("go2/flat")
    planner = MPPIPlanner(tiny_model("go2"), TINY_PLANNER, seed=0)
    seen = []
    stats = run_episode(env, planner, seed=0, max_steps=10, exploration_std=0.5, rng=np.random.default_rng(0),
                        on_step=lambda obs, action, result: seen.append(action))
    assert len(seen) == stats.steps == len(stats.plan_ms)
    assert all(np.all(np.abs(a) <= 1.0) for a in seen)
    with pytest.raises(ValueError, match="rng"):
        run_episode(env, planner, seed=0, max_steps=1, exploration_std=0.1)


class _CountingPlanner:
    """Plans 0.1, 0.2, 0.3, ... on every joint: which planned action acts on which step is then visible."""

    def __init__(self):
        self.n = 0

    def reset(self):
        self.n = 0

    def plan(self, model_input):
        self.n += 1
        return np.full(12, 0.01 * self.n, np.float32)


@pytest.mark.parametrize("delay", [0, 2])
def test_action_delay_applies_each_plan_that_many_steps_later(delay):
    executed = []
    run_episode(make_env("go2/flat"), _CountingPlanner(), seed=0, max_steps=6, action_delay=delay,
                on_step=lambda obs, action, result: executed.append(float(action[0])))
    planned = [0.01 * (i + 1) for i in range(6)]
    assert executed == pytest.approx([0.0] * delay + planned[: 6 - delay])  # the default pose until then


class _CommittedRecorder(_CountingPlanner):
    """The counting planner, also keeping the ``committed`` actions each plan was given."""

    def __init__(self):
        super().__init__()
        self.committed = []

    def plan(self, model_input, committed=None):
        self.committed.append(None if committed is None else [round(float(a), 4) for a in committed[:, 0]])
        return super().plan(model_input)


@pytest.mark.parametrize(("delay", "latency"), [(0, 2), (1, 1), (2, 0)])
def test_compensation_counts_the_robots_own_latency_with_the_actions_in_flight(delay, latency):
    planner = _CommittedRecorder()
    run_episode(make_env("go2/flat"), planner, seed=0, max_steps=5, action_delay=delay, compensate_delay=True,
                robot_latency_steps=latency)
    # Each plan starts from the last delay + latency actions sent (oldest first), the default pose before the first.
    assert planner.committed == [[0.0, 0.0], [0.0, 0.01], [0.01, 0.02], [0.02, 0.03], [0.03, 0.04]]
    without = _CommittedRecorder()
    run_episode(make_env("go2/flat"), without, seed=0, max_steps=2, robot_latency_steps=latency)
    assert without.committed == [None, None], "the latency is only read when compensating"
