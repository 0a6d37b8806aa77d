"""Launch files, graph YAMLs, params files and RViz configs reference only things that exist, and both
starters (``ros2 launch`` and ``simdist launch``) start the same processes with the same semantics.

Launch files are parsed with ``ast`` (``launch``/``launch_ros`` are not installable here, so they are
never executed): executables must be console_scripts of their package's setup.py, parameters must be
rows of the node's parameter table, topics must be names of ``simdist_ros.topics``. The shared launch
description is executed against recording stand-ins of the ``launch``/``launch_ros`` classes whose
signatures copy the real ones (launch 3.7, launch_ros 0.28), so a misspelt keyword fails here.
"""

import ast
import importlib
import sys
import types
from pathlib import Path

import pytest
import yaml
from simdist_core.planning.mppi import PRESETS
from simdist_ros.graph import GraphError, load_graph, parse_graph
from simdist_ros.launcher import GraphProcess, node_command, write_overrides
from simdist_ros.params import P

from simdist_ros import launch_description, topics

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = ("go2", "ur5e")
LAUNCH_FILES = sorted(ROOT.glob("src/*/launch/*.launch.py"))
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


def test_launch_files_belong_to_packages():
    """A top-level ``launch/`` folder would shadow ROS's ``launch`` package for Python started at the root."""
    assert not list(ROOT.glob("launch/*.py"))
    assert {p.name for p in LAUNCH_FILES} >= {"simdist.launch.py", "record.launch.py", "sim_robot.launch.py"}
    for path in LAUNCH_FILES:
        package = path.parents[1].name
        assert 'glob("launch/' in (ROOT / "src" / package / "setup.py").read_text(), f"{package} installs no launch/"


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
    assert data["finetuner"]["ros__parameters"]["checkpoint"] == "", "empty: the node's documented default"
    cmd = node_command(proc.nodes[1], overrides)
    assert cmd[cmd.index("--ros-args"):] == ["--ros-args", "-r", "__node:=encoder", "--params-file",
                                              str(proc.graph.params_file_path()), "--params-file", str(overrides)]


def _declared_after_params_files(files, default):
    """``planner_overrides`` as a planner node started with these ``--params-file`` arguments declares it."""
    import rclpy

    context = rclpy.Context()
    args = ["--ros-args", "-r", "__node:=planner"] + [a for f in files for a in ("--params-file", str(f))]
    rclpy.init(args=args, context=context)
    try:
        node = rclpy.create_node("planner", context=context)
        value = node.declare_parameter("planner_overrides", default).value
        node.destroy_node()
        return value
    finally:
        rclpy.shutdown(context=context)


def test_a_list_override_reaches_the_node_and_an_empty_list_is_refused(tmp_path):
    """A one-entry list in the overrides file replaces the robot's file's list; an empty one is refused up front.

    rcl drops an empty list when it parses a params file, so the node kept the robot's ``prior_weight=100`` while
    ``simdist bench parity``'s in-process side ran without it: ``--set`` and the plan now refuse ``[]``.
    """
    from simdist_core.cliargs import UsageError
    from simdist_ros.soak import node_overrides

    robot_file = tmp_path / "robot.yaml"
    robot_file.write_text(yaml.safe_dump({"planner": {"ros__parameters": {"planner_overrides": ["prior_weight=100"]}}}))
    sets = node_overrides(['planner.planner_overrides=["prior_weight=0"]'], 1.0)
    proc = GraphProcess(load_graph("go2"), parameters=sets)
    overrides = write_overrides(proc.nodes, tmp_path / "o.yaml")
    assert _declared_after_params_files([robot_file, overrides], ["unset"]) == ["prior_weight=0"]
    empty = tmp_path / "empty.yaml"
    empty.write_text(yaml.safe_dump({"planner": {"ros__parameters": {"planner_overrides": []}}}))
    assert _declared_after_params_files([robot_file, empty], ["unset"]) == ["prior_weight=100"], "rcl changed"
    with pytest.raises(UsageError, match="empty list"):
        node_overrides(["planner.planner_overrides=[]"], 1.0)
    with pytest.raises(GraphError, match="empty list"):
        load_graph("go2").plan(parameters={"planner": {"planner_overrides": []}})


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


