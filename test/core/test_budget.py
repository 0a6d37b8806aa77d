"""``simdist bench budget``: budgets parse, only the sample budget changes, and a run reports every point."""

import json

import pytest
import torch
from _train_testlib import tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.eval.budget import Budget, main, parse_budget, planner_config
from simdist_core.planning.mppi import PRESETS, planner_preset

pytestmark = pytest.mark.timeout(300)


def test_budgets_parse_as_samples_by_iterations_or_preset_names():
    assert parse_budget("64x2") == Budget("64x2", {"num_samples": "64", "iterations": "2"})
    assert parse_budget("reference") == Budget("reference", {})
    for bad in ("64", "x2", "64x0", "sixtyx2", "fast", "fast:prior_weight=1"):
        with pytest.raises(ValueError, match="SxI"):
            parse_budget(bad)


def test_a_point_can_set_other_planner_fields_and_its_own_win_over_every_point_fields():
    point = parse_budget("32x2:prior_weight=10:temperature=0.5")
    assert point == Budget("32x2:prior_weight=10:temperature=0.5", {"num_samples": "32", "iterations": "2"},
                           {"prior_weight": "10", "temperature": "0.5"})
    cfg = planner_config(None, point, {"prior_weight": "3", "min_std": "0.1"})
    assert (cfg.num_samples, cfg.iterations, cfg.prior_weight, cfg.temperature, cfg.min_std) == (32, 2, 10.0, 0.5, 0.1)
    assert planner_config(None, parse_budget("32x1")).prior_weight == 0.0  # nothing set: the plain objective
    assert planner_config(None, parse_budget("prior:prior_weight=2")) == planner_preset("prior", prior_weight=2.0)
    with pytest.raises(ValueError, match="key=value"):
        parse_budget("32x2:prior_weight")


def test_a_budget_changes_samples_and_iterations_only_and_caps_elites():
    class Manifest:
        planner_config = {**vars(PRESETS["cpu"]), "temperature": 0.5}

    cfg = planner_config(Manifest(), parse_budget("128x2"))
    assert (cfg.num_samples, cfg.iterations, cfg.temperature, cfg.max_std) == (128, 2, 0.5, PRESETS["cpu"].max_std)
    few = planner_config(Manifest(), parse_budget("0x1"))  # 8 prior candidates left: elites capped at them
    assert few.num_samples == 0 and few.num_elites == PRESETS["cpu"].num_pi_samples
    assert planner_config(None, parse_budget("reference")) == planner_preset("reference")


def test_a_run_reports_each_task_and_budget_on_the_same_seeds(tmp_path):
    torch.set_num_threads(1)
    ckpt, out = tmp_path / "ckpt", tmp_path / "budget.json"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    assert main(["--checkpoint", str(ckpt), "--task", "go2/flat", "--budgets", "4x1,8x2:prior_weight=5",
                 "--episodes", "2", "--seconds", "0.2", "--planner", "temperature=0.5", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["complete"] and report["planner_overrides"] == {"temperature": "0.5"}
    assert [p["budget"] for p in report["points"]] == ["4x1", "8x2:prior_weight=5"]
    assert [p["planner"]["prior_weight"] for p in report["points"]] == [0.0, 5.0]
    assert {p["planner"]["temperature"] for p in report["points"]} == {0.5}
    for p in report["points"]:
        assert len(p["per_episode"]) == 2 and p["metric_ci95"][0] <= p["metric_mean"] <= p["metric_ci95"][1]
    assert report["points"][1]["rollouts_per_tick"] > report["points"][0]["rollouts_per_tick"]


def test_bad_budget_is_a_usage_error(capsys, tmp_path):
    assert main(["--checkpoint", str(tmp_path), "--budgets", "lots"]) == 2
    assert "budget 'lots'" in capsys.readouterr().err
    assert main(["--checkpoint", str(tmp_path), "--budgets", "32x1:prior_weight=-1"]) == 2
    assert "prior_weight must be >= 0" in capsys.readouterr().err
    assert main(["--checkpoint", str(tmp_path), "--planner", "prior_wieght=1"]) == 2
    assert "prior_weight" in capsys.readouterr().err  # unknown key: the valid ones are listed


def test_reports_are_drawn_per_task_with_one_line_per_iterations_and_fields(tmp_path):
    from simdist_core.eval.budget import load_reports, series_label

    torch.set_num_threads(1)
    ckpt, out, png = tmp_path / "ckpt", tmp_path / "budget.json", tmp_path / "budget.png"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    assert main(["--checkpoint", str(ckpt), "--task", "go2/flat", "--budgets", "4x1,8x1,4x2:prior_weight=5",
                 "--episodes", "1", "--seconds", "0.1", "--planner", "temperature=0.5", "--json", str(out),
                 "--plot", str(png)]) == 0
    assert png.stat().st_size > 0
    points = load_reports([out])[0]["points"]
    labels = [series_label(p, {"temperature": "0.5"}) for p in points]
    assert labels == ["1 iteration, temperature=0.5"] * 2 + ["2 iterations, prior_weight=5, temperature=0.5"]
    replot = tmp_path / "again.png"
    assert main(["--from", str(out), str(out), "--plot", str(replot)]) == 0  # a point twice: drawn once
    assert replot.stat().st_size > 0


def test_drawing_from_something_that_is_not_a_budget_report_is_a_usage_error(capsys, tmp_path):
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps({"points": [{"task": "go2/flat"}]}))
    assert main(["--from", str(bad), "--plot", str(tmp_path / "x.png")]) == 2
    assert "not a `simdist bench budget` report" in capsys.readouterr().err
    bad.write_text(json.dumps({"points": []}))  # a run stopped before its first point: nothing to draw
    assert main(["--from", str(bad), "--plot", str(tmp_path / "x.png")]) == 2
    assert "not a `simdist bench budget` report" in capsys.readouterr().err
    assert main(["--from", str(bad)]) == 2
    assert "--plot" in capsys.readouterr().err
    assert main(["--budgets", "32x1"]) == 2
    assert "--checkpoint is required" in capsys.readouterr().err
