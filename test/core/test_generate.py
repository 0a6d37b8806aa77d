"""`simdist generate` on the real Go2 env: row semantics, sharding, and crash-resume without duplicates or gaps."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from simdist_core.data import generate
from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.robots import GO2, UR5E

torch.set_num_threads(1)

# 2 s episodes (100 steps + the final observation row), chunks of >= 150 rows (= 2 episodes), 2 shards.
ARGS = [
    "--robot", "go2", "--task", "flat", "--steps", "1000", "--seed", "3", "--num-shards", "2", "--chunk-steps", "150",
    "--set", "episode_length_s=2", "--set", "data.value.episodes=2", "--set", "data.value.train_steps=100",
    "--set", "data.value.batch_size=256", "--set", "data.value.branch_states=2", "--set", "data.value.branch_steps=20",
    "--no-fsync",
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "ref"
    assert generate.main([*ARGS, "--out", str(out), "--workers", "2"]) == 0  # two spawned worker processes
    return out


def _compare(a: Dataset, b: Dataset):
    assert a.n_steps == b.n_steps and len(a.chunks) == len(b.chunks)
    assert [(c.shard, c.index, c.n_steps) for c in a.chunks] == [(c.shard, c.index, c.n_steps) for c in b.chunks]
    for field in a.fields:
        np.testing.assert_array_equal(a.array(field), b.array(field), err_msg=field)
    assert a.checksum() == b.checksum()


@pytest.mark.timeout(600)
def test_killed_generation_resumes_identically(reference, tmp_path):
    out = tmp_path / "killed"
    out.mkdir()
    for name in ("value_fn.safetensors", "value_fn.json"):  # same value function: compare arrays bit for bit
        shutil.copy(reference / name, out / name)
    cmd = [sys.executable, "-m", "simdist_core.cli", "generate", *ARGS, "--out", str(out), "--workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first_chunk = out / "shard-3-0000" / "chunk-000000"
    deadline = time.monotonic() + 300
    while not first_chunk.is_dir() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert first_chunk.is_dir(), "the generation never sealed a chunk"
    partial = Dataset(out, verify="none")
    ref = Dataset(reference)
    assert partial.n_steps < ref.n_steps, "the run finished before it was killed: nothing to resume"
    assert generate.main([*ARGS, "--out", str(out), "--workers", "1"]) == 0
    assert not list(out.glob("shard-*/.tmp-*"))
    _compare(Dataset(out), ref)
    # episode ids per shard are 0..n-1 exactly once, steps 0..L within each
    resumed = Dataset(out)
    for shard in ("shard-3-0000", "shard-3-0001"):
        rows = [r for c in resumed.chunks if c.shard == shard for r in range(c.offset, c.offset + c.n_steps)]
        ids = resumed.gather("episode_id", np.array(rows))
        assert list(dict.fromkeys(ids.tolist())) == list(range(ids.max() + 1))
        assert np.all(np.diff(ids) >= 0)
    # a third run finds nothing to do and leaves the data alone
    assert generate.main([*ARGS, "--out", str(out), "--workers", "1"]) == 0
    _compare(Dataset(out), ref)


def test_rows_follow_the_recording_contract(reference):
    ds = Dataset(reference)
    meta = json.loads((reference / "dataset.json").read_text())
    assert meta["config"]["task"] == "flat" and meta["config"]["num_shards"] == 2
    assert 1000 <= ds.n_steps < 1000 + 2 * 101
    action, policy_action = ds.array("action"), ds.array("policy_action")
    perturbed, clean = ds.array("perturbed"), ds.array("clean_expert")
    expert, terminated, truncated = ds.array("expert_episode"), ds.array("terminated"), ds.array("truncated")
    final = np.zeros(ds.n_steps, bool)
    final[ds.episode_ends - 1] = True
    assert np.all(terminated | truncated == final), "exactly the final row of each episode is terminal"
    assert np.all(ds.array("step")[ds.episode_starts] == 0)
    assert np.all(clean == (expert & ~perturbed & ~final))
    assert np.abs(action).max() <= 1.0
    np.testing.assert_array_equal(action[~perturbed & ~final], policy_action[~perturbed & ~final])
    assert np.all(action[final] == 0)
    if perturbed.any():
        assert np.any(action[perturbed] != policy_action[perturbed])
    values = ds.array("value")
    assert np.all(np.isfinite(values)) and np.all(values[final & terminated] == 0.0)
    assert values[~final].std() > 0
    assert ds.fields["obs/height_map"].shape == GO2.height_map_shape
    assert ds.fields["priv/probe"].shape == (3,)
    batch = WindowSampler(ds, GO2, batch_size=8, seed=0).sample()
    assert batch["obs"]["height_map"].shape == (8, GO2.horizon + 1, *GO2.height_map_shape)
    assert torch.isfinite(batch["obs"]["proprio"]).all() and torch.isfinite(batch["values"]).all()


@pytest.mark.timeout(600)
def test_expert_only_mixture_has_no_perturbed_steps_at_the_same_row_budget(reference, tmp_path, capsys):
    out = tmp_path / "expert_only"
    assert generate.main([*ARGS, "--out", str(out), "--workers", "1", "--mixture", "expert_only"]) == 0
    ds, ref = Dataset(out), Dataset(reference)
    behaviour = json.loads((out / "dataset.json").read_text())["config"]["behaviour"]
    assert behaviour["expert_fraction"] == 1.0 and behaviour["perturbation"]["never_noised_fraction"] == 1.0
    # same budget rule as the default mixture: each shard stops at the first episode end past its share
    assert 1000 <= ds.n_steps < 1000 + 2 * 101 and 1000 <= ref.n_steps < 1000 + 2 * 101
    assert ref.array("perturbed").any() and not ref.array("expert_episode").all(), "the default mixture is mixed"
    assert not ds.array("perturbed").any()
    assert ds.array("expert_episode").all() and np.all(ds.array("skill") == 1.0)
    final = np.zeros(ds.n_steps, bool)
    final[ds.episode_ends - 1] = True
    np.testing.assert_array_equal(ds.array("action")[~final], ds.array("policy_action")[~final])
    assert ds.array("clean_expert")[~final].all()
    # a mixture key set twice is a usage error, not a silent override
    assert generate.main([*ARGS, "--out", str(tmp_path / "x"), "--mixture", "expert_only",
                          "--set", "data.behaviour.expert_fraction=0.5"]) == 2
    assert "--mixture" in capsys.readouterr().err


@pytest.mark.timeout(600)
def test_expert_overrides_drive_every_episode_and_are_recorded(reference, tmp_path, capsys):
    assert generate.main([*ARGS, "--out", str(tmp_path / "bad"), "--expert", "no_such_field=1"]) == 2
    assert "no_such_field" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    out = tmp_path / "capped"
    assert generate.main([*ARGS, "--out", str(out), "--shard", "0", "--expert", "accel_friction_cap=0.25"]) == 0
    behaviour = json.loads((out / "dataset.json").read_text())["config"]["behaviour"]
    assert behaviour["expert_overrides"] == [["accel_friction_cap", "0.25"]]
    # Shard 0's first episode has the same seed, start and driver as the reference's: only the policy differs.
    capped, ref = Dataset(out), Dataset(reference)
    first = [ds.episode_ends[0] - 1 for ds in (capped, ref)]  # the first episode's steps, final row left out
    assert capped.array("skill")[0] == ref.array("skill")[0]
    np.testing.assert_array_equal(capped.array("obs/proprio")[0], ref.array("obs/proprio")[0])
    assert not np.allclose(capped.array("policy_action")[: min(first)], ref.array("policy_action")[: min(first)])
    # Resuming with another expert is another configuration.
    assert generate.main([*ARGS, "--out", str(out), "--shard", "0"]) == 2
    assert "different configuration" in capsys.readouterr().err


def test_a_run_that_fitted_its_value_function_resumes(reference, tmp_path):
    # The reference's run fitted and saved its value function itself; running the same command again (what a
    # resume after a stop does) must accept it, and dataset.json names the function the rows were labelled with.
    out = tmp_path / "copy"
    shutil.copytree(reference, out)
    saved = json.loads((out / "value_fn.json").read_text())["weights_sha256"]
    assert json.loads((out / "dataset.json").read_text())["value_fn_sha256"] == saved
    before = Dataset(out).checksum()
    assert generate.main([*ARGS, "--out", str(out)]) == 0
    # A dataset.json written without the hash (by the version before this was fixed) gets it recorded on resume.
    manifest = json.loads((out / "dataset.json").read_text())
    (out / "dataset.json").write_text(json.dumps({**manifest, "value_fn_sha256": None}))
    assert generate.main([*ARGS, "--out", str(out)]) == 0
    assert json.loads((out / "dataset.json").read_text()) == manifest
    assert Dataset(out).checksum() == before


def test_resume_with_a_different_configuration_is_refused(reference, tmp_path, capsys):
    out = tmp_path / "copy"
    shutil.copytree(reference, out)
    changed = [a if a != "data.value.train_steps=100" else "data.value.train_steps=101" for a in ARGS]
    before = Dataset(out).checksum()
    assert generate.main([*changed, "--out", str(out)]) == 2
    assert "different configuration" in capsys.readouterr().err
    assert generate.main([*ARGS, "--out", str(out), "--set", "terrain.friction=0.5"]) == 2  # env overrides too
    assert "different configuration" in capsys.readouterr().err
    assert Dataset(out).checksum() == before
    assert generate.main([*ARGS, "--out", str(tmp_path / "fresh"), "--set", "no_such_key=1"]) == 2
    assert "no_such_key" in capsys.readouterr().err


def test_bad_flags_are_reported(tmp_path, capsys):
    assert generate.main(["--robot", "go2", "--task", "flat", "--steps", "10", "--out", str(tmp_path),
                          "--set", "data.nonsense=1"]) == 2
    assert "nonsense" in capsys.readouterr().err
    assert generate.main(["--robot", "go2", "--task", "flat", "--steps", "10", "--out", str(tmp_path),
                          "--shard", "5", "--num-shards", "2"]) == 2


@pytest.mark.timeout(600)
def test_ur5e_generation_records_camera_images(tmp_path):
    out = tmp_path / "ur5e"
    args = ["--robot", "ur5e", "--task", "peg", "--steps", "100", "--seed", "0", "--chunk-steps", "50",
            "--set", "episode_s=2", "--set", "data.value.episodes=1", "--set", "data.value.train_steps=50",
            "--set", "data.value.batch_size=64", "--no-fsync", "--out", str(out)]
    assert generate.main(args) == 0
    ds = Dataset(out)
    assert ds.fields["obs/image"].shape == (*UR5E.image_shape, 3) and ds.fields["obs/image"].dtype == "|u1"
    images = ds.array("obs/image")
    assert images.std() > 0, "rendered camera images should not be blank"
    assert "obs/height_map" not in ds.fields and ds.fields["obs/command"].shape == (3,)
    commands = ds.array("obs/command")
    # The command (registered fixture pose) is constant within an episode and a few mm from the nominal hole.
    assert np.all(np.abs(commands[:, :2] - np.array([0.15, -0.5])) < 0.03), commands[:3]
    episode = ds.array("episode_id")
    assert all(np.ptp(commands[episode == e], axis=0).max() == 0 for e in np.unique(episode))
    batch = WindowSampler(ds, UR5E, batch_size=4, seed=0).sample()
    assert batch["obs"]["image"].shape == (4, UR5E.horizon + 1, 3, *UR5E.image_shape)
    assert batch["obs"]["image"].dtype == torch.uint8


def test_expert_continuations_are_seeded_and_leave_the_env_untouched():
    from simdist_core.data.rollout import BehaviourConfig, _expert_continuation, branch_expert_episodes
    from simdist_core.sim.base import make_env

    env = make_env("go2/flat", {"episode_length_s": "2"})
    a = branch_expert_episodes(env, BehaviourConfig(), 3, seed=5, branch_steps=15, branch_prob=0.1)
    b = branch_expert_episodes(env, BehaviourConfig(), 3, seed=5, branch_steps=15, branch_prob=0.1)
    assert len(a) == 3 and all(len(e.rewards) <= 15 for e in a)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.features, y.features)
    env.reset(seed=1)
    for _ in range(10):
        env.step(np.zeros(12))
    qpos, time_s = env.data.qpos.copy(), env.time_s
    episode = _expert_continuation(env, 10, np.random.default_rng(0))
    assert len(episode.rewards) == 10 and episode.features.shape[0] == 11
    np.testing.assert_array_equal(episode.features[0], env.privileged_state()["value_features"])
    np.testing.assert_array_equal(env.data.qpos, qpos)
    assert env.time_s == time_s
