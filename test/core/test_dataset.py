"""Chunked step store: round trip, atomic sealing, corruption/truncation detection, episodes, provenance hash."""

import json
import logging
import os
import shutil

import numpy as np
import pytest
from simdist_core.data.dataset import ChunkWriter, CorruptChunkError, Dataset


def _record(episode, step, value=None):
    v = float(episode * 100 + step) if value is None else value
    return {
        "obs/proprio": np.array([v, -v], np.float32),
        "action": np.array([v / 10], np.float32),
        "reward": np.float32(v),
        "episode_id": np.int64(episode),
        "step": np.int32(step),
        "perturbed": step % 2 == 0,
    }


def _write(shard_dir, episodes, chunk_steps=4, align=False):
    with ChunkWriter(shard_dir, chunk_steps=chunk_steps, align_episodes=align, fsync=False) as writer:
        for ep, length in episodes:
            for step in range(length):
                writer.append(_record(ep, step))
            writer.end_episode()
    return writer


def test_round_trip_and_episodes(tmp_path):
    _write(tmp_path / "shard-0-0", [(0, 5), (1, 3), (2, 6)], chunk_steps=4)
    ds = Dataset(tmp_path)
    assert ds.n_steps == 14 and len(ds.chunks) == 4  # 4 + 4 + 4 + 2 (last sealed on close)
    assert [c.n_steps for c in ds.chunks] == [4, 4, 4, 2]
    np.testing.assert_array_equal(ds.episode_starts, [0, 5, 8])
    np.testing.assert_array_equal(ds.episode_ends, [5, 8, 14])
    proprio = ds.array("obs/proprio")
    expected = [100 * e + s for e, n in [(0, 5), (1, 3), (2, 6)] for s in range(n)]
    np.testing.assert_array_equal(proprio[:, 0], expected)
    assert proprio.dtype == np.float32 and ds.array("perturbed").dtype == np.bool_
    # gather across chunk boundaries, any index shape, any order
    rows = np.array([[13, 0], [4, 9]])
    np.testing.assert_array_equal(ds.gather("obs/proprio", rows)[..., 0], np.array(expected)[rows])
    assert ds.gather("reward", rows).shape == (2, 2)
    meta = json.loads((ds.chunks[0].path / "meta.json").read_text())
    assert meta["n_steps"] == 4 and meta["episode_ids"] == [0] and meta["fields"]["obs/proprio"]["shape"] == [2]
    assert (ds.chunks[0].path / "obs" / "proprio.npy").is_file()
    in_mem = Dataset(tmp_path, in_memory=True)
    np.testing.assert_array_equal(in_mem.gather("action", rows), ds.gather("action", rows))


def test_align_episodes_seals_only_at_episode_ends(tmp_path):
    _write(tmp_path / "shard-0-0", [(0, 3), (1, 3), (2, 5), (3, 1)], chunk_steps=4, align=True)
    ds = Dataset(tmp_path)
    assert [c.n_steps for c in ds.chunks] == [6, 5, 1]
    metas = [json.loads((c.path / "meta.json").read_text()) for c in ds.chunks]
    assert [m["episode_ids"] for m in metas] == [[0, 1], [2], [3]]


def test_multiple_shards_and_writer_resume(tmp_path):
    _write(tmp_path / "shard-0-1", [(0, 3)], chunk_steps=2)
    _write(tmp_path / "shard-0-0", [(0, 2), (1, 2)], chunk_steps=2)
    # reopening a shard continues the numbering and keeps the schema
    writer = ChunkWriter(tmp_path / "shard-0-0", chunk_steps=2, fsync=False)
    assert writer.next_index == 2 and writer.sealed_steps == 4
    with pytest.raises(ValueError, match="missing"):
        writer.append({"action": np.zeros(1, np.float32)})
    writer.append(_record(0, 0))  # same episode id as shard-0-1's, but a different shard: a new episode
    writer.close()
    ds = Dataset(tmp_path)
    assert [c.shard for c in ds.chunks] == ["shard-0-0"] * 3 + ["shard-0-1"] * 2
    # shard-0-0: ep0 (0,1) ep1 (2,3) ep0 again (4) | shard-0-1: ep0 (5,6,7)
    np.testing.assert_array_equal(ds.episode_starts, [0, 2, 4, 5])


def test_schema_and_value_validation(tmp_path):
    writer = ChunkWriter(tmp_path / "s", chunk_steps=10, fsync=False)
    writer.append(_record(0, 0))
    bad_shape = _record(0, 1)
    bad_shape["obs/proprio"] = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"obs/proprio.*shape \(3,\)"):
        writer.append(bad_shape)
    nan = _record(0, 1)
    nan["reward"] = np.float32("nan")
    with pytest.raises(ValueError, match="reward.*non-finite"):
        writer.append(nan)
    wrong_kind = _record(0, 1)
    wrong_kind["episode_id"] = 1.5
    with pytest.raises(ValueError, match="episode_id.*cannot be stored"):
        writer.append(wrong_kind)
    with pytest.raises(ValueError, match="field name"):
        ChunkWriter(tmp_path / "t", fsync=False).append({"bad name": 1.0})
    assert writer.open_steps == 1


