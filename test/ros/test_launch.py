"""Launch files, graph YAMLs, params files and RViz configs reference only things that exist.

Launch files are parsed with ``ast`` (``launch``/``launch_ros`` are not installable here, so they are
never executed): executables must be console_scripts of their package's setup.py, parameters must be
rows of the node's parameter table, topics must be names of ``simdist_ros.topics``.
"""

import ast
import importlib
from pathlib import Path

import pytest
import yaml
from simdist_core.planning.mppi import PRESETS
from simdist_ros.graph import GraphError, load_graph, parse_graph
from simdist_ros.launcher import GraphProcess, node_command, write_overrides
from simdist_ros.params import P

from simdist_ros import topics

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = ("go2", "ur5e")
LAUNCH_FILES = sorted([*ROOT.glob("src/*_bringup/launch/*.launch.py"), *ROOT.glob("launch/*.launch.py")])
TOPIC_NAMES = {v for k, v in vars(topics).items() if k.isupper() and isinstance(v, str)}
GLOBAL_PARAMS = {"use_sim_time"}  # declared by rclpy itself on every node


def console_scripts(package):
    """{executable: "module:func"} from src/<package>/setup.py, read with ast (never executed)."""
    tree = ast.parse((ROOT / "src" / package / "setup.py").read_text())
    scripts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["NODES"]:
            for name in ast.literal_eval(node.value):
                scripts[name] = f"{package}.{name}:main"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and " = " in node.value:
            name, _, target = node.value.partition(" = ")
            if ":" in target:
                scripts[name.strip()] = target.strip()
    return scripts


def param_table(package, executable):
    """Names of the rows of a node's parameter table (module-level tuples of ``P``)."""
    module_name = console_scripts(package)[executable].split(":")[0]
    module = importlib.import_module(module_name)
    names = set()
    for value in vars(module).values():
        if isinstance(value, tuple) and value and all(isinstance(v, P) for v in value):
            names |= {row.name for row in value}
    assert names, f"{module_name} has no parameter table (a module-level tuple of simdist_ros.params.P)"
    return names | GLOBAL_PARAMS


@pytest.mark.parametrize("robot", ROBOTS)
def test_graph_nodes_exist_and_parameters_are_declared(robot):
    graph = load_graph(robot)
    for node in graph.nodes:
        if node.external:
            continue
        scripts = console_scripts(node.package)
        assert node.executable in scripts, f"{robot}: {node.executable} not in {node.package}/setup.py"
        declared = param_table(node.package, node.executable)
        undeclared = set(graph.global_parameters) | set(node.parameters)
        assert undeclared <= declared, f"{robot}/{node.name}: {sorted(undeclared - declared)} not declared"
        for src, dst in node.remappings.items():
            assert src in TOPIC_NAMES and dst in TOPIC_NAMES, (src, dst)


@pytest.mark.parametrize("robot", ROBOTS)
def test_params_file_sections_match_graph_and_tables(robot):
    graph = load_graph(robot)
    data = yaml.safe_load(graph.params_file_path().read_text())
    by_name = {n.name: n for n in graph.nodes}
    for section, body in data.items():
        if section == "/**":
            assert set(body["ros__parameters"]) <= GLOBAL_PARAMS, "only truly global keys under /**"
            continue
        assert section in by_name, f"{robot} params file section {section!r} is not a node of the graph"
        node = by_name[section]
        declared = param_table(node.package, node.executable)
        keys = set(body["ros__parameters"])
        assert keys <= declared, f"{robot}/{section}: params file keys {sorted(keys - declared)} not declared"
    preset = data["planner"]["ros__parameters"].get("planner_preset", "auto")
    assert preset in {"auto", "checkpoint", *PRESETS}, f"{robot}: unknown planner_preset {preset!r}"


@pytest.mark.parametrize("robot", ROBOTS)
def test_graph_conditions_select_the_right_nodes(robot):
    graph = load_graph(robot)
    sim = {n.executable for n in graph.resolve({"sim": "true"}, share_dir="/x")}
    real = {n.executable for n in graph.resolve({"sim": "false", "record": "true"}, share_dir="/x")}
    assert "sim_robot_node" in sim and "sim_robot_node" not in real
    assert "recorder_node" in real and "recorder_node" not in sim
    assert {"encoder_node", "planner_node", "replay_buffer_node", "finetuner_node"} <= sim & real
    no_adapt = {n.executable for n in graph.resolve({"adapt": "false"}, share_dir="/x")}
    assert not {"replay_buffer_node", "finetuner_node"} & no_adapt
    rviz = graph.resolve({"rviz": "true"}, share_dir="/share")
    assert any(n.external and n.arguments == ("-d", f"/share/rviz/{robot}.rviz") for n in rviz)
    assert (ROOT / "src" / f"{robot}_bringup" / "rviz" / f"{robot}.rviz").is_file()
    resolved = graph.resolve({"sim": "true", "checkpoint": "/ck"}, share_dir="/x")
    encoder = next(n for n in resolved if n.name == "encoder")
    assert encoder.parameters == {"use_sim_time": True, "robot": robot, "checkpoint": "/ck",
                                  "wait_for_exteroception": True}


