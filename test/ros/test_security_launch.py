"""Both starters: security:=true (enclaves, Enforce, refusal where the DDS has no plugins) and the discovery range."""

import ast
import os
from pathlib import Path

import pytest
from _security import REQUIRE, make_keystore
from simdist_ros.graph import ResolvedNode, load_graph
from simdist_ros.launcher import GraphProcess, node_command
from simdist_ros.launcher import main as launch_main
from simdist_ros.secure_launch import (
    NO_PLUGINS,
    SecurityError,
    check_keystore,
    secure_plan,
    security_probe,
    with_enclaves,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def keystore(tmp_path_factory):
    return make_keystore(tmp_path_factory.mktemp("ks"), "go2")


def _node(name, external=False):
    return ResolvedNode(name=name, package="p", executable="e", parameters={}, remappings=(), arguments=("-x",),
                        external=external, on_exit="shutdown")


def test_simulated_graph_discovers_on_this_host_unless_the_user_chose(monkeypatch, tmp_path):
    assert secure_plan({"sim": "true"}, [], {}).env == {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    assert secure_plan({"sim": "true"}, [], {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}).env == {}
    assert secure_plan({"sim": "true"}, [], {"ROS_LOCALHOST_ONLY": "0"}).env == {}
    assert secure_plan({"sim": "false"}, [], {}).env == {}, "a robot PC keeps ROS's default range"
    # Through the pip starter (test/conftest.py sets the range for the tests: take it away first).
    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    monkeypatch.delenv("ROS_LOCALHOST_ONLY", raising=False)
    graph = load_graph("go2")
    assert GraphProcess(graph, {"output_dir": str(tmp_path)}).env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE" not in GraphProcess(graph, {"output_dir": str(tmp_path), "sim": "false"}).env
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
    assert GraphProcess(graph, {"output_dir": str(tmp_path)}).env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET"


def test_enclave_arguments_form_their_own_ros_args_section(tmp_path):
    (planner,) = with_enclaves([_node("planner")])
    assert planner.arguments == ("--ros-args", "--enclave", "/simdist/planner", "--", "-x")
    node = load_graph("go2").plan({"output_dir": str(tmp_path)}).process("planner")
    cmd = node_command(with_enclaves([node])[0], tmp_path / "o.yaml")
    tail = cmd[cmd.index("--ros-args"):]
    assert tail[:4] == ["--ros-args", "--enclave", "/simdist/planner", "--"]
    assert tail[4:7] == ["--ros-args", "-r", "__node:=planner"], "the starter's own section follows, untouched"


def test_every_node_needs_a_complete_enclave_and_external_tools_have_none(keystore, tmp_path):
    check_keystore(keystore, [_node("planner"), _node("sim_robot"), _node("go2_driver")])
    with pytest.raises(SecurityError, match=r"no complete enclave for \['camera'\]"):
        check_keystore(keystore, [_node("planner"), _node("camera")])
    (keystore.parent / "partial").mkdir()
    with pytest.raises(SecurityError, match="simdist security init"):
        check_keystore(keystore.parent / "partial", [_node("planner")])
    with pytest.raises(SecurityError, match=r"\['rviz'\] are external tools"):
        check_keystore(keystore, [_node("planner"), _node("rviz", external=True)])


def test_pip_launcher_refuses_security_in_one_line_where_the_dds_has_no_plugins(keystore, tmp_path, capsys):
    """Here (pip wheels): one line, exit 2, nothing started. With the plugins (Docker): every node in its enclave."""
    reason = security_probe(keystore, os.environ)
    out_dir = tmp_path / "run"
    code = launch_main(["go2", "--arg", "security=true", "--arg", f"keystore={keystore}", "--dry-run",
                        "--output-dir", str(out_dir)])
    captured = capsys.readouterr()
    if reason is None:
        assert code == 0, captured.err
        lines = captured.out.strip().splitlines()
        assert len(lines) == 5
        for node in ("sim_robot", "encoder", "planner", "replay_buffer", "finetuner"):
            assert sum(f"--enclave /simdist/{node} --" in line for line in lines) == 1, node
        return
    assert not REQUIRE, f"SIMDIST_REQUIRE_DDS_SECURITY=1 but the keystore did not load: {reason}"
    assert reason == NO_PLUGINS, reason
    assert code == 2
    assert captured.err == f"simdist launch: error: {NO_PLUGINS}\n", "one line, saying why and what to use instead"
    assert captured.out == "" and not out_dir.exists(), "nothing was started or written"


def test_ros_launch_description_applies_the_same_plan():
    """launch is not installable here: the launch description is checked statically (as in test_launch.py)."""
    tree = ast.parse((ROOT / "src/simdist_ros/simdist_ros/launch_description.py").read_text())
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "secure_plan" in calls
    node_calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Node"]
    assert "additional_env" in {k.arg for k in node_calls[0].keywords}
    iterated = {ast.unparse(c.generators[0].iter) for c in ast.walk(tree) if isinstance(c, ast.ListComp)}
    assert "secure.nodes" in iterated and "plan.processes" not in iterated, "nodes come from the secure plan (enclaves)"


@pytest.mark.parametrize("robot", ("go2", "ur5e"))
def test_graphs_declare_the_security_arguments(robot):
    args = {a.name: a for a in load_graph(robot).arguments}
    assert args["security"].default == "false" and args["security"].choices == ("true", "false")
    assert args["keystore"].default == f"keystore/{robot}"
