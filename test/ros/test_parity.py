"""``simdist bench parity``: argument checks, the same-seed comparison and its table (the runs are benchmarks)."""

import pytest

from simdist_ros import parity


def test_tasks_of_two_robots_are_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        parity.main(["--task", "go2/flat,ur5e/peg"])
    assert exc.value.code == 2 and "tasks of one robot" in capsys.readouterr().err


def _episodes(progress, falls, first_seed=1001):
    return [{"seed": first_seed + i, "forward_progress_m": p, "fell": float(f), "duration_s": 1.5 if f else 10.0}
            for i, (p, f) in enumerate(zip(progress, falls, strict=True))]


def test_compare_pairs_the_same_seeds_and_quotes_the_ratio_with_its_interval():
    local = {"per_episode": _episodes([4.0, 0.9, 5.0, 3.0], [0, 1, 0, 0])}
    graph = {"per_episode": _episodes([4.4, 1.0, 5.5, 3.3], [0, 1, 0, 0]), "ticks_kept": 0.9987,
             "delay_periods_p50": 0.0, "delay_periods_p99": 1.0}
    row = parity.compare("go2/foam", local, graph)
    assert row["ratio"] == pytest.approx(14.2 / 12.9, abs=1e-3)
    assert row["ratio_ci95"][0] <= row["ratio"] <= row["ratio_ci95"][1]
    assert row["in_process_summary"]["falls"] == 1 and row["graph_summary"]["episodes"] == 4
    assert row["in_process_summary"]["metric_per_min"] == pytest.approx(12.9 / (31.5 / 60), abs=1e-3)
    table = parity.format_table([row])
    assert "in-process" in table and "graph / in-process 1.101" in table and "0.9987" in table


def test_compare_refuses_sides_that_ran_different_seeds():
    local = {"per_episode": _episodes([4.0, 3.0], [0, 0])}
    graph = {"per_episode": _episodes([4.0, 3.0], [0, 0], first_seed=1002)}
    row = parity.compare("go2/flat", local, graph)
    assert "different seeds" in row["error"] and "ratio" not in row


def test_a_graph_that_did_not_finish_is_reported_not_compared():
    row = parity.compare("go2/flat", {"per_episode": _episodes([4.0], [0])}, {"error": "window not reached"})
    assert "ratio" not in row and "window not reached" in parity.format_table([row])


def _report(task, local, graph):
    return {"tasks": [{"task": task, "in_process": {"per_episode": local}, "graph": {"per_episode": graph}}]}


def test_before_and_after_reports_give_the_adaptation_as_each_side_measures_it(tmp_path, capsys):
    import json

    before = _report("go2/foam", _episodes([2.0, 1.0, 3.0], [0, 1, 0]), _episodes([3.0, 1.0, 2.0], [0, 1, 0]))
    after = _report("go2/foam", _episodes([4.0, 2.0, 6.0], [0, 0, 0]), _episodes([4.5, 1.5, 3.0], [0, 0, 0]))
    (rows,) = parity.adaptation(before, after)
    assert rows["in_process_after_over_before"][0] == pytest.approx(2.0)
    assert rows["graph_after_over_before"][0] == pytest.approx(1.5)
    assert rows["graph_ratio_over_in_process_ratio"][0] == pytest.approx(0.75)
    paths = []
    for name, report in (("before", before), ("after", after)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(report))
    out = tmp_path / "adaptation.json"
    assert parity.main(["--before", str(paths[0]), "--after", str(paths[1]), "--json", str(out)]) == 0
    assert "0.75" in capsys.readouterr().out and json.loads(out.read_text())["tasks"][0]["task"] == "go2/foam"


def test_reports_of_different_seeds_are_not_compared(tmp_path, capsys):
    import json

    before = _report("go2/foam", _episodes([2.0, 1.0], [0, 1]), _episodes([3.0, 1.0], [0, 1]))
    after = _report("go2/foam", _episodes([2.0, 1.0], [0, 1], 1005), _episodes([3.0, 1.0], [0, 1], 1005))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(before))
    b.write_text(json.dumps(after))
    assert parity.main(["--before", str(a), "--after", str(b)]) == 2
    assert "different seeds" in capsys.readouterr().err