def test_graph_errors_are_clear():
    with pytest.raises(GraphError, match="unknown launch argument 'simm'"):
        load_graph("go2").resolve({"simm": "true"})
    with pytest.raises(GraphError, match="not in"):
        load_graph("go2").resolve({"sim": "maybe"})
    with pytest.raises(GraphError, match="no graph for robot"):
        load_graph("spot")
    bad = {"robot": "go2", "bringup_package": "go2_bringup", "params_file": "go2.yaml", "arguments": [],
           "nodes": [{"name": "a", "package": "simdist_ros", "executable": "x", "if": "sim"}]}
    with pytest.raises(GraphError, match="unknown argument 'sim'"):
        parse_graph(bad)
    bad["nodes"][0] = {"name": "a", "package": "simdist_ros", "executable": "x", "typo": 1}
    with pytest.raises(GraphError, match="unknown keys"):
        parse_graph(bad)


def _launch_calls(tree, func_name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == func_name]


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_launch_file_references_exist(path):
    tree = ast.parse(path.read_text())
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in names
    if path.parent.parent.name.endswith("_bringup"):
        robot = path.parent.parent.name.removesuffix("_bringup")
        consts = {t.id: ast.literal_eval(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        assert consts.get("ROBOT") == robot, "a bringup launch file must load its own robot's graph"
        imports = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert ("simdist_ros.launch_description", "graph_launch_description") in imports, "one shared description"
        assert [c for c in _launch_calls(tree, "graph_launch_description") if ast.unparse(c.args[0]) == "ROBOT"]
    for call in _launch_calls(tree, "Node"):
        kw = {k.arg: k.value for k in call.keywords}
        if isinstance(kw.get("executable"), ast.Constant):
            package, executable = ast.literal_eval(kw["package"]), ast.literal_eval(kw["executable"])
            assert executable in console_scripts(package), f"{path.name}: {executable} not in {package}"
            declared = param_table(package, executable)
            for params in ast.walk(kw.get("parameters", ast.List(elts=[]))):
                if isinstance(params, ast.Dict):
                    keys = {ast.literal_eval(k) for k in params.keys}
                    assert keys <= declared, f"{path.name}: {sorted(keys - declared)} not declared"


def test_shared_launch_description_builds_everything_from_the_graph():
    tree = ast.parse((ROOT / "src/simdist_ros/simdist_ros/launch_description.py").read_text())
    imports = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("simdist_ros.graph", "load_graph") in imports, "nodes must come from the shared graph YAML"
    assert _launch_calls(tree, "DeclareLaunchArgument"), "arguments are declared from the graph"
    assert _launch_calls(tree, "Node"), "nodes are launched from the graph"


@pytest.mark.parametrize("robot", ROBOTS)
def test_rviz_topics_are_graph_topics(robot):
    text = (ROOT / "src" / f"{robot}_bringup" / "rviz" / f"{robot}.rviz").read_text()
    data = yaml.safe_load(text)
    used = {d["Topic"]["Value"].lstrip("/") for d in data["Visualization Manager"]["Displays"] if "Topic" in d}
    assert topics.PREDICTED_ROLLOUT in used
    assert used <= {t.lstrip("/") for t in TOPIC_NAMES}, used


def test_pip_launcher_commands(tmp_path):
    """The pip starter builds one process per node with --ros-args, the params file and typed overrides."""
    proc = GraphProcess(load_graph("go2"), {"record": "true", "output_dir": str(tmp_path)})
    names = [n.name for n in proc.nodes]
    assert names == ["sim_robot", "encoder", "planner", "replay_buffer", "finetuner", "recorder"]
    overrides = write_overrides(proc.nodes, tmp_path / "o.yaml")
    data = yaml.safe_load(overrides.read_text())
    assert data["replay_buffer"]["ros__parameters"]["output_dir"] == str(tmp_path / "replay")
    assert data["encoder"]["ros__parameters"]["use_sim_time"] is True
    assert data["sim_robot"]["ros__parameters"]["use_sim_time"] is False
    assert data["finetuner"]["ros__parameters"]["checkpoint"].endswith("checkpoints/go2")
    cmd = node_command(proc.nodes[1], proc.graph.params_file_path(), overrides)
    assert cmd[cmd.index("--ros-args"):] == ["--ros-args", "-r", "__node:=encoder", "--params-file",
                                              str(proc.graph.params_file_path()), "--params-file", str(overrides)]


@pytest.mark.parametrize("robot", ROBOTS)
def test_planner_and_finetuner_share_the_update_folder_and_a_key_the_starter_creates(robot, tmp_path):
    """Both starters call ``create_key_files`` on the resolved nodes before any starts (issue #16)."""
    from simdist_ros.graph import create_key_files

    nodes = {n.name: n for n in load_graph(robot).resolve({"output_dir": str(tmp_path)}, share_dir="/x")}
    planner, finetuner = nodes["planner"].parameters, nodes["finetuner"].parameters
    assert planner["update_dir"] == finetuner["output_dir"] == str(tmp_path / "checkpoints")
    assert planner["update_key_file"] == finetuner["update_key_file"]
    (key_file,) = create_key_files(list(nodes.values()))
    assert str(key_file) == planner["update_key_file"] and (key_file.stat().st_mode & 0o777) == 0o600
    tree = ast.parse((ROOT / "src/simdist_ros/simdist_ros/launch_description.py").read_text())
    assert _launch_calls(tree, "create_key_files"), "ros2 launch creates the key file too"


def test_launcher_refuses_an_exposed_key_file_before_starting_any_node(tmp_path, capsys):
    import os

    from simdist_core.checkpoint_auth import create_key_file
    from simdist_ros.launcher import main

    key_file = create_key_file(tmp_path / "launch" / "model_update.key")
    os.chmod(key_file, 0o644)
    assert main(["go2", "--output-dir", str(tmp_path), "--duration-s", "1"]) == 2
    assert "chmod 600" in capsys.readouterr().err
    assert not (tmp_path / "replay").exists(), "no node was started"
