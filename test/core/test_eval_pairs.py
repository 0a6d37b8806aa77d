"""scripts/diagnostics/eval_pairs.py: joining split `simdist eval` reports and comparing two checkpoints per seed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "diagnostics" / "eval_pairs.py"


@pytest.fixture(scope="module")
def eval_pairs():
    spec = importlib.util.spec_from_file_location("eval_pairs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(folder: Path, name: str, first_seed: int, successes: list[float], planner: dict | None = None) -> None:
    episodes = [{"success": s, "reached_hole": 1.0, "centred_at_hole": s, "aligned_at_hole": s, "entered_hole": s}
                for s in successes]  # fmt: skip
    report = {"task": "ur5e/peg", "preset": "checkpoint", "planner": planner or {"prior_weight": 1000.0},
              "checkpoint": f"/somewhere/{name}", "per_episode": episodes}  # fmt: skip
    (folder / f"{name}_{first_seed}.json").write_text(json.dumps(report))


def test_sign_test_is_exact_and_two_sided(eval_pairs):
    assert eval_pairs.sign_test_p(0, 6) == pytest.approx(2 / 64)
    assert eval_pairs.sign_test_p(6, 0) == pytest.approx(2 / 64)
    assert eval_pairs.sign_test_p(13, 14) == 1.0
    assert eval_pairs.sign_test_p(0, 0) == 1.0


def test_reports_split_over_processes_join_by_seed(eval_pairs, tmp_path):
    _report(tmp_path, "base", 1000, [1.0, 0.0])
    _report(tmp_path, "base", 1002, [0.0])
    _report(tmp_path, "new", 1000, [1.0, 1.0, 1.0])
    base, _ = eval_pairs.episodes_by_seed(tmp_path, "base")
    new, _ = eval_pairs.episodes_by_seed(tmp_path, "new")
    assert sorted(base) == [1000, 1001, 1002] == sorted(new)
    assert [base[s]["success"] for s in (1000, 1001, 1002)] == [1.0, 0.0, 0.0]
    row = eval_pairs.summary(new)
    assert row["success_rate"] == 1.0 and row["funnel"]["entered_hole"] == 3


def test_reports_run_with_other_settings_are_refused(eval_pairs, tmp_path):
    _report(tmp_path, "base", 1000, [1.0])
    _report(tmp_path, "base", 1001, [1.0], planner={"prior_weight": 0.0})
    with pytest.raises(ValueError, match="other settings"):
        eval_pairs.episodes_by_seed(tmp_path, "base")
    with pytest.raises(FileNotFoundError):
        eval_pairs.episodes_by_seed(tmp_path, "missing")


def test_two_planner_settings_compare_only_when_the_key_they_differ_in_is_named(eval_pairs, tmp_path):
    on, off = {"prior_weight": 1000.0, "terminal_value": True}, {"prior_weight": 1000.0, "terminal_value": False}
    _report(tmp_path, "value_on", 1000, [1.0, 1.0, 0.0, 1.0], planner=on)
    _report(tmp_path, "value_off", 1000, [0.0, 1.0, 0.0, 0.0], planner=off)
    args = [str(tmp_path), "--base", "value_on", "--new", "value_off", "--json", str(tmp_path / "out.json")]
    with pytest.raises(ValueError, match="evaluated differently"):
        eval_pairs.main(args)
    eval_pairs.main([*args, "--planner-key", "terminal_value"])
    paired = json.loads((tmp_path / "out.json").read_text())["paired"]
    assert (paired["new_wins"], paired["new_losses"]) == (0, 2)
    assert paired["new_minus_base"] == -0.5
    low, high = paired["new_minus_base_ci95"]
    assert -1.0 <= low <= -0.5 <= high <= 0.0