def test_the_graph_side_runs_at_the_asked_real_time_factor_on_the_same_seeds(monkeypatch, tmp_path):
    from argparse import Namespace

    from simdist_ros import graph_bench

    seen = {}

    def fake_run_one(args, executor, out, checkpoint, label, parameters):
        seen.update(args=args, parameters=parameters)
        return {"episodes": [{"seed": 1001, "cause": "time_limit", "metrics": {"forward_progress_m": 1.0},
                              "start_s": 10.02, "end_s": 20.02}]}

    monkeypatch.setattr(graph_bench, "run_one", fake_run_one)
    args = Namespace(rtf=0.5, episodes=1, seconds=10.0, seed=1000, lockstep=False,
                     set=["planner.reset_on_episode_start=false"])
    report = parity.through_graph(args, "go2/foam", tmp_path / "ckpt", tmp_path)
    sim = seen["parameters"]["sim_robot"]
    assert sim["real_time_factor"] == 0.5 and sim["lockstep"] is False
    assert seen["parameters"]["planner"] == {"reset_on_episode_start": False}
    assert (sim["seed"], sim["episode_seeds"], sim["overrides"]) == (1000, True, ["episode_length_s=10.0"])
    assert seen["args"].episodes == 1 and report["per_episode"][0]["seed"] == 1001


def test_in_process_side_is_reused_only_from_the_same_run(tmp_path):
    import argparse
    import json

    from simdist_core.cliargs import UsageError

    local = {"per_episode": _episodes([1.0, 2.0], [0, 1]), "preset": "checkpoint"}
    report = {"checkpoint": "/ck/go2", "episodes": 2, "seconds": 10.0, "seed": 1000,
              "tasks": [{"task": "go2/foam", "in_process": local}]}
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(report))
    args = argparse.Namespace(in_process_from=path, checkpoint="/ck/go2", episodes=2, seconds=10.0, seed=1000, set=[])
    reused = parity.reused_in_process(args, "go2/foam")
    assert reused["per_episode"] == local["per_episode"] and reused["reused_from"] == str(path)
    with pytest.raises(UsageError, match="command_ramp_s"):  # the graph would ramp the command, that run did not
        parity.reused_in_process(argparse.Namespace(**{**vars(args), "set": ["encoder.command_ramp_s=4.0"]}),
                                 "go2/foam")
    with pytest.raises(UsageError, match="heading_hold"):  # the graph would hold the heading, that run did not
        parity.reused_in_process(argparse.Namespace(**{**vars(args), "set": ["encoder.heading_hold=true"]}),
                                 "go2/foam")
    for key, value in (("episodes", 3), ("seed", 7), ("checkpoint", "/other")):
        with pytest.raises(UsageError, match=key):
            parity.reused_in_process(argparse.Namespace(**{**vars(args), key: value}), "go2/foam")
    with pytest.raises(UsageError, match="no in-process episodes of go2/flat"):
        parity.reused_in_process(args, "go2/flat")
    path.write_text("{not json")
    with pytest.raises(UsageError, match="not a parity report"):
        parity.reused_in_process(args, "go2/foam")


def test_in_process_side_plans_with_the_planner_the_graph_deploys():
    """The parameter file's preset and overrides (both robots: MPPI with a prior penalty), then ``--set planner.*``."""
    assert parity.deployed_planner("ur5e") == ("auto", {"prior_weight": "1000"})
    assert parity.deployed_planner("go2") == ("auto", {"prior_weight": "100"})
    preset, overrides = parity.deployed_planner(
        "go2", ["planner.planner_preset=cpu", "planner.planner_overrides=[num_samples=16, max_std=0.3]",
                "encoder.stale_ticks=4"])
    assert preset == "cpu" and overrides == {"num_samples": "16", "max_std": "0.3"}
    with pytest.raises(parity.UsageError, match="key=value"):
        parity.deployed_planner("go2", ["planner.planner_overrides=[num_samples]"])


def test_in_process_side_ramps_the_command_as_the_graph_encoder_does():
    """The encoder's ``command_ramp_s`` (off in the shipped YAML) reaches the in-process side; UR5e has none."""
    assert parity.deployed_command_ramp_s("go2") == 0.0 and parity.deployed_command_ramp_s("ur5e") == 0.0
    assert parity.deployed_command_ramp_s("go2", ["encoder.command_ramp_s=4.0", "planner.stale_ticks=4"]) == 4.0


