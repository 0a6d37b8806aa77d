"""``simdist bench graph``'s arithmetic: window deltas and delay percentiles from one node's own counters."""

import pytest
from simdist_ros.graph_bench import Snapshot
from simdist_ros.sim_robot_node import delay_percentiles

from simdist_ros import graph_bench


def test_delay_percentiles_of_a_histogram():
    assert delay_percentiles({0: 90, 1: 9, 2: 1}) == [0.0, 1.0]
    assert delay_percentiles({0: 10, 1: 80, 2: 10}) == [1.0, 2.0]
    assert delay_percentiles({0: 0, 1: 0}) == [None, None]


def _snap(wall, sim_time, steps, fresh, delay0, delay1, plans, ticks, missed, cpu, falls=0, progress=0.0, swaps=0):
    robot = {"sim_time_s": str(sim_time), "steps": str(steps), "fresh_command_steps": str(fresh),
             "command_delay_periods_0": str(delay0), "command_delay_periods_1": str(delay1), "falls": str(falls),
             "watchdog_holds": "0", "executor_passes": str(2 * steps), "executor_callbacks": str(steps)}
    planner = {"plans": str(plans), "ticks": str(ticks), "missed_ticks": str(missed), "tick_latency_p50_ms": "8.0",
               "tick_latency_p99_ms": "19.0", "model_version": "2"}
    return Snapshot(wall_s=wall, diagnostics={"sim_robot": robot, "planner": planner},
                    cpu_s={"planner": cpu, "sim_robot": cpu / 2}, progress=progress, swaps=swaps)


def test_window_report_takes_ratios_from_one_node_and_deltas_over_the_window():
    a = _snap(wall=100.0, sim_time=10.0, steps=500, fresh=490, delay0=480, delay1=10, plans=480, ticks=500,
              missed=2, cpu=5.0, progress=3.0)
    b = _snap(wall=160.0, sim_time=70.0, steps=3500, fresh=3460, delay0=3420, delay1=40, plans=3450, ticks=3500,
              missed=5, cpu=35.0, falls=3, progress=33.0, swaps=2)
    r = graph_bench.window_report(a, b)
    assert r["sim_s"] == 60.0 and r["achieved_rtf"] == 1.0
    assert r["ticks_kept"] == pytest.approx(2970 / 3000, abs=1e-4)
    assert r["delay_zero_fraction"] == pytest.approx(2940 / 2970, abs=1e-4)
    assert (r["delay_periods_p50"], r["delay_periods_p99"]) == (0.0, 1.0)
    assert r["planner_ticks_kept"] == pytest.approx(3000 / 3003, abs=1e-4)
    assert r["falls_per_min"] == 3.0 and r["progress_per_min"] == 30.0 and r["model_swaps"] == 2
    assert r["nodes"]["planner"]["cpu_percent"] == 50.0
    assert r["nodes"]["sim_robot"]["executor_passes_per_callback"] == 2.0


def test_bad_arguments_are_refused(capsys):
    assert graph_bench.main(["--executor", "threads"]) == 2
    assert "valid: single, events, multi" in capsys.readouterr().err


def test_compare_makes_one_run_per_value():
    configs = graph_bench.configurations(["single"], "finetuner.cpu_duty=1,0.5")
    assert configs == [("single cpu_duty=1", "single", {"finetuner": {"cpu_duty": 1}}),
                       ("single cpu_duty=0.5", "single", {"finetuner": {"cpu_duty": 0.5}})]
    assert [c[0] for c in graph_bench.configurations(["single", "multi"], None)] == ["single", "multi"]


def test_parameters_for_a_node_the_graph_does_not_start_are_a_clear_error(capsys, tmp_path):
    code = graph_bench.main(["--no-adapt", "--set", "finetuner.cpu_duty=0.5", "--output-dir", str(tmp_path)])
    assert code == 2
    assert "parameters for nodes ['finetuner'] that this graph does not start" in capsys.readouterr().err


def test_an_episode_window_opens_only_once_the_robot_has_reported():
    """The window's robot figures are differences of diagnostics snapshots: without a first report, none exist."""
    import argparse
    from types import SimpleNamespace

    from simdist_ros import graph_bench

    monitor = SimpleNamespace(episodes={0: {}}, diagnostics={}, sim_time_s=1.0)
    (_, warm_up), (_, window) = graph_bench._phases(argparse.Namespace(episodes=2), monitor)
    assert not warm_up()  # episode 0 ended (a fall) before the robot's first diagnostics
    monitor.diagnostics["sim_robot"] = {"steps": "60"}
    assert warm_up() and not window()
    monitor.episodes.update({1: {}, 2: {}})
    assert window()


def test_table_shows_the_cpu_the_hypervisor_took_in_each_window():
    """A window measured on a VM whose hypervisor took CPU says how much; a run without the reading shows '-'."""
    runs = [{"label": "single", "machine_cpu_in_window": {"busy": 0.5, "idle": 0.27, "steal": 0.234}, "nodes": {}},
            {"label": "other", "nodes": {}}]
    line = next(row for row in graph_bench.format_table(runs).splitlines() if row.startswith("CPU stolen"))
    assert line.split()[-2:] == ["%", "-"] and "23.4 %" in line


def test_lockstep_fixes_the_planner_sample_count_unless_set():
    from argparse import Namespace

    def params(lockstep, pairs=()):
        return graph_bench.run_parameters(Namespace(set=list(pairs), rtf=1.0, lockstep=lockstep), {})

    assert params(True)["planner"] == {"plan_time_fraction": 0.0}
    assert params(True, ["planner.plan_time_fraction=0.6"])["planner"] == {"plan_time_fraction": 0.6}
    assert "planner" not in params(False)
