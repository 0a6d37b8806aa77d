"""``simdist figure value``: per-step value-head series along real UR5e episodes (tiny model), JSON and plot."""

import json

import numpy as np
import pytest
import torch
from _train_testlib import TINY_PLANNER, tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.eval.value_trace import main, plot, summarise, trace_episode
from simdist_core.experts.ur5e_expert import make_ur5e_expert
from simdist_core.planning.mppi import MPPIPlanner
from simdist_core.sim.base import make_env

pytestmark = pytest.mark.timeout(300)

SMALL = {"horizon": "8", "num_samples": "8", "num_pi_samples": "4", "iterations": "1", "num_elites": "4"}
SERIES = ("t_s", "value", "reward_head", "reward", "sim_success", "depth_m", "lateral_m", "contact_force_n")
NO_RENDER = {"render": "false"}  # the encoder sees a zero image: shapes are what these tests need


def _checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("ur5e"), version=1)
    return ckpt


def _assert_series(episode):
    assert episode["steps"] > 0
    for key in SERIES:
        assert len(episode[key]) == episode["steps"], key
    for key in ("t_s", "value", "reward_head", "reward", "depth_m"):
        assert np.all(np.isfinite(episode[key])), key
    assert np.isfinite(episode["value_start"])


def test_cli_writes_one_series_per_episode_and_the_plot(tmp_path):
    torch.set_num_threads(1)
    out, js = tmp_path / "fig" / "value.png", tmp_path / "value.json"
    argv = ["--checkpoint", str(_checkpoint(tmp_path)), "--task", "ur5e/peg", "--successes", "0", "--failures", "2",
            "--max-episodes", "2", "--seconds", "0.3", "--seed", "5", "--out", str(out), "--json", str(js),
            *[a for k, v in SMALL.items() for a in ("--planner", f"{k}={v}")], "--set", "render=false"]
    assert main(argv) == 0
    assert out.is_file() and out.stat().st_size > 0
    report = json.loads(js.read_text())
    assert report["task"] == "ur5e/peg" and report["actor"] == "planner" and report["git_commit"]
    assert report["checkpoint"] == str(tmp_path / "ckpt")
    assert [e["seed"] for e in report["episodes"]] == [5, 6] and report["tried"] == {"5": False, "6": False}
    assert report["complete"] and report["found"] == {"successes": 0, "failures": 2}
    for episode in report["episodes"]:
        _assert_series(episode)
        assert episode["steps"] == 6  # 0.3 s at 20 Hz; the untrained prior cannot insert that fast
    assert report["summary"]["failure"]["episodes"] == 2 and report["summary"]["success"] == {"episodes": 0}


def test_incomplete_search_is_reported_not_hidden(tmp_path):
    """Asking for a success the tiny model cannot make: the episode cap stops it and the report says so."""
    js = tmp_path / "value.json"
    argv = ["--checkpoint", str(_checkpoint(tmp_path)), "--successes", "1", "--failures", "1", "--max-episodes", "2",
            "--seconds", "0.1", "--out", str(tmp_path / "v.png"), "--json", str(js), "--set", "render=false",
            *[a for k, v in SMALL.items() for a in ("--planner", f"{k}={v}")]]
    assert main(argv) == 0
    report = json.loads(js.read_text())
    assert not report["complete"] and report["found"] == {"successes": 0, "failures": 1}
    assert len(report["tried"]) == 2 and len(report["episodes"]) == 1  # the second failure is run, not kept


def test_expert_success_marks_insertion_and_plots_beside_a_failure(tmp_path):
    """The expert inserts while the (tiny) model watches: insertion step, success flag and both bands plot."""
    torch.set_num_threads(1)
    model = tiny_model("ur5e")
    env = make_env("ur5e/peg", {**NO_RENDER, "fixture.grid": "narrow"})
    success = trace_episode(env, model, None, seed=7, max_steps=10**9, expert=make_ur5e_expert(env))
    failure = trace_episode(env, model, MPPIPlanner(model, TINY_PLANNER, seed=0), seed=8, max_steps=5)
    env.close()
    assert success["success"] and success["sim_success"][-1] and not any(success["sim_success"][:-1])
    assert success["insert_step"] is not None and success["depth_m"][success["insert_step"]] > 0
    assert not failure["success"] and failure["steps"] == 5
    for episode in (success, failure):
        _assert_series(episode)
    report = {"task": "ur5e/peg", "actor": "expert", "episodes": [success, failure]}
    summary = summarise(report)
    assert summary["success"]["episodes"] == summary["failure"]["episodes"] == 1
    assert summary["success_end_step"] == success["steps"] - 1
    # failures are read at the success's length, capped at their own last step (5 steps < success length)
    assert summary["failure"]["value_at_success_end"] == pytest.approx(failure["value"][-1])
    # the failure (5 steps) ended before the success did: no failure step is left to compare from there on
    assert summary["failure_steps_at_or_above_lowest_success_end"] is None
    assert summary["lowest_success_end_value"] == pytest.approx(success["value"][-1])
    plot(report, tmp_path / "v.png")
    assert (tmp_path / "v.png").stat().st_size > 0


@pytest.mark.parametrize(("extra", "message"), [
    (["--task", "go2/flat"], "insertion task"),
    (["--out", "v.txt"], ".png"),
    (["--max-episodes", "0"], "--max-episodes"),
    (["--successes", "-1"], "--successes"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, extra, message):
    argv = ["--checkpoint", str(_checkpoint(tmp_path)), "--out", "v.png", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_checkpoint_exits_2(tmp_path, capsys):
    assert main(["--checkpoint", str(tmp_path / "nope"), "--out", str(tmp_path / "v.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


def _episode(success, values):
    return {"success": success, "steps": len(values), "value": values, "value_start": values[0] - 1.0,
            "reward": [0.0] * len(values), "reward_head": [0.0] * len(values), "seed": 0}


def test_summary_compares_failures_at_the_success_length():
    report = {"episodes": [_episode(True, [-10.0, 5.0]), _episode(False, [-20.0, 0.0, 6.0, -3.0])]}
    summary = summarise(report)
    # successes end after 2 steps -> index 1; the failure's V there is 0.0
    assert summary["success_end_step"] == 1
    assert summary["failure"]["value_at_success_end"] == 0.0 and summary["success"]["value_at_success_end"] == 5.0
    # failure steps from index 1: 0, 6, -3; only 6 reaches the lowest success end (5) -> 1/3
    assert summary["failure_steps_at_or_above_lowest_success_end"] == pytest.approx(1 / 3)
    assert summary["failure"]["value_start"] == -21.0 and summary["failure"]["value_end"] == -3.0
