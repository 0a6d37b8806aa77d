"""The access-policy table is what the nodes really do: each node of the running simulated graph publishes,
subscribes, serves and calls exactly its entry (the drivers are checked in test/drivers).

A node that gains a topic fails here until the table grants it, so the signed permissions cannot fall behind
the code (under DDS security that node would fail to start).
"""

import time

import pytest
import rclpy
from rclpy.context import Context
from simdist_ros.access_policy import ROBOTS, node_access, observed_access
from simdist_ros.graph import load_graph
from simdist_ros.launcher import GraphProcess

pytestmark = pytest.mark.timeout(400)


def _wait_for_grants(observer, expected, timeout_s=240.0):
    """Poll the graph until every node shows exactly its grant (discovery is incremental) or time runs out."""
    end = time.monotonic() + timeout_s
    seen = {}
    while time.monotonic() < end:
        present = {name for name, ns in observer.get_node_names_and_namespaces() if ns == "/"}
        seen = {name: observed_access(observer, name) for name in expected if name in present}
        if seen == expected:
            break
        time.sleep(0.5)
    return seen


@pytest.mark.parametrize("robot", ROBOTS)
def test_simulated_graph_nodes_use_exactly_their_grants(robot, tmp_path):
    graph = load_graph(robot)
    proc = GraphProcess(graph, {"record": "true", "output_dir": str(tmp_path)}, log_dir=tmp_path / "logs")
    expected = {n.name: node_access(robot, n.name, sim=True) for n in proc.nodes}
    assert set(expected) == {"sim_robot", "encoder", "planner", "replay_buffer", "finetuner", "recorder"}
    context = Context()
    rclpy.init(context=context)
    observer = rclpy.create_node("access_observer", context=context)
    proc.start()
    try:
        seen = _wait_for_grants(observer, expected)
        assert not proc.poll(), f"a node exited: {proc.exit_codes}"
    finally:
        proc.stop()
        observer.destroy_node()
        rclpy.shutdown(context=context)
    for name, grant in expected.items():
        assert name in seen, f"{name} never appeared (log: {tmp_path / 'logs' / name}.log)"
        for kind in ("publish", "subscribe", "serve", "call"):
            real, allowed = getattr(seen[name], kind), getattr(grant, kind)
            assert real == allowed, f"{name} {kind}: extra {sorted(real - allowed)}, unused {sorted(allowed - real)}"
