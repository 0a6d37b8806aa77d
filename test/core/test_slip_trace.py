"""``simdist figure slip``: predicted vs actual displacement on recorded Go2 episodes (tiny models), JSON, plot."""

import json

import numpy as np
import pytest
import torch
from _train_testlib import TINY_PLANNER, tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.eval.slip_trace import (
    actual_displacement,
    main,
    model_inputs,
    plot,
    predicted_displacement,
    record_episode,
    score_episode,
    summarise,
    window_starts,
)
from simdist_core.planning.heading_hold import HeadingHold
from simdist_core.planning.mppi import MPPIPlanner
from simdist_core.sim.base import make_env

pytestmark = pytest.mark.timeout(300)

SMALL = {"horizon": "8", "num_samples": "8", "num_pi_samples": "4", "iterations": "1", "num_elites": "4"}
PLANNER_ARGS = [a for k, v in SMALL.items() for a in ("--planner", f"{k}={v}")]


def _checkpoint(tmp_path, robot="go2", seed=0, name=None):
    ckpt = tmp_path / (name or f"ckpt_{robot}_{seed}")
    save_checkpoint(ckpt, tiny_model(robot, seed=seed), version=1)
    return ckpt


class SpyPlanner:
    """Delegates to an MPPI planner and keeps every model input it was asked to plan from."""

    def __init__(self, planner):
        self.planner, self.inputs = planner, []

    def reset(self):
        self.planner.reset()

    def plan(self, model_input):
        self.inputs.append({k: v.clone() for k, v in model_input.items()})
        return self.planner.plan(model_input)


@pytest.fixture(scope="module")
def recorded():
    """A 14-step tiny-planner episode of the PTFE slope, with the windows the planner saw."""
    torch.set_num_threads(1)
    model = tiny_model("go2")
    env = make_env("go2/ptfe_slope")
    spy = SpyPlanner(MPPIPlanner(model, TINY_PLANNER, seed=0))
    rec = record_episode(env, spy, seed=700_000, max_steps=14)
    return model, rec, spy.inputs


def test_a_held_recording_carries_the_command_the_heading_hold_gave(recorded):
    """With the hold on, the recorded (and planned-on) command is the operator's plus the hold's yaw-rate correction
    from the recorded heading; without it, the operator's own."""
    model, plain, _ = recorded
    env = make_env("go2/ptfe_slope")
    spy = SpyPlanner(MPPIPlanner(model, TINY_PLANNER, seed=0))
    rec = record_episode(env, spy, seed=700_000, max_steps=14, heading_hold=True)
    operator = np.asarray(env.command, np.float32)
    hold = HeadingHold(env.spec.control_dt)
    hold.reset(rec.yaw[0])
    expected = np.stack([hold.command(operator, yaw) for yaw in rec.yaw])
    recorded_commands = np.stack([o["command"] for o in rec.obs])
    np.testing.assert_allclose(recorded_commands, expected, atol=1e-6)
    assert np.abs(recorded_commands[1:, 2] - operator[2]).max() > 0  # the hold turned against some heading error
    np.testing.assert_allclose(np.stack([o["command"] for o in plain.obs]), np.tile(operator, (15, 1)))
    assert len(spy.inputs) == 14


def test_recording_holds_what_the_robot_saw_and_the_truth(recorded):
    _, rec, seen = recorded
    assert rec.steps == 14 and rec.actions.shape == (14, 12)
    assert len(rec.obs) == rec.base_pos.shape[0] == rec.yaw.shape[0] == rec.probe.shape[0] == 15
    assert rec.foot_slip_m[0] == 0.0 and np.all(np.diff(rec.foot_slip_m) >= 0)
    assert rec.foot_slip_m[-1] == pytest.approx(rec.metrics["foot_slip_m"])
    assert np.all(np.abs(rec.actions) <= 1.0)
    assert len(seen) == 14  # one plan per executed step


