"""Videos of evaluation episodes: real MuJoCo, real MPPI over a tiny world model, real H.264 files."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from _train_testlib import tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.eval.closed_loop import EvalConfig, evaluate, main
from simdist_core.eval.video import (
    EpisodeRecorder,
    VideoConfig,
    read_video,
    render_recording,
    side_by_side,
    write_video,
)
from simdist_core.planning.probe import probe_to_world
from simdist_core.sim.render import SceneRenderer

pytestmark = pytest.mark.timeout(300)

SMALL = {"horizon": "8", "num_samples": "8", "num_pi_samples": "4", "iterations": "1", "num_elites": "4"}
CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"


def _blue(frame: np.ndarray) -> int:
    """Pixels of the predicted path's colour (0.1, 0.55, 1.0): strongly blue, little red."""
    r, b = frame[..., 0].astype(int), frame[..., 2].astype(int)
    return int(((b > 150) & (b - r > 80)).sum())


def test_eval_cli_writes_an_h264_video_with_one_frame_per_two_control_steps(tmp_path):
    ckpt, video = tmp_path / "ckpt", tmp_path / "out" / "eval.mp4"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    argv = ["--checkpoint", str(ckpt), "--task", "go2/flat", "--episodes", "1", "--seconds", "0.4",
            "--video", str(video), "--video-size", "96x64", "--json", str(tmp_path / "eval.json"),
            *[a for k, v in SMALL.items() for a in ("--planner", f"{k}={v}")]]  # fmt: skip
    assert main(argv) == 0
    steps = int(__import__("json").loads((tmp_path / "eval.json").read_text())["summary"]["steps"])
    meta, frames = read_video(video)
    assert meta["codec"].startswith("h264") and tuple(meta["size"]) == (96, 64)
    assert meta["fps"] == pytest.approx(25.0)
    assert len(frames) == math.ceil(steps / 2)  # 20 steps if it did not fall: 10 frames
    assert frames[0].shape == (64, 96, 3) and frames[0].std() > 5  # a scene, not a blank frame


def test_video_beside_shows_a_second_checkpoint_on_the_same_episode(tmp_path, capsys):
    first, second, video = tmp_path / "a", tmp_path / "b", tmp_path / "both.mp4"
    save_checkpoint(first, tiny_model("go2"), version=1)
    save_checkpoint(second, tiny_model("go2"), version=2)
    argv = ["--checkpoint", str(first), "--task", "go2/flat", "--episodes", "2", "--seconds", "0.2",
            "--video", str(video), "--video-size", "64x48", "--video-beside", str(second),
            *[a for k, v in SMALL.items() for a in ("--planner", f"{k}={v}")]]  # fmt: skip
    assert main(argv) == 0
    meta, frames = read_video(video)
    assert tuple(meta["size"]) == (64 + 4 + 64, 48)
    assert len(frames) <= 5  # one episode (--video-episodes 1) of at most 10 steps: a frame every 2nd step
    assert "over the 1 video episode(s) of --video-beside" in capsys.readouterr().out
    assert main([*argv[:8], "--video-beside", str(second)]) == 2  # --video-beside without --video


