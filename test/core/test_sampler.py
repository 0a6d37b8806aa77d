"""WindowSampler: WindowBatch shapes/dtypes per the contract, padding and masks against hand-computed values."""

import numpy as np
import pytest
import torch
from simdist_core.data.dataset import ChunkWriter, Dataset
from simdist_core.data.history import ObservationHistory
from simdist_core.data.sampler import WindowSampler, fit_normalizer_stats
from simdist_core.robots import GO2, UR5E, RobotSpec

# A tiny robot: proprio (r, 10 r), one action, history T=3, horizon H=2.
TINY = RobotSpec(
    name="tiny", encoder="none", proprio_fields=(("x", 2),), action_dim=1, action_names=("a",),
    command_dim=0, history=3, horizon=2, control_hz=10.0,
)
EPISODES = [(0, 4), (1, 5)]  # ep0 = rows 0..3, ep1 = rows 4..8


def _tiny_dataset(tmp_path, chunk_steps=3):
    with ChunkWriter(tmp_path / "shard-0-0", chunk_steps=chunk_steps, fsync=False) as w:
        row = 0
        for ep, n in EPISODES:
            for s in range(n):
                w.append({
                    "obs/proprio": np.array([row, 10 * row], np.float32),
                    "action": np.array([row + 0.5], np.float32),
                    "reward": np.float32(100 + row),
                    "value": np.float32(200 + row),
                    "clean_expert": row % 2 == 1,
                    "priv/probe": np.full(3, row, np.float32),
                    "episode_id": np.int64(ep),
                    "step": np.int32(s),
                })
                row += 1
    return Dataset(tmp_path)


