"""Adaptation benchmark on a tiny budget: real shifted task, real planner, real finetuning; checks the report."""

import json

import pytest
import torch
from _train_testlib import tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.eval.adaptation import AdaptationConfig, main

pytestmark = pytest.mark.timeout(900)

SMALL_PLANNER = ["horizon=8", "num_samples=8", "num_pi_samples=4", "iterations=1", "num_elites=4"]


def test_config_validates_minutes():
    with pytest.raises(ValueError, match="minutes"):
        AdaptationConfig(minutes=(1.0, 2.0))
    with pytest.raises(ValueError, match="minutes"):
        AdaptationConfig(minutes=(0.0, 2.0, 1.0))


def test_benchmark_cli_reports_all_methods(tmp_path):
    torch.set_num_threads(1)
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    out, png = tmp_path / "adapt.json", tmp_path / "adapt.png"
    # 0.04 min = 120 control steps of experience per method; tiny evaluation and finetuning budgets
    argv = ["--task", "go2/ptfe_slope", "--checkpoint", str(ckpt), "--minutes", "0,0.04", "--json", str(out),
            "--plot", str(png), "--set", "eval_episodes=1", "--set", "eval_s=0.3", "--set", "heldout_episodes=2",
            "--set", "episode_s=1", "--set", "heldout_windows=64", "--set", "finetune.steps=15",
            "--set", "finetune.batch_size=16", "--set", "finetune.holdout_fraction=0.3",
            *[a for p in SMALL_PLANNER for a in ("--planner", p)]]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert report["task"] == "go2/ptfe_slope" and report["metric"] == "forward_progress_m"
    results = report["results"]
    assert set(results) == {"zero_shot", "dynamics_only", "full_finetune"}
    zero = results["zero_shot"]
    for method in ("dynamics_only", "full_finetune"):
        res = results[method]
        assert res["minutes"] == [0.0, 0.04]
        assert len(res["metric"]) == len(res["latent_error"]) == 2
        # minute 0 is the pretrained model, i.e. the zero-shot measurement
        assert res["metric"][0] == zero["metric"][0] and res["latent_error"][0] == zero["latent_error"][0]
        assert res["latent_error"][1] > 0 and isinstance(res["gate"][1]["passed"], bool)
        assert res["probe_error"][0] == zero["probe_error"][0] and res["probe_error"][1] > 0
        assert report["summary"][method]["probe_error_ratio_zero_shot_over_method"] > 0
        assert res["reward_error"][0] == zero["reward_error"][0] and res["reward_error"][1] > 0
        assert res["reward_per_step"][0] == zero["reward_per_step"][0]
        assert all(isinstance(v, float) and v == v for v in res["reward_per_step"])
        assert "reward_per_step_minus_zero_shot" in report["summary"][method]
    assert png.stat().st_size > 1000
    assert main(argv) == 2, "a non-empty workdir is refused (experience from two runs must not mix)"


