"""The pip launcher supervises real node processes: a failing node stops the graph (never restarted
silently), SIGINT reaches every node, exit codes are reported."""

import signal
import threading

import pytest
import yaml
from simdist_ros.graph import load_graph
from simdist_ros.launcher import GraphProcess


def _graph(tmp_path, encoder_checkpoint):
    data = {
        "robot": "go2", "bringup_package": "go2_bringup", "params_file": "go2.yaml",
        "arguments": [{"name": "output_dir", "default": str(tmp_path)}],
        "nodes": [
            {"name": "recorder", "package": "simdist_ros", "executable": "recorder_node",
             "parameters": {"output_dir": "$(output_dir)/bags"}},
            {"name": "encoder", "package": "simdist_ros", "executable": "encoder_node",
             "parameters": {"checkpoint": encoder_checkpoint}},
        ],
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_graph(path)


@pytest.mark.timeout(180)
def test_a_failing_node_stops_the_graph(tmp_path):
    proc = GraphProcess(_graph(tmp_path, str(tmp_path / "missing")), log_dir=tmp_path / "logs")
    # No duration: the launcher returns only because the failing node stopped the graph (if it did not, the
    # pytest timeout fails the test) — a behavioural check, not a wall-clock one.
    assert proc.run() == 1
    assert proc.exit_codes["encoder"] == 1 and "encoder" in proc.failed
    assert proc.exit_codes["recorder"] == 0, "the other nodes were stopped cleanly"
    assert "does not exist" in (tmp_path / "logs" / "encoder.log").read_text()


@pytest.mark.timeout(180)
def test_sigint_to_the_launcher_stops_every_node_cleanly(tmp_path):
    graph = _graph(tmp_path, "")
    graph = type(graph)(**{**graph.__dict__, "nodes": graph.nodes[:1]})  # the recorder alone
    proc = GraphProcess(graph, log_dir=tmp_path / "logs")
    timer = threading.Timer(8.0, lambda: signal.raise_signal(signal.SIGINT))
    timer.start()
    try:
        assert proc.run(duration_s=120) == 0
    finally:
        timer.cancel()
    assert proc.exit_codes == {"recorder": 0}
    assert list((tmp_path / "bags").glob("*/metadata.yaml")), "the recorder finished its bag on SIGINT"