def test_predicted_displacement_is_the_integral_of_the_decoded_probe(recorded):
    model, rec, seen = recorded
    horizon, dt = 4, model.spec.control_dt
    starts = window_starts(rec.steps, horizon, 3)
    assert list(starts) == [0, 3, 6, 9]  # t + H <= 14
    probe, disp = predicted_displacement(model, rec, starts, horizon)
    assert probe.shape == (4, horizon, 3) and disp.shape == (4, 3)
    with torch.no_grad():
        for i, t in enumerate(starts):
            # the window the planner itself was given at step t, and the actions executed from there
            latent = model.encode(seen[t])
            actions = torch.as_tensor(rec.actions[t: t + horizon])[None]
            expected_probe = model.decode_probe(model.predict(latent, actions))[0].double().numpy()
            np.testing.assert_allclose(probe[i], expected_probe, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(disp[i], expected_probe.sum(0) * dt, rtol=1e-5, atol=1e-7)


def test_windows_replay_the_history_the_planner_saw(recorded):
    model, rec, seen = recorded
    starts = np.array([0, 1, 7, 13])
    batch = model_inputs(rec, model.spec, starts)
    for i, t in enumerate(starts):
        for key, value in seen[t].items():
            torch.testing.assert_close(batch[key][i: i + 1], value)


def test_actual_displacement_is_the_base_motion_in_the_start_heading_frame(recorded):
    model, rec, _ = recorded
    starts, horizon, dt = np.array([0, 5, 10]), 4, model.spec.control_dt
    actual = actual_displacement(rec, starts, horizon, dt)
    for i, t in enumerate(starts):
        d = rec.base_pos[t + horizon, :2] - rec.base_pos[t, :2]
        c, s = np.cos(rec.yaw[t]), np.sin(rec.yaw[t])
        assert actual["forward"][i] == pytest.approx(c * d[0] + s * d[1])
        assert actual["lateral"][i] == pytest.approx(-s * d[0] + c * d[1])
        assert np.hypot(actual["forward"][i], actual["lateral"][i]) == pytest.approx(np.linalg.norm(d))
        assert actual["uphill"][i] == pytest.approx(d[0])  # world x: up the incline of the slope terrains
        assert actual["truth_integral_forward"][i] == pytest.approx(rec.probe[t + 1: t + horizon + 1, 0].sum() * dt)
        assert actual["foot_slip_m"][i] == pytest.approx(rec.foot_slip_m[t + horizon] - rec.foot_slip_m[t])


def test_the_same_model_before_and_after_scores_the_same(recorded):
    model, rec, _ = recorded
    scored = score_episode({"before": model, "after": model}, rec, 4, 2)
    assert scored["before"] == scored["after"] and len(scored["t_s"]) == len(window_starts(14, 4, 2))
    shortfall = np.asarray(scored["before"]["forward"]) - np.asarray(scored["actual"]["forward"])
    np.testing.assert_allclose(scored["before"]["shortfall"], shortfall, rtol=1e-3, atol=1e-6)
    yaw = rec.yaw[scored["start_step"]]  # the prediction, rotated from the heading frame at t to the world
    uphill = np.cos(yaw) * scored["before"]["forward"] - np.sin(yaw) * np.asarray(scored["before"]["lateral"])
    np.testing.assert_allclose(scored["before"]["uphill"], uphill, rtol=1e-3, atol=1e-6)


def test_cli_writes_series_summary_and_plot(tmp_path):
    torch.set_num_threads(1)
    ckpt = _checkpoint(tmp_path)
    out, js = tmp_path / "fig" / "slip.png", tmp_path / "slip.json"
    argv = ["--before", str(ckpt), "--after", str(ckpt), "--episodes", "2", "--seconds", "0.4", "--seed", "700000",
            "--horizon", "5", "--stride", "2", "--plot", str(out), "--json", str(js), "--heading-hold", *PLANNER_ARGS]
    assert main(argv) == 0
    assert out.is_file() and out.stat().st_size > 0
    report = json.loads(js.read_text())
    assert report["task"] == "go2/ptfe_slope" and report["git_commit"] and report["horizon"] == 5
    assert report["config"]["heading_hold"] is True
    assert report["checkpoints"] == {"before": str(ckpt), "after": str(ckpt)}
    assert report["command"].startswith("simdist figure slip --before")
    assert report["seeds"] == [700000, 700001] and [e["seed"] for e in report["episodes"]] == [700000, 700001]
    for episode in report["episodes"]:
        assert episode["steps"] == 20  # 0.4 s at 50 Hz
        assert episode["start_step"] == [0, 2, 4, 6, 8, 10, 12, 14]
        for key in ("forward", "lateral", "uphill", "foot_slip_m", "truth_integral_forward"):
            assert len(episode["actual"][key]) == 8
        assert episode["before"] == episode["after"]  # one checkpoint on both sides
    summary = report["summary"]
    assert summary["windows"] == 16 and summary["before"] == summary["after"]
    assert summary["before"]["forward_mae_m"] >= 0 and report["trace_episode"] in (0, 1)


def test_default_horizon_is_the_models(tmp_path):
    ckpt = _checkpoint(tmp_path)
    js = tmp_path / "slip.json"
    argv = ["--before", str(ckpt), "--after", str(ckpt), "--episodes", "2", "--seconds", "0.6", "--stride", "5",
            "--seed", "700001", "--plot", str(tmp_path / "s.png"), "--json", str(js), *PLANNER_ARGS]
    assert main(argv) == 0
    report = json.loads(js.read_text())
    assert report["horizon"] == 25 and report["horizon_s"] == pytest.approx(0.5)
    for episode in report["episodes"]:  # the untrained tiny planner may fall before 0.6 s: fewer windows, never late
        assert episode["start_step"] == list(range(0, episode["steps"] - 25 + 1, 5))
    assert report["summary"]["windows"] >= 1 and [0, 5] in [e["start_step"] for e in report["episodes"]]


def test_episodes_shorter_than_the_horizon_exit_1(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path)
    argv = ["--before", str(ckpt), "--after", str(ckpt), "--episodes", "1", "--seconds", "0.1",
            "--plot", str(tmp_path / "s.png"), *PLANNER_ARGS]
    assert main(argv) == 1
    assert "no episode lasted 25 steps" in capsys.readouterr().err
    assert not (tmp_path / "s.png").exists()


@pytest.mark.parametrize(("sides", "extra", "message"), [
    (("ur5e", "go2"), [], "the before model is for ur5e"),
    (("go2", "ur5e"), [], "the after model is for ur5e"),
    (("go2", "go2"), ["--horizon", "0"], "--horizon 0 must be > 0"),
    (("go2", "go2"), ["--horizon", "-2"], "--horizon -2 must be > 0"),
    (("go2", "go2"), ["--horizon", "26"], "--horizon 26 exceeds the before model's horizon 25"),
    (("go2", "go2"), ["--task", "ur5e/peg"], "needs a Go2 task"),
    (("go2", "go2"), ["--task", "go2/fom"], "did you mean 'go2/foam'"),
    (("go2", "go2"), ["--plot", "s.txt"], ".png"),
    (("go2", "go2"), ["--stride", "0"], "--stride 0"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, sides, extra, message):
    before, after = (_checkpoint(tmp_path, robot, name=f"{side}_{robot}")
                     for side, robot in zip(("b", "a"), sides, strict=True))
    argv = ["--before", str(before), "--after", str(after), "--plot", str(tmp_path / "s.png"), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.png").exists()


def test_missing_checkpoint_exits_2(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path)
    assert main(["--before", str(ckpt), "--after", str(tmp_path / "nope"), "--plot", str(tmp_path / "s.png")]) == 2
    assert "--after" in capsys.readouterr().err


def _episode(seed, actual, before, after, slip):
    def side(forward):
        return {"forward": forward, "lateral": [0.0] * len(forward), "uphill": forward,
                "shortfall": list(np.asarray(forward) - np.asarray(actual))}
    return {"seed": seed, "t_s": [0.1 * i for i in range(len(actual))], "foot_slip_per_s": 1.0,
            "actual": {"forward": actual, "lateral": [0.0] * len(actual), "uphill": actual, "foot_slip_m": slip,
                       "truth_integral_forward": actual, "truth_integral_lateral": [0.0] * len(actual)},
            "before": side(before), "after": side(after)}


def test_summary_errors_bias_and_correlations(tmp_path):
    # before predicts 0.3 m every window (expects grip); after tracks the actual motion 0.1..0.25 m
    actual, slip = [0.1, 0.15, 0.2, 0.25], [0.2, 0.15, 0.1, 0.05]
    report = {"task": "go2/ptfe_slope", "horizon_s": 0.5, "trace_episode": 0,
              "episodes": [_episode(1, actual, [0.3] * 4, [a + 0.01 for a in actual], slip)]}
    summary = summarise(report)
    assert summary["windows"] == 4
    assert summary["before"]["forward_mae_m"] == pytest.approx(0.125)
    assert summary["before"]["shortfall_mean_m"] == pytest.approx(0.125)
    assert summary["before"]["forward_corr"] is None  # a constant prediction has no correlation
    assert summary["before"]["shortfall_vs_foot_slip_corr"] == pytest.approx(1.0)  # its error is the slip
    assert summary["after"]["forward_mae_m"] == pytest.approx(0.01)
    assert summary["after"]["forward_corr"] == pytest.approx(1.0)
    assert summary["after"]["forward_fit_slope"] == pytest.approx(1.0)  # follows the motion
    assert summary["before"]["forward_fit_slope"] == pytest.approx(0.0)  # blind to it
    assert summary["after"]["horizontal_mae_m"] == pytest.approx(0.01)
    assert summary["before"]["uphill_shortfall_mean_m"] == pytest.approx(0.125)  # heading straight up the slope
    assert summary["actual"]["truth_integral_forward_mae_m"] == 0.0
    shrunk = {"task": "go2/ptfe_slope", "horizon_s": 0.5, "trace_episode": 0,
              "episodes": [_episode(1, actual, [0.3] * 4, [0.175 + 0.5 * (a - 0.175) for a in actual], slip)]}
    assert summarise(shrunk)["after"]["forward_fit_slope"] == pytest.approx(0.5)  # half-way toward the mean
    report["summary"] = summary
    plot(report, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 0
