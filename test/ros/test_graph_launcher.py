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


_SLOW_IMPORT_NODE = '''
import pathlib, time
here = pathlib.Path(__file__).parent
(here / "importing").write_text("")
for _ in range(600):  # an import that takes as long as the test wants (torch and rclpy take seconds)
    if (here / "go").exists():
        break
    time.sleep(0.1)
from rclpy.node import Node
from simdist_ros.runtime import run_node

def _make():
    (here / "constructed").write_text("")
    return Node("slow_import_node")

def main():
    return run_node(_make)
'''


@pytest.mark.timeout(120)
def test_sigint_while_a_node_is_still_importing_stops_it_cleanly(tmp_path):
    """A graph stopped while one node is still importing (a sibling failed at start-up) gets exit code 0 from
    it, and the node is never constructed: the launcher's boot defers SIGINT until ``run_node`` reads it."""
    import os
    import subprocess
    import sys
    import time

    from simdist_ros.launcher import NODE_BOOT

    (tmp_path / "slow_import_node.py").write_text(_SLOW_IMPORT_NODE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", NODE_BOOT.format(module="slow_import_node", func="main")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        while not (tmp_path / "importing").exists():
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        (tmp_path / "go").write_text("")
        out = proc.communicate(timeout=60)[0].decode()
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "KeyboardInterrupt" not in out
    assert not (tmp_path / "constructed").exists(), "a node stopped before it started is never built"


_CONSOLE_SCRIPT = '''
import sys
from slow_console_node import main
sys.exit(main())
'''


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("script_name", "stops_cleanly"), [("slow_import_node", True), ("slow_import_tool", False)])
def test_sigint_while_a_console_script_node_is_importing(tmp_path, script_name, stops_cleanly):
    """Under ``ros2 launch`` a node's console script imports the node module directly (no launcher boot): a
    node package's ``__init__`` imports ``simdist_ros.boot``, which defers SIGINT when the process is a node executable
    (``*_node``), so a node stopped mid-import exits 0 unbuilt. Any other program keeps Python's default
    (``KeyboardInterrupt``): importing a node module in a test or a notebook must not swallow Ctrl-C."""
    import os
    import subprocess
    import sys
    import time

    # a node module of a package with nodes: Python runs the package's __init__ first, as for a real node
    module = _SLOW_IMPORT_NODE.replace("import pathlib, time", "import simdist_ros\nimport pathlib, time", 1)
    (tmp_path / "slow_console_node.py").write_text(module)
    script = tmp_path / script_name
    script.write_text(_CONSOLE_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    # SIGINT as a terminal or a launcher gives it: a suite started in the background inherits it ignored, and
    # Python then never raises KeyboardInterrupt (the control case would run on)
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    try:
        while not (tmp_path / "importing").exists():
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)  # let the default handler raise mid-import where it is not deferred
        (tmp_path / "go").write_text("")
        out = proc.communicate(timeout=60)[0].decode()
    finally:
        proc.kill()
    if stops_cleanly:
        assert proc.returncode == 0, out
        assert "KeyboardInterrupt" not in out
    else:
        assert proc.returncode != 0 and "KeyboardInterrupt" in out, out
    assert not (tmp_path / "constructed").exists(), "a node stopped before it started is never built"