def test_in_process_side_gives_a_model_finetuned_here_the_adapted_tie(tmp_path, monkeypatch):
    """As the planner node: the looser tie only for a checkpoint the finetuner made from enough robot data."""
    import simdist_core.eval.closed_loop as closed_loop
    from node_harness import tiny_world_model
    from simdist_core.checkpoint import save_checkpoint

    seen = []

    def fake_evaluate(model, cfg, **kwargs):
        seen.append(kwargs["planner"].cfg.prior_weight)
        return {"per_episode": [], "sim_s": 0.0, "wall_s": 0.0, "plan_ms_p50": 0.0, "plan_ms_p99": 0.0}

    monkeypatch.setattr(closed_loop, "evaluate", fake_evaluate)
    model = tiny_world_model("ur5e")
    save_checkpoint(tmp_path / "shipped", model, version=1)
    save_checkpoint(tmp_path / "early", model, version=2, extra={"data_steps": 600})
    save_checkpoint(tmp_path / "adapted", model, version=9, extra={"data_steps": 20_000})
    sets = ["planner.adapted_prior_weight=500.0", "planner.adapted_after_data_steps=13600"]
    for name in ("shipped", "early", "adapted"):
        parity.in_process("ur5e/peg", tmp_path / name, 1, 1.0, 1000, sets=sets)
    assert seen == [1000.0, 1000.0, 500.0]
    assert parity.deployed_adapted_tie("ur5e", sets).applies(13_600)


def test_in_process_side_evaluates_the_model_frozen_as_the_nodes_load_it(tmp_path, monkeypatch):
    """Eval mode and no parameter requiring grad, as ``model_swap.load_model`` and ``simdist eval`` give it.

    Why: with grad-requiring parameters the attention kernel differs, and the in-process side no longer reproduced
    ``simdist eval`` episode for episode.
    """
    import simdist_core.eval.closed_loop as closed_loop
    from node_harness import tiny_world_model
    from simdist_core.checkpoint import save_checkpoint

    seen = []

    def fake_evaluate(model, cfg, **kwargs):
        seen.append((model.training, any(p.requires_grad for p in model.parameters())))
        return {"per_episode": [], "sim_s": 0.0, "wall_s": 0.0, "plan_ms_p50": 0.0, "plan_ms_p99": 0.0}

    monkeypatch.setattr(closed_loop, "evaluate", fake_evaluate)
    save_checkpoint(tmp_path / "m", tiny_world_model("go2"), version=1)
    parity.in_process("go2/flat", tmp_path / "m", 1, 1.0, 1000)
    assert seen == [(False, False)]


def test_in_process_side_scores_plans_with_the_planner_nodes_reference_checkpoint(tmp_path, monkeypatch):
    """``planner.reference_checkpoint`` with ``reference_returns``: the in-process planner's reference is that
    checkpoint's model, as the planner node loads it; without the parameter there is none beside the model."""
    import simdist_core.eval.closed_loop as closed_loop
    import torch
    from node_harness import tiny_world_model
    from simdist_core.checkpoint import save_checkpoint

    seen = []

    def fake_evaluate(model, cfg, **kwargs):
        planner = kwargs["planner"]
        seen.append((planner.cfg.reference_returns, planner._reference_differs,
                     next(planner.reference.dynamics.parameters()).clone()))
        return {"per_episode": [], "sim_s": 0.0, "wall_s": 0.0, "plan_ms_p50": 0.0, "plan_ms_p99": 0.0}

    monkeypatch.setattr(closed_loop, "evaluate", fake_evaluate)
    shipped = tiny_world_model("ur5e")
    adapted = tiny_world_model("ur5e")
    adapted.load_state_dict(shipped.state_dict())
    with torch.no_grad():
        next(adapted.dynamics.parameters()).add_(0.5)
    save_checkpoint(tmp_path / "shipped", shipped, version=1)
    save_checkpoint(tmp_path / "adapted", adapted, version=2)
    sets = ['planner.planner_overrides=["prior_weight=200", "reference_returns=min"]',
            f"planner.reference_checkpoint={tmp_path / 'shipped'}"]
    report = parity.in_process("ur5e/peg", tmp_path / "adapted", 1, 1.0, 1000, sets=sets)
    parity.in_process("ur5e/peg", tmp_path / "adapted", 1, 1.0, 1000, sets=sets[:1])
    (rule, differs, weights), (rule_alone, differs_alone, _) = seen
    assert rule == rule_alone == "min" and differs and not differs_alone
    torch.testing.assert_close(weights, next(shipped.dynamics.parameters()))
    assert report["reference_checkpoint"] == str(tmp_path / "shipped")