def test_path_arguments_are_resolved_against_the_starters_directory(tmp_path):
    plan = load_graph("go2").plan({"output_dir": "out", "checkpoint": "ck"}, cwd=tmp_path)
    assert plan.arguments["output_dir"] == str(tmp_path / "out")
    assert plan.arguments["checkpoint"] == str(tmp_path / "ck")
    assert plan.process("replay_buffer").parameters["output_dir"] == str(tmp_path / "out" / "replay")
    assert load_graph("go2").plan(cwd=tmp_path).arguments["checkpoint"] == "", "empty stays empty"


# --- both starters from one plan -------------------------------------------------------------------------------
# Recording stand-ins for the launch classes launch_description uses. Their signatures are copied from
# launch 3.7 (ExecuteLocal/ExecuteProcess/DeclareLaunchArgument/OpaqueFunction/Shutdown) and launch_ros 0.28
# (Node): keyword-only, no **kwargs, so a keyword the real classes would reject fails here too.


class _Action:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class _Node(_Action):
    def __init__(self, *, executable, package=None, name=None, namespace=None, exec_name=None, parameters=None,
                 remappings=None, ros_arguments=None, arguments=None, prefix=None, cwd=None, env=None,
                 additional_env=None, shell=False, sigterm_timeout=None, sigkill_timeout=None, emulate_tty=False,
                 output="log", output_format=None, cached_output=False, log_cmd=False, on_exit=None, respawn=False,
                 respawn_delay=None, respawn_max_retries=-1, condition=None):
        super().__init__(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class _Shutdown(_Action):
    def __init__(self, *, reason="reason not given", condition=None):
        super().__init__(reason=reason)


class _Declare(_Action):
    def __init__(self, name, *, default_value=None, description=None, choices=None, condition=None):
        super().__init__(name=name, default_value=default_value, description=description, choices=choices)


class _Opaque(_Action):
    def __init__(self, *, function, args=None, kwargs=None, condition=None):
        super().__init__(function=function, args=args or [], kwargs=kwargs or {})


class _LaunchConfiguration:
    def __init__(self, variable_name, *, default=None):
        self.name = variable_name

    def perform(self, context):
        return context[self.name]


@pytest.fixture
def fake_launch(monkeypatch):
    names = ("launch", "launch.actions", "launch.substitutions", "launch_ros", "launch_ros.actions")
    modules = {name: types.ModuleType(name) for name in names}
    modules["launch"].LaunchDescription = lambda entities: list(entities)
    modules["launch.actions"].DeclareLaunchArgument = _Declare
    modules["launch.actions"].OpaqueFunction = _Opaque
    modules["launch.actions"].Shutdown = _Shutdown
    modules["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    modules["launch_ros.actions"].Node = _Node
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


def _ros2_launch(robot, argv):
    """What ``ros2 launch <robot>_bringup simdist.launch.py name:=value...`` would start: (declared, nodes)."""
    entities = launch_description.graph_launch_description(robot)
    declared = {e.kwargs["name"]: e.kwargs for e in entities if isinstance(e, _Declare)}
    opaque = next(e for e in entities if isinstance(e, _Opaque))
    context = {name: argv.get(name, d["default_value"]) for name, d in declared.items()}
    return declared, opaque.kwargs["function"](context, *opaque.kwargs["args"])


CASES = [{}, {"sim": "false", "record": "true"}, {"adapt": "false", "rviz": "true"},
         {"record": "true", "output_dir": "elsewhere", "checkpoint": "ck"}]


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("argv", CASES, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()) or "defaults")
def test_ros2_launch_and_simdist_launch_start_the_same_processes(fake_launch, robot, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths resolve against the starter's directory in both
    graph = load_graph(robot)
    declared, nodes = _ros2_launch(robot, argv)
    pip = GraphProcess(graph, argv)
    overrides = write_overrides(pip.nodes, tmp_path / "o.yaml")
    sections = yaml.safe_load(overrides.read_text())

    assert {n: (d["default_value"], d["choices"]) for n, d in declared.items()} == {
        a.name: (a.default, list(a.choices) if a.choices else None) for a in graph.arguments}
    launched = {n.kwargs["name"]: n.kwargs for n in nodes}
    assert [n.kwargs["name"] for n in nodes if n.kwargs["package"] != "rviz2"] == [p.name for p in pip.nodes]
    assert sorted(set(launched) - {p.name for p in pip.nodes}) == pip.skipped, "only external tools differ"
    term_after, kill_after = pip.escalation_s()
    for spec in pip.nodes:
        kw, cmd = launched[spec.name], node_command(spec, overrides)
        ros_args = cmd[cmd.index("--ros-args") + 1:]
        assert (kw["package"], kw["executable"], kw["arguments"]) == (spec.package, spec.executable,
                                                                    list(spec.arguments))
        assert cmd[cmd.index("--ros-args") - len(spec.arguments):cmd.index("--ros-args")] == kw["arguments"]
        files = [ros_args[i + 1] for i, a in enumerate(ros_args) if a == "--params-file"]
        # the same parameters in the same order: the robot's params file, then the typed graph parameters
        assert kw["parameters"][0] == files[0] == str(graph.params_file_path())
        assert kw["parameters"][1] == sections[spec.name]["ros__parameters"] and files[1] == str(overrides)
        remaps = [tuple(ros_args[i + 1].split(":=")) for i, a in enumerate(ros_args) if a == "-r"][1:]
        assert kw["remappings"] == remaps
        assert ros_args[:2] == ["-r", f"__node:={spec.name}"]
        # what the node's exit does, whether it comes back, how long a shutdown waits
        assert (kw["on_exit"] is not None) == (spec.on_exit == "shutdown")
        if kw["on_exit"] is not None:
            assert [type(a) for a in kw["on_exit"]] == [_Shutdown]
        assert (kw["respawn"], kw["respawn_delay"]) == (spec.respawn, spec.respawn_delay_s if spec.respawn else None)
        assert (float(kw["sigterm_timeout"]), float(kw["sigkill_timeout"])) == (term_after, kill_after)
    assert Path(pip.arguments["output_dir"]) == tmp_path / argv.get("output_dir", f"runs/{robot}")


def test_graph_yaml_on_exit_is_honoured_by_both(fake_launch):
    """The shipped graphs: the robot, encoder and planner stop the graph; the learners and tools only log."""
    for robot in ROBOTS:
        _, nodes = _ros2_launch(robot, {"record": "true", "rviz": "true"})
        stops = {n.kwargs["name"] for n in nodes if n.kwargs["on_exit"]}
        assert stops == {"sim_robot", "encoder", "planner"}, robot
        pip = {p.name for p in GraphProcess(load_graph(robot), {"record": "true"}).nodes if p.on_exit == "shutdown"}
        assert pip == stops


def test_respawn_needs_on_exit_log():
    data = {"robot": "go2", "bringup_package": "go2_bringup", "params_file": "go2.yaml", "arguments": [],
            "nodes": [{"name": "a", "package": "simdist_ros", "executable": "x", "respawn": True}]}
    with pytest.raises(GraphError, match="respawn: true needs on_exit: log"):
        parse_graph(data)


def _crasher_graph(tmp_path, **node):
    """A graph of one node that exits at once with status 2: the ``simdist`` command given ROS arguments."""
    data = {"robot": "go2", "bringup_package": "go2_bringup", "params_file": "go2.yaml",
            "arguments": [{"name": "output_dir", "default": str(tmp_path), "path": True}],
            "nodes": [{"name": "crasher", "package": "simdist_core", "executable": "simdist", **node}]}
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_graph(path)


@pytest.mark.timeout(60)
def test_pip_launcher_respawns_as_launch_does(tmp_path):
    proc = GraphProcess(_crasher_graph(tmp_path, on_exit="log", respawn=True, respawn_delay_s=0.2),
                        log_dir=tmp_path / "logs")
    assert proc.run(duration_s=4.0) == 1
    assert proc.starts["crasher"] >= 3, proc.starts


@pytest.mark.timeout(60)
def test_pip_launcher_ends_when_every_node_is_gone(tmp_path):
    """As ``ros2 launch``: nothing left running (an ``on_exit: log`` node exited) ends the launch.

    No duration is given, so only the last node's exit can end ``run`` (the pytest timeout guards a hang)."""
    proc = GraphProcess(_crasher_graph(tmp_path, on_exit="log"), log_dir=tmp_path / "logs")
    assert proc.run(duration_s=None) == 1
    assert proc.starts == {"crasher": 1} and proc.exit_codes == {"crasher": 2}
