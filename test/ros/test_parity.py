"""``simdist bench parity``: argument checks and the side-by-side table (the runs themselves are benchmarks)."""

import pytest

from simdist_ros import parity


def test_tasks_of_two_robots_are_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        parity.main(["--task", "go2/flat,ur5e/peg"])
    assert exc.value.code == 2 and "tasks of one robot" in capsys.readouterr().err


def test_table_quotes_both_sides_and_the_ratio():
    local = {"progress_per_min": 36.0, "falls_per_min": 0.0}
    graph = {"progress_per_min": 34.2, "falls_per_min": 0.5, "ticks_kept": 0.9987, "delay_periods_p50": 0.0,
             "delay_periods_p99": 1.0}
    table = parity.format_table([{"task": "go2/flat", "in_process": local, "graph": graph, "ratio": 0.95},
                                 {"task": "go2/foam", "in_process": local, "graph": {"error": "window not reached"},
                                  "ratio": None}])
    assert "36.00" in table and "34.20" in table and "0.950" in table and "0.9987" in table
    assert "graph: window not reached" in table