def test_padding_and_masks_hand_computed(tmp_path):
    ds = _tiny_dataset(tmp_path)  # chunks of 3 rows: episodes cross chunk boundaries
    sampler = WindowSampler(ds, TINY, batch_size=2, seed=0)
    np.testing.assert_array_equal(sampler.starts, [0, 1, 2, 4, 5, 6, 7])  # last rows 3 and 8 have no transition
    batch = sampler.sample(np.array([1, 2]))
    p = batch["obs"]["proprio"][..., 0].numpy()
    pa = batch["obs"]["prev_actions"][..., 0].numpy()
    # t=1 (episode rows 0..3): k=0 -> rows (-1, 0, 1) -> proprio (0, 0, 1); prev a_{r-1}: (0, 0, a0=0.5)
    #                          k=1 -> rows (0, 1, 2) -> (0, 1, 2); prev (0, 0.5, 1.5)
    #                          k=2 -> rows (1, 2, 3) -> (1, 2, 3); prev (0.5, 1.5, 2.5)
    np.testing.assert_array_equal(p[0], [[0, 0, 1], [0, 1, 2], [1, 2, 3]])
    np.testing.assert_array_equal(pa[0], [[0, 0, 0.5], [0, 0.5, 1.5], [0.5, 1.5, 2.5]])
    # t=2: k=0 rows (0,1,2); k=1 rows (1,2,3); k=2 is past the end (row 4 is episode 1) -> repeats row 3's window
    np.testing.assert_array_equal(p[1], [[0, 1, 2], [1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(batch["obs"]["proprio"][1, 0, :, 1].numpy(), [0, 10, 20])
    np.testing.assert_array_equal(batch["actions"][..., 0].numpy(), [[1.5, 2.5], [2.5, 3.5]])
    np.testing.assert_array_equal(batch["rewards"].numpy(), [[101, 102], [102, 103]])
    np.testing.assert_array_equal(batch["valid"].numpy(), [[True, True], [True, False]])
    # values = V(s_{t+1}), V(s_{t+2}); zero where invalid
    np.testing.assert_array_equal(batch["values"].numpy(), [[202, 203], [203, 0]])
    np.testing.assert_array_equal(batch["clean_expert"].numpy(), [[True, False], [False, True]])
    np.testing.assert_array_equal(batch["probe"][..., 0].numpy(), [[1, 2, 3], [2, 3, 3]])
    np.testing.assert_array_equal(batch["episode_step"].numpy(), [1, 2])  # rows 1 and 2 of episode 0
    np.testing.assert_array_equal(sampler.sample(np.array([4, 7]))["episode_step"].numpy(), [0, 3])  # episode 1
    # t=4 is the first row of episode 1: history is all row 4 with zero previous actions
    first = sampler.sample(np.array([4]))
    np.testing.assert_array_equal(first["obs"]["proprio"][0, 0, :, 0].numpy(), [4, 4, 4])
    np.testing.assert_array_equal(first["obs"]["prev_actions"][0, 0, :, 0].numpy(), [0, 0, 0])
    np.testing.assert_array_equal(first["obs"]["prev_actions"][0, 1, :, 0].numpy(), [0, 0, 4.5])


def test_padding_matches_online_observation_history(tmp_path):
    ds = _tiny_dataset(tmp_path)
    sampler = WindowSampler(ds, TINY, batch_size=1)
    history = ObservationHistory(TINY)
    for row in range(4, 9):  # episode 1
        obs = {"proprio": ds.gather("obs/proprio", np.array(row))}
        if row == 4:
            history.reset(obs)
        else:
            history.record_action(ds.gather("action", np.array(row - 1)))
            history.push(obs)
        if row < 8:
            online = history.model_input()
            offline = sampler.sample(np.array([row]))["obs"]
            torch.testing.assert_close(offline["proprio"][:, 0], online["proprio"])
            torch.testing.assert_close(offline["prev_actions"][:, 0], online["prev_actions"])


def test_split_by_episode_and_recent(tmp_path):
    ds = _tiny_dataset(tmp_path)
    sampler = WindowSampler(ds, TINY, batch_size=4)
    train, hold = sampler.split(0.5, seed=3)
    assert set(ds.row_episode[train.starts]).isdisjoint(ds.row_episode[hold.starts])
    assert len(train.starts) + len(hold.starts) == len(sampler.starts)
    recent = sampler.recent(4)  # rows 5..8 -> starts 5, 6, 7
    np.testing.assert_array_equal(recent.starts, [5, 6, 7])
    assert set(recent.sample()["obs"]["proprio"][:, 0, -1, 0].tolist()) <= {5.0, 6.0, 7.0}
    with pytest.raises(ValueError, match="holdout_fraction"):
        sampler.split(1.0)


def test_single_episode_store_is_split_in_time(tmp_path):
    with ChunkWriter(tmp_path / "replay", chunk_steps=10, fsync=False) as w:
        for r in range(100):  # a replay buffer: no episode ids, no labels
            w.append({"obs/proprio": np.full(2, r, np.float32), "action": np.zeros(1, np.float32)})
    ds = Dataset(tmp_path / "replay")
    sampler = WindowSampler(ds, TINY, batch_size=8)
    assert set(sampler.missing) == {"reward", "value", "clean_expert", "priv/probe"}
    batch = sampler.sample()
    assert not batch["clean_expert"].any() and batch["rewards"].abs().sum() == 0
    train, hold = sampler.split(0.2)
    assert train.starts.max() + TINY.horizon < hold.starts.min()


def _random_store(tmp_path, spec, n_eps=3, length=40):
    rng = np.random.default_rng(0)
    with ChunkWriter(tmp_path / "shard-0-0", chunk_steps=50, fsync=False) as w:
        for ep in range(n_eps):
            for s in range(length):
                rec = {
                    "obs/proprio": rng.standard_normal(spec.proprio_dim).astype(np.float32),
                    "action": rng.uniform(-1, 1, spec.action_dim).astype(np.float32),
                    "reward": np.float32(rng.standard_normal()),
                    "value": np.float32(rng.standard_normal()),
                    "clean_expert": bool(rng.random() < 0.5),
                    "priv/probe": rng.standard_normal(3).astype(np.float32),
                    "episode_id": np.int64(ep),
                    "step": np.int32(s),
                }
                if spec.command_dim:
                    rec["obs/command"] = rng.standard_normal(spec.command_dim).astype(np.float32)
                if spec.height_map_shape:
                    rec["obs/height_map"] = rng.standard_normal(spec.height_map_shape).astype(np.float32)
                if spec.image_shape:
                    rec["obs/image"] = rng.integers(0, 255, (*spec.image_shape, 3), dtype=np.uint8)
                w.append(rec)
    return Dataset(tmp_path)


@pytest.mark.parametrize("spec", [GO2, UR5E], ids=lambda s: s.name)
def test_contract_shapes_and_dtypes(tmp_path, spec):
    ds = _random_store(tmp_path, spec)
    B, H, T, A = 6, spec.horizon, spec.history, spec.action_dim  # noqa: N806  (shape letters)
    batch = WindowSampler(ds, spec, batch_size=B, seed=1).sample()
    obs = batch["obs"]
    assert obs["proprio"].shape == (B, H + 1, T, spec.proprio_dim) and obs["proprio"].dtype == torch.float32
    assert obs["prev_actions"].shape == (B, H + 1, T, A) and obs["prev_actions"].dtype == torch.float32
    if spec.command_dim:
        assert obs["command"].shape == (B, H + 1, spec.command_dim)
    else:
        assert "command" not in obs
    if spec.height_map_shape:
        assert obs["height_map"].shape == (B, H + 1, *spec.height_map_shape)
    if spec.image_shape:
        assert obs["image"].shape == (B, H + 1, 3, *spec.image_shape) and obs["image"].dtype == torch.uint8
        stored = ds.gather("obs/image", np.array([0]))[0]  # (h, w, 3)
        first = WindowSampler(ds, spec, batch_size=1).sample(np.array([0]))["obs"]["image"][0, 0]
        np.testing.assert_array_equal(first.numpy(), stored.transpose(2, 0, 1))
    assert batch["actions"].shape == (B, H, A) and batch["actions"].dtype == torch.float32
    for key in ("rewards", "values"):
        assert batch[key].shape == (B, H) and batch[key].dtype == torch.float32
    for key in ("clean_expert", "valid"):
        assert batch[key].shape == (B, H) and batch[key].dtype == torch.bool
    assert batch["probe"].shape == (B, H + 1, 3)
    assert torch.isfinite(obs["proprio"]).all()
    stats = fit_normalizer_stats(ds)
    assert stats["proprio_mean"].shape == (spec.proprio_dim,) and stats["proprio_std"].min() > 0
    assert stats["reward_scale"].shape == (1,) and stats["value_scale"].shape == (1,)
    np.testing.assert_allclose(stats["reward_scale"], ds.array("reward").std(), rtol=1e-5)


def test_missing_required_field_is_named(tmp_path):
    ds = _random_store(tmp_path, UR5E, n_eps=1, length=5)
    with pytest.raises(KeyError, match="obs/height_map.*go2"):
        WindowSampler(ds, GO2)


@pytest.mark.parametrize("spec", [GO2, UR5E], ids=lambda s: s.name)
def test_resident_store_gives_identical_batches(tmp_path, spec):
    """``resident=True`` (the GPU path; run here on the CPU) gathers the same windows, views share its copy."""
    ds = _random_store(tmp_path, spec)
    streamed = WindowSampler(ds, spec, batch_size=5, seed=3)
    resident = WindowSampler(ds, spec, batch_size=5, seed=3, resident=True)
    for _ in range(3):
        a, b = streamed.sample(), resident.sample()
        flat_a = {**a["obs"], **{k: v for k, v in a.items() if k != "obs"}}
        flat_b = {**b["obs"], **{k: v for k, v in b.items() if k != "obs"}}
        assert flat_a.keys() == flat_b.keys()
        for key in flat_a:
            assert flat_a[key].dtype == flat_b[key].dtype, key
            torch.testing.assert_close(flat_a[key], flat_b[key], rtol=0, atol=0, msg=key)
    train, hold = resident.split(0.3)
    assert train._resident is resident._resident and hold._resident is resident._resident
    np.testing.assert_array_equal(hold.sample()["obs"]["proprio"].numpy(),
                                  streamed.split(0.3)[1].sample()["obs"]["proprio"].numpy())