def test_rl_baselines_and_a_compared_checkpoint_run_on_the_same_budget(tmp_path, capsys):
    from simdist_core.data import generate

    torch.set_num_threads(1)
    ckpt, other, data = tmp_path / "ckpt", tmp_path / "other", tmp_path / "data"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    save_checkpoint(other, tiny_model("go2", seed=1), version=1)
    assert generate.main(["--robot", "go2", "--task", "flat", "--steps", "300", "--seed", "2", "--out", str(data),
                          "--set", "episode_length_s=1", "--set", "data.value.episodes=2",
                          "--set", "data.value.train_steps=50", "--set", "data.value.branch_states=2",
                          "--set", "data.value.branch_steps=10", "--no-fsync"]) == 0
    out = tmp_path / "adapt.json"
    argv = ["--task", "go2/foam", "--checkpoint", str(ckpt), "--minutes", "0,0.02", "--json", str(out),
            "--methods", "zero_shot,dynamics_only,rlpd,iql", "--compare", f"other={other}",
            "--set", "eval_episodes=1", "--set", "eval_s=0.3", "--set", "heldout_episodes=2", "--set", "episode_s=1",
            "--set", "heldout_windows=32", "--set", "finetune.steps=5", "--set", "finetune.batch_size=16",
            "--set", "finetune.holdout_fraction=0.3",
            *[a for p in SMALL_PLANNER for a in ("--planner", p)],
            *[a for m in ("rlpd", "iql") for kv in ("offline_steps=2", "batch_size=16", "hidden=32", "update_every=10",
                                                  "history=2") for a in ("--set", f"{m}.{kv}")],
            "--set", "rlpd.utd_ratio=2", "--set", "rlpd.num_critics=4"]
    assert main([*argv, "--workdir", str(tmp_path / "w0")]) == 2, "rlpd without --data and no recorded dataset"
    assert "--data" in capsys.readouterr().err
    assert main([*argv, "--data", str(data)]) == 0
    report = json.loads(out.read_text())
    results = report["results"]
    assert set(results) == {"zero_shot", "dynamics_only", "rlpd", "iql", "zero_shot@other", "dynamics_only@other"}
    for method in ("rlpd", "iql"):
        res = results[method]
        assert res["minutes"] == [0.0, 0.02] and all(m == m for m in res["metric"])  # finite, not NaN
        assert res["latent_error"] == [None, None] and res["probe_error"] == [None, None]
        assert res["update_rounds"] == [2, 2 + 60 // 10]  # 0.02 min at 50 Hz = 60 steps, a round every 10
        assert report["summary"][method]["latent_error_ratio_zero_shot_over_method"] is None
    # the compared checkpoint starts from its own zero-shot point, not the main one's
    assert results["dynamics_only@other"]["latent_error"][0] == results["zero_shot@other"]["latent_error"][0]
    assert results["zero_shot@other"]["latent_error"][0] != results["zero_shot"]["latent_error"][0]
    assert report["rl_dataset"] == str(data) and report["compare"] == {"other": str(other)}


def test_point_records_true_reward_per_control_step():
    from simdist_core.eval.adaptation import point_fields

    # 2 episodes with returns 30 and 10 over 40 and 20 steps: mean return 20, 60 steps -> 40 / 60 per step
    report = {"episodes": 2, "forward_progress_m": 1.5, "latent_error": 0.1, "probe_error": 0.2, "reward_error": 0.3,
              "falls": 0.5, "summary": {"mean_return": 20.0, "steps": 60.0, "duration_s": 1.2}}
    fields = point_fields(report, "forward_progress_m")
    assert fields["metric"] == 1.5 and fields["falls"] == 0.5 and fields["mean_duration_s"] == 1.2
    assert fields["reward_per_step"] == pytest.approx(40.0 / 60.0)


def test_heldout_labels_belong_to_each_recorded_observation(tmp_path):
    """The evaluation set's probe row t is the state of observation t (not the post-step state), and
    its reward is the simulator's reward of transition t."""
    import numpy as np
    from simdist_core.data.dataset import Dataset
    from simdist_core.eval.experience import collect_experience
    from simdist_core.sim.base import make_env

    env = make_env("go2/flat")
    probes, rewards = [], []

    class RecordingPlanner:  # logs the probe of the state each action is planned in
        def reset(self):
            pass

        def plan(self, model_input):
            probes.append(env.privileged_state()["probe"].copy())
            return np.full(12, 0.3 * (len(probes) % 3 - 1), np.float32)

    step = env.step

    def logged_step(action):
        result = step(action)
        rewards.append(result.reward)
        return result

    env.step = logged_step
    collect_experience(env, RecordingPlanner(), tmp_path / "shard-0", episodes=2, max_steps=20, seed=0,
                       eval_labels=True)
    ds = Dataset(tmp_path)
    stored = ds.gather("priv/probe", np.arange(len(ds)))
    episode = ds.gather("episode_id", np.arange(len(ds)))
    first = stored[episode == episode[0]][:-1]  # the last row is the final observation (no action)
    np.testing.assert_allclose(first, np.array(probes[: len(first)]), rtol=0, atol=0)
    stored_rewards = ds.gather("reward", np.arange(len(ds)))[episode == episode[0]]
    np.testing.assert_allclose(stored_rewards[:-1], np.float32(rewards[: len(first)]), rtol=0, atol=0)
    assert stored_rewards[-1] == 0.0  # the final-observation row, as simdist generate stores it
    assert np.ptp(stored[:, 0]) > 0  # the state really changes between rows
