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
