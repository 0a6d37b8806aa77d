"""scripts/diagnostics/value_outcomes.py: does a score rank the UR5e rows at the hole by what happens next?"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from _train_testlib import tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.data.chunks import ChunkWriter

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "diagnostics" / "value_outcomes.py"
STEPS = 12


def _script():
    spec = importlib.util.spec_from_file_location("value_outcomes", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _features(lateral_m: float, success: bool) -> np.ndarray:
    """UR5e value features of a tip at the hole's top, ``lateral_m`` off its axis (columns as the env's)."""
    f = np.zeros(10, np.float32)
    f[5], f[8] = lateral_m / 0.01, float(success)
    return f


def _store(root: Path) -> None:
    """Episodes 0-2 insert at their last row (tip 1 mm off the axis, low labels); 3-5 never do (2 mm, high labels)."""
    rng = np.random.default_rng(0)
    with ChunkWriter(root / "shard-0-0", chunk_steps=16, align_episodes=True, fsync=False) as writer:
        for episode in range(6):
            inserts = episode < 3
            for step in range(STEPS):
                last = step == STEPS - 1
                writer.append({
                    "obs/proprio": rng.normal(size=23).astype(np.float32),
                    "obs/command": np.zeros(3, np.float32),
                    "obs/image": rng.integers(0, 255, (64, 64, 3), dtype=np.uint8),
                    "action": rng.uniform(-1, 1, 4).astype(np.float32),
                    "reward": np.float32(10.0 if inserts and last else -1.0),
                    "value": np.float32(-50.0 + step if inserts else -10.0 + step),
                    "terminated": inserts and last,
                    "priv/value_features": _features(0.001 if inserts else 0.002, inserts and last),
                    "episode_id": np.int64(episode),
                    "step": np.int32(step),
                })  # fmt: skip
            writer.end_episode()


def test_auc_counts_ties_half_and_reads_a_reversed_ranking_below_a_half():
    auc = _script().auc
    assert auc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert auc(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 0.0
    assert auc(np.array([1.0, 3.0]), np.array([1.0, 2.0])) == pytest.approx(0.625)  # 1 tie (0.5) + 2 wins of 4
    assert np.isnan(auc(np.array([]), np.array([1.0])))


def test_labels_that_rank_stuck_searches_higher_read_below_a_half_and_the_head_is_scored(tmp_path):
    torch.set_num_threads(1)
    _store(tmp_path / "data")
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("ur5e"), version=1)
    out = tmp_path / "report.json"
    assert _script().main(["--data", str(tmp_path / "data"), "--checkpoint", str(ckpt), "--within", "3",
                           "--head-rows", "20", "--bootstrap", "20", "--json", str(out)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    # inserted rows are not "at the hole", nor are last rows (no window starts there): 6 x 11 - 0 = 66 rows
    assert report["episodes_inserted"] == 3 and report["at_hole_rows"] == 6 * (STEPS - 1)
    ever = report["outcomes"]["episode_inserts"]
    assert (ever["positives"], ever["negatives"]) == (3 * (STEPS - 1), 3 * (STEPS - 1))
    assert ever["label"]["auc"] == 0.0 and ever["minus_lateral"]["auc"] == 1.0
    lo, hi = ever["label"]["auc_ci95"]
    assert 0.0 <= lo <= hi <= 0.5
    soon = report["outcomes"]["inserts_within_3_steps"]
    assert soon["positives"] == 3 * 3  # rows 8, 9, 10 of each inserting episode (insertion at row 11)
    assert report["head_rows"] == 20 and np.isfinite(ever["head"]["auc"])
    assert np.isfinite(report["head_vs_label"]["r"])


def test_another_value_function_scores_the_rows_too(tmp_path):
    from simdist_core.data.value_labels import ExpertEpisode, ValueFitConfig, fit_value_function

    _store(tmp_path / "data")
    # a fit that has seen the tip closer to the axis earn more: it ranks the inserting episodes' rows first
    episodes = [ExpertEpisode(features=np.stack([_features(lateral, False)] * 5), rewards=np.full(4, reward),
                              terminated=True) for lateral, reward in ((0.001, 5.0), (0.002, -5.0))]  # fmt: skip
    fit_value_function(episodes, ValueFitConfig(train_steps=200, bootstrap_rounds=0)).save(tmp_path / "fit")
    out = tmp_path / "report.json"
    assert _script().main(["--data", str(tmp_path / "data"), "--value-fn", str(tmp_path / "fit"), "--bootstrap", "5",
                           "--json", str(out)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    ever = report["outcomes"]["episode_inserts"]
    assert ever["label"]["auc"] == 0.0 and ever["refit_label"]["auc"] == 1.0
    assert report["value_fn"]["n_episodes"] == 2 and "head" not in ever