def _flip_byte(path, offset_from_end=3):
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupted_chunk_is_refused_with_its_name(tmp_path):
    _write(tmp_path / "shard-0-0", [(0, 12)], chunk_steps=4)
    victim = tmp_path / "shard-0-0" / "chunk-000001"
    _flip_byte(victim / "obs" / "proprio.npy")
    with pytest.raises(CorruptChunkError, match=r"chunk-000001.*obs/proprio.*sha256"):
        Dataset(tmp_path)
    # lazy: opening works, reading the bad chunk raises, good chunks read fine
    lazy = Dataset(tmp_path, verify="lazy")
    lazy.gather("obs/proprio", np.array([0, 1]))
    with pytest.raises(CorruptChunkError, match="chunk-000001"):
        lazy.gather("obs/proprio", np.array([5]))
    # verify() reports without raising
    assert [p.chunk.name for p in Dataset(tmp_path, verify="none").verify()] == ["chunk-000001"]


def test_skip_policy_leaves_chunk_out_and_splits_episode(tmp_path, caplog):
    _write(tmp_path / "shard-0-0", [(0, 12)], chunk_steps=4)
    _flip_byte(tmp_path / "shard-0-0" / "chunk-000001" / "action.npy")
    with caplog.at_level(logging.WARNING):
        ds = Dataset(tmp_path, on_corrupt="skip")
    assert "chunk-000001" in caplog.text
    assert [c.index for c in ds.chunks] == [0, 2] and ds.n_steps == 8
    assert len(ds.skipped) == 1
    # the same episode id on both sides of the hole is not joined into one episode
    np.testing.assert_array_equal(ds.episode_starts, [0, 4])


def test_truncated_missing_and_meta_problems_detected_without_hashing(tmp_path):
    _write(tmp_path / "shard-0-0", [(0, 12)], chunk_steps=4)
    shard = tmp_path / "shard-0-0"
    path = shard / "chunk-000000" / "reward.npy"
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(CorruptChunkError, match=r"chunk-000000.*reward.*bytes"):
        Dataset(tmp_path, verify="none")
    os.remove(path)
    with pytest.raises(CorruptChunkError, match=r"chunk-000000.*reward.*missing"):
        Dataset(tmp_path, verify="none")
    os.remove(shard / "chunk-000001" / "meta.json")
    ds = Dataset(tmp_path, verify="none", on_corrupt="skip")
    assert [c.index for c in ds.chunks] == [2]
    meta_path = shard / "chunk-000002" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["fields"]["reward"]["sha256"] = "0" * 64  # hand-edited meta no longer matches its own chunk hash
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(FileNotFoundError):
        Dataset(shard, verify="none", on_corrupt="skip")  # every chunk is bad now
    with pytest.raises(CorruptChunkError, match="chunk-000002.*chunk_sha256"):
        shutil.rmtree(shard / "chunk-000000")
        shutil.rmtree(shard / "chunk-000001")
        Dataset(shard, verify="none")


def test_unsealed_temp_chunk_ignored_then_cleaned(tmp_path):
    shard = tmp_path / "shard-0-0"
    _write(shard, [(0, 4)], chunk_steps=4)
    (shard / ".tmp-chunk-000001-999").mkdir()
    (shard / ".tmp-chunk-000001-999" / "action.npy").write_bytes(b"partial")
    assert Dataset(tmp_path).n_steps == 4
    writer = ChunkWriter(shard, fsync=False)
    assert not (shard / ".tmp-chunk-000001-999").exists() and writer.next_index == 1


def test_exception_drops_open_rows_instead_of_sealing(tmp_path):
    shard = tmp_path / "shard-0-0"
    with pytest.raises(RuntimeError):
        with ChunkWriter(shard, chunk_steps=4, fsync=False) as writer:
            for s in range(6):
                writer.append(_record(0, s))
            raise RuntimeError("crash mid-episode")
    assert Dataset(tmp_path).n_steps == 4


def test_checksum_is_stable_and_tracks_content(tmp_path):
    _write(tmp_path / "shard-0-0", [(0, 8)], chunk_steps=4)
    first = Dataset(tmp_path).checksum()
    assert first == Dataset(tmp_path).checksum() and len(first) == 64
    _write(tmp_path / "shard-0-1", [(0, 2)], chunk_steps=4)
    assert Dataset(tmp_path).checksum() != first


def test_recent_rows_newest_chunks_first(tmp_path):
    shard = tmp_path / "shard-0-0"
    _write(shard, [(0, 12)], chunk_steps=4)
    ds = Dataset(tmp_path)
    np.testing.assert_array_equal(ds.recent_rows(6), np.arange(6, 12))
    np.testing.assert_array_equal(ds.recent_rows(100), np.arange(12))


def test_empty_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no sealed chunks"):
        Dataset(tmp_path)


def test_extend_block_splits_at_chunk_boundaries_and_validates_as_a_whole(tmp_path):
    rows = [_record(0, s) for s in range(10)]
    block = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
    with ChunkWriter(tmp_path / "s", chunk_steps=4, fsync=False) as writer:
        writer.append(_record(0, 0))
        writer.extend(block)  # 1 + 10 rows -> chunks of 4, 4, then 3 sealed on close
        bad = dict(block, reward=np.append(block["reward"][:-1], np.float32("inf")))
        with pytest.raises(ValueError, match="reward.*non-finite"):
            writer.extend(bad)
        with pytest.raises(ValueError, match="action.*shape"):
            writer.extend(dict(block, action=block["action"][:5]))
    ds = Dataset(tmp_path / "s")
    assert [c.n_steps for c in ds.chunks] == [4, 4, 3]
    np.testing.assert_array_equal(ds.array("step"), [0, *range(10)])
