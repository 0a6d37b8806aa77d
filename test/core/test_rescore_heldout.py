"""scripts/diagnostics/rescore_heldout.py: a finished benchmark's models scored again on its own held-out sets."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from _train_testlib import tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.eval.adaptation_cli import main as bench_main
from test_adaptation import TINY_RUN

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "diagnostics" / "rescore_heldout.py"


def _script():
    spec = importlib.util.spec_from_file_location("rescore_heldout", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rescoring_a_merged_report_reproduces_what_each_seed_recorded(tmp_path):
    torch.set_num_threads(1)
    ckpt, other = tmp_path / "ckpt", tmp_path / "other"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    save_checkpoint(other, tiny_model("go2", seed=1), version=1)
    report_path = tmp_path / "seeds.json"
    assert bench_main([*TINY_RUN, "--checkpoint", str(ckpt), "--compare", f"other={other}", "--seeds", "0,1",
                       "--json", str(report_path)]) == 0  # fmt: skip
    report = json.loads(report_path.read_text())
    assert _script().main(["--report", str(report_path), "--json", str(tmp_path / "rescored.json")]) == 0
    rescored = json.loads((tmp_path / "rescored.json").read_text())
    assert rescored["all_reproduced"] is True
    rows = {(r["seed"], r["method"]): r for r in rescored["rows"]}
    assert set(rows) == {(s, m) for s in (0, 1) for m in ("zero_shot", "zero_shot@other", "dynamics_only",
                                                           "dynamics_only@other")}  # fmt: skip
    for (seed, method), row in rows.items():  # this report records the task-unit error too: the same numbers
        recorded = report["results"][method]["reward_error_task_per_seed"][-1][seed]
        assert row["reward_error_task"] == pytest.approx(recorded, rel=1e-5)
    assert rows[(0, "zero_shot")]["reward_error_task"] != rows[(0, "zero_shot@other")]["reward_error_task"]


def test_a_report_that_does_not_match_its_workdir_is_flagged(tmp_path):
    torch.set_num_threads(1)
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    report_path = tmp_path / "one.json"
    assert bench_main([*TINY_RUN, "--checkpoint", str(ckpt), "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    report["results"]["zero_shot"]["reward_error"][0] *= 1.5  # not what this held-out set gives
    report_path.write_text(json.dumps(report))
    assert _script().main(["--report", str(report_path), "--json", str(tmp_path / "rescored.json")]) == 1
    rescored = json.loads((tmp_path / "rescored.json").read_text())
    assert [r["reproduced"] for r in rescored["rows"]] == [False, True]