def test_bad_video_options_are_usage_errors(tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    for extra in (["--video", str(tmp_path / "v.avi")], ["--video", str(tmp_path / "v.mp4"), "--video-size", "95x64"]):
        assert main(["--checkpoint", str(ckpt), "--task", "go2/flat", *extra]) == 2
    err = capsys.readouterr().err
    assert ".mp4 or .gif" in err and "even number" in err


def test_same_seed_same_results_with_and_without_a_video():
    """Recording reads the simulator only, so the video cannot change what it shows."""
    torch.set_num_threads(1)
    model = tiny_model("go2")
    cfg = EvalConfig(task="go2/foam", episodes=2, seconds=0.5, seed=1001)
    plain = evaluate(model, cfg, planner_overrides=SMALL)
    recorder = EpisodeRecorder(VideoConfig(width=96, height=64, episodes=2), label="test")
    recorded = evaluate(model, cfg, planner_overrides=SMALL, recorder=recorder)
    assert recorded["per_episode"] == plain["per_episode"]
    assert recorded["summary"]["steps"] == plain["summary"]["steps"]
    assert recorded["summary"]["mean_return"] == plain["summary"]["mean_return"]
    assert [len(rec.tracked_m) - 1 for rec in recorder.recordings] == [25, 25] or recorded["falls"] > 0
    frames = render_recording(recorder.recordings[0], recorder.cfg)
    assert len(frames) == len(recorder.recordings[0].frame_steps) > 0


def test_the_predicted_path_is_drawn_into_the_frame():
    """The shipped Go2 model, walking: its plan's predicted path shows as blue pixels the plain scene lacks."""
    import mujoco
    from simdist_core.checkpoint import load_checkpoint
    from simdist_core.eval.video import _camera

    torch.set_num_threads(1)
    model, manifest = load_checkpoint(CHECKPOINTS / "go2")
    recorder = EpisodeRecorder(VideoConfig(width=240, height=160), label="overlay")
    evaluate(model, EvalConfig(task="go2/flat", episodes=1, seconds=2.0, seed=1001, preset="checkpoint"),
             manifest=manifest, recorder=recorder)
    rec = recorder.recordings[0]
    assert all(p is not None and p.shape == (model.spec.horizon + 1, 3) for p in rec.predicted_m)
    last = render_recording(rec, recorder.cfg)[-1]
    data = mujoco.MjData(rec.model)
    mujoco.mj_setState(rec.model, data, rec.states[-1], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    mujoco.mj_forward(rec.model, data)
    renderer = SceneRenderer(rec.model, 160, 240)
    _camera(renderer, rec, rec.tracked_m[rec.frame_steps[-1]])
    plain = renderer.render(data)  # same state and camera, no markers, no caption
    renderer.close()
    assert np.any(last != plain, axis=-1).mean() > 0.01
    assert _blue(last) > 20 and _blue(plain) == 0, f"predicted path pixels: {_blue(last)} (plain {_blue(plain)})"


def test_gif_and_side_by_side(tmp_path):
    rng = np.random.default_rng(0)
    left = [rng.integers(0, 255, (32, 48, 3), dtype=np.uint8) for _ in range(5)]
    right = [np.full((32, 48, 3), 200, np.uint8) for _ in range(3)]
    both = side_by_side(left, right)
    assert len(both) == 5 and both[0].shape == (32, 100, 3)  # 48 + 4 px gap + 48
    np.testing.assert_array_equal(both[4][:, 52:], right[2])  # the shorter episode holds its last frame
    gif = write_video(tmp_path / "clip.gif", both, fps=10)
    meta, frames = read_video(gif)
    assert len(frames) == 5 and tuple(meta["size"]) == (100, 32)
    with pytest.raises(ValueError, match="even"):
        write_video(tmp_path / "odd.mp4", [np.zeros((31, 48, 3), np.uint8)], fps=10)


def test_go2_predicted_path_is_rotated_into_the_world_by_the_heading():
    probe = np.tile([1.0, 0.0, 0.0], (10, 1))  # 1 m/s forward for 10 steps of 20 ms: 0.2 m ahead
    path = probe_to_world(probe, "base_velocity", 0.02, np.array([1.0, 2.0, 0.3]), math.pi / 2)
    np.testing.assert_allclose(path[0], [1.0, 2.0, 0.3])
    np.testing.assert_allclose(path[-1], [1.0, 2.2, 0.3], atol=1e-12)  # heading +y: forward is +y
    tcp = probe_to_world(probe, "tcp_position", 0.02, np.zeros(3), 1.0)
    np.testing.assert_allclose(tcp[1:], probe)  # the arm's probe is already a world position


def test_ur5e_episode_records_the_tool_tip_and_renders():
    """The arm's probe is the tool tip in the world frame: its path starts where the tip is."""
    torch.set_num_threads(1)
    recorder = EpisodeRecorder(VideoConfig(width=64, height=48, fps=10.0), label="arm")
    report = evaluate(tiny_model("ur5e"), EvalConfig(task="ur5e/peg", episodes=1, seconds=0.4),
                      planner_overrides=SMALL, recorder=recorder)
    rec = recorder.recordings[0]
    steps = int(report["summary"]["steps"])
    assert len(rec.tracked_m) == steps + 1 and rec.probe_kind == "tcp_position"
    assert rec.frame_steps == list(range(0, steps, recorder.cfg.stride(1.0 / rec.control_dt_s)))
    assert all(p.shape == (9, 3) for p in rec.predicted_m)
    frames = render_recording(rec, recorder.cfg)
    assert len(frames) == len(rec.frame_steps) and frames[0].shape == (48, 64, 3)
