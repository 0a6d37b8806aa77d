"""Finetuner node in a real rclpy graph: a round in a worker process, gated atomic checkpoint, announcement."""

import signal

import numpy as np
import pytest
import rclpy
import torch
from _graph_helpers import AnnounceCollector, DiagnosticsCollector, start_node, stop, wait_for
from simdist_core.checkpoint import save_checkpoint, verify_checkpoint
from simdist_core.data.chunks import ChunkWriter
from simdist_core.data.transitions import make_record
from simdist_core.models.world_model import WorldModel
from simdist_core.robots import GO2
from simdist_ros.finetuner_node import latest_checkpoint

from simdist_ros import topics


def make_checkpoint(path, version=0, seed=0):
    """A randomly initialised Go2 world model (until trained checkpoints are shipped)."""
    torch.manual_seed(seed)
    return save_checkpoint(path, WorldModel(GO2), version=version)


def fill_replay(root, n_steps, episode_len=150, seed=0):
    rng = np.random.default_rng(seed)
    with ChunkWriter(root / "shard-replay-0000", chunk_steps=100, fsync=False) as writer:
        for i in range(n_steps):
            obs = {"proprio": (0.1 * rng.normal(size=GO2.proprio_dim)).astype(np.float32),
                   "command": np.array([0.5, 0, 0], np.float32),
                   "height_map": np.full(GO2.height_map_shape, -0.27, np.float32)}
            action = rng.uniform(-1, 1, GO2.action_dim).astype(np.float32)
            writer.append(make_record(GO2, obs, action, i * 20_000_000, i // episode_len))


@pytest.mark.timeout(300)
def test_finetuner_round_announces_verified_dynamics_only_checkpoint(tmp_path):
    initial = make_checkpoint(tmp_path / "init")
    fill_replay(tmp_path / "replay", 300)
    out = tmp_path / "ckpt"
    params = {"robot": "go2", "checkpoint": str(tmp_path / "init"), "replay_dir": str(tmp_path / "replay"),
              "output_dir": str(out), "min_new_steps": 100, "steps_per_round": 10, "batch_size": 8,
              "max_rounds": 1, "check_period_s": 0.2}
    proc = start_node("finetuner_node", params, tmp_path / "ft.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        collector = AnnounceCollector(context, topics.MODEL_UPDATE)
        diag = DiagnosticsCollector(context, collector.executor)
        assert wait_for(lambda: collector.items, 180, collector.spin), (tmp_path / "ft.log").read_text()[-3000:]
        ann = collector.items[-1]
        assert stop(proc, signal.SIGINT) == 0, (tmp_path / "ft.log").read_text()[-3000:]

        assert ann["version"] == initial.version + 1 and ann["parent_version"] == initial.version
        assert ann["parts_changed"] == ["dynamics"]
        manifest = verify_checkpoint(ann["path"])
        assert ann["sha256"] == manifest.weights_sha256
        assert manifest.parts["encoder"] == initial.parts["encoder"], "the encoder must stay bit-identical"
        assert manifest.parts["dynamics"] != initial.parts["dynamics"]
        assert ann["val_loss"] < ann["old_val_loss"], "announced only because the gate passed"
        assert latest_checkpoint(out) == (1, out / "v0001")

        # Restart: the newest own checkpoint is re-announced (late planners catch up), nothing is rewritten.
        collector.items.clear()
        proc = start_node("finetuner_node", params, tmp_path / "ft2.log")
        diag.latest.clear()
        assert wait_for(lambda: collector.items and diag.find("finetuner"), 60, collector.spin), \
            (tmp_path / "ft2.log").read_text()[-3000:]
        assert collector.items[-1]["version"] == 1 and collector.items[-1].get("resumed") is True
        assert stop(proc, signal.SIGINT) == 0
        assert sorted(p.name for p in out.iterdir()) == ["v0001"]

        # Restart with another model in the same output_dir: its lineage is refused, not resumed or announced.
        make_checkpoint(tmp_path / "init2", seed=1)
        collector.items.clear()
        diag.latest.clear()
        no_round = {**params, "checkpoint": str(tmp_path / "init2"), "min_new_steps": 100_000}  # only the resume logic
        proc = start_node("finetuner_node", no_round, tmp_path / "ft3.log")
        assert wait_for(lambda: diag.find("finetuner"), 60, collector.spin), (tmp_path / "ft3.log").read_text()[-3000:]
        assert diag.find("finetuner")["parent"].endswith("init2") and not collector.items
        assert stop(proc, signal.SIGINT) == 0
        assert "not a dynamics-only descendant" in (tmp_path / "ft3.log").read_text()
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)


def test_latest_checkpoint_skips_corrupt(tmp_path):
    make_checkpoint(tmp_path / "v0001", version=1)
    make_checkpoint(tmp_path / "v0002", version=2)
    weights = tmp_path / "v0002" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])  # truncated: must be skipped
    assert latest_checkpoint(tmp_path) == (1, tmp_path / "v0001")
