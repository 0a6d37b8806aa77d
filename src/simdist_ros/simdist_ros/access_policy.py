"""Who may do what on the SimDist graph: one table per robot, the source of the DDS permissions.

Each node of ``graphs/<robot>.yaml`` runs in its own security enclave (``/simdist/<node>``), and
:func:`graph_access` says which topics it may publish and subscribe and which services it may serve and
call, in absolute ROS names. ``simdist security init`` signs exactly these grants (``keystore.py``), and
``test/ros/test_access_policy.py`` checks every entry against the publishers, subscriptions and services
the running nodes really create: a node that gains a topic fails that test until the table says so.

The table is written out by hand on purpose (never derived from the nodes at run time): it is the
reviewed statement of authority, e.g. only the planner may command the joints, only the finetuner may
announce a model, and only the ``operator`` enclave (a person at a terminal) may trigger, reset or
enable anything on the robot. No ROS imports: it must load where ``simdist security init`` runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from simdist_ros import topics

ENCLAVE_ROOT = "/simdist"
"""Enclaves are ``/simdist/<node name>``; the keystore holds ``enclaves/simdist/<node name>/``."""
OPERATOR = "operator"
"""The enclave of a person's terminal (``ros2 service call``, ``ros2 topic pub``): e-stop, reset, enable."""

NODE_SERVICES = ("describe_parameters", "get_parameter_types", "get_parameters", "get_type_description",
                 "list_parameters", "set_parameters", "set_parameters_atomically")
"""Services every rclpy node serves under its own name (parameters, and the type description of Jazzy on)."""
ROS_CLI_NODES = "/_ros2cli_*"
"""``ros2 service call`` / ``ros2 topic pub`` name their hidden node ``_ros2cli_<something>``; it serves the
node services above, so the operator may serve them under this (fnmatch) prefix and nowhere else."""

ROBOTS = ("go2", "ur5e")
_DRIVER_SERVICES = {"go2": ("estop", "reset_estop", "stand_up", "lie_down"), "ur5e": ("estop", "reset_estop", "enable")}
_SIM_SERVICES = ("estop", "reset_estop")
_TASK_COMMAND = {"go2": topics.TASK_COMMAND, "ur5e": topics.FIXTURE_POSE}
_OBSERVATION = {  # what the encoder needs for one observation (simdist_ros.sensors.SENSOR_TOPICS)
    "go2": (topics.JOINT_STATES, topics.IMU, topics.ODOM, topics.HEIGHT_MAP),
    "ur5e": (topics.JOINT_STATES, topics.ODOM, topics.WRENCH, topics.CAMERA_IMAGE),
}
_ROBOT_SENSORS = {  # what a simulated robot publishes; the real one splits it between driver and helpers
    "go2": (*_OBSERVATION["go2"], topics.FOOT_CONTACTS),
    "ur5e": _OBSERVATION["ur5e"],
}
_GO2_CLOUD = "utlidar/cloud"  # the Go2's own LiDAR topic (height_map_node's cloud_topic default)


WALL_CLOCK_NODES = ("sim_robot", "replay_buffer", "finetuner")
"""Nodes the graphs run with ``use_sim_time: false`` in simulation: the clock's owner, and the two learning
nodes, which need no ``/clock`` (each message costs a Python node CPU; see ``simdist_ros.replay_buffer_node``)."""


def enclave_name(node: str) -> str:
    """``planner`` -> ``/simdist/planner`` (what ``--enclave`` gets and what its certificate names)."""
    return f"{ENCLAVE_ROOT}/{node}"


def absolute(name: str) -> str:
    """A graph-relative name (``joint_command``) as the root-namespace graph sees it (``/joint_command``)."""
    return name if name.startswith("/") else f"/{name}"


@dataclass(frozen=True, kw_only=True)
class Access:
    """What one enclave may do on the ROS graph, in absolute ROS names (fnmatch patterns allowed)."""

    publish: frozenset[str] = frozenset()
    """Topics it may publish."""
    subscribe: frozenset[str] = frozenset()
    """Topics it may subscribe to."""
    serve: frozenset[str] = frozenset()
    """Services it may answer."""
    call: frozenset[str] = frozenset()
    """Services it may call."""

    def __or__(self, other: Access) -> Access:
        """The union of two grants (a node that runs in both the simulated and the real graph)."""
        return Access(publish=self.publish | other.publish, subscribe=self.subscribe | other.subscribe,
                      serve=self.serve | other.serve, call=self.call | other.call)


def _access(publish: Iterable[str] = (), subscribe: Iterable[str] = (), serve: Iterable[str] = (),
            call: Iterable[str] = ()) -> Access:
    return Access(publish=frozenset(map(absolute, publish)), subscribe=frozenset(map(absolute, subscribe)),
                  serve=frozenset(map(absolute, serve)), call=frozenset(map(absolute, call)))


def node_infrastructure(node: str, *, sim_time: bool) -> Access:
    """What rclpy itself creates for every node: log and parameter events, the node services, ``/clock``."""
    return _access(publish=("/rosout", "/parameter_events"), subscribe=(topics.CLOCK,) if sim_time else (),
                   serve=(f"/{node}/{service}" for service in NODE_SERVICES))


def _own_access(robot: str, node: str) -> Access:
    """The node's own topics and services (the table proper), without rclpy's infrastructure."""
    sensors, task = _ROBOT_SENSORS[robot], _TASK_COMMAND[robot]
    diagnostics = (topics.DIAGNOSTICS,)
    robot_tf = (topics.TF, topics.TF_STATIC, topics.ROBOT_DESCRIPTION)  # drivers describe their robot for RViz
    table = {
        "sim_robot": _access(
            publish=(*sensors, task, topics.CLOCK, topics.EXECUTED_COMMAND, topics.EPISODE_START,
                     topics.EPISODE_RESULT, *robot_tf, *diagnostics),
            subscribe=(topics.COMMAND, topics.ESTOP), serve=_SIM_SERVICES),
        "encoder": _access(publish=(topics.LATENT, topics.OBSERVATION, *diagnostics),
                           subscribe=(*_OBSERVATION[robot], task, topics.EXECUTED_COMMAND, topics.EPISODE_START)),
        # The only enclave that may command the joints.
        "planner": _access(publish=(topics.COMMAND, topics.PLAN, topics.PREDICTED_ROLLOUT, *diagnostics),
                           subscribe=(topics.LATENT, topics.MODEL_UPDATE)),
        "replay_buffer": _access(publish=(topics.CHUNK_READY, *diagnostics),
                                 subscribe=(topics.OBSERVATION,)),
        # The only enclave that may announce a model (the planner still checks the HMAC tag on top).
        # It reads the planner's tick counters on /diagnostics to keep its training out of the loop's way.
        "finetuner": _access(publish=(topics.MODEL_UPDATE, *diagnostics), subscribe=(topics.CHUNK_READY, *diagnostics)),
        "recorder": _access(publish=diagnostics,
                            subscribe=(*sensors, task, topics.COMMAND, topics.EXECUTED_COMMAND, topics.LATENT,
                                       topics.PLAN, topics.PREDICTED_ROLLOUT, topics.DIAGNOSTICS,
                                       topics.CHUNK_READY, topics.MODEL_UPDATE, topics.EPISODE_START,
                                       topics.EPISODE_RESULT)),
        "go2_driver": _access(
            publish=(topics.JOINT_STATES, topics.IMU, topics.FOOT_CONTACTS, topics.ODOM, topics.EXECUTED_COMMAND,
                     *robot_tf, *diagnostics),
            subscribe=(topics.COMMAND, topics.ESTOP), serve=_DRIVER_SERVICES["go2"]),
        "height_map": _access(publish=(topics.HEIGHT_MAP,), subscribe=(_GO2_CLOUD, topics.ODOM)),
        "ur5e_driver": _access(
            publish=(topics.JOINT_STATES, topics.WRENCH, topics.ODOM, topics.EXECUTED_COMMAND, *robot_tf,
                     *diagnostics),
            subscribe=(topics.COMMAND, topics.ESTOP), serve=_DRIVER_SERVICES["ur5e"]),
        "camera": _access(publish=(topics.CAMERA_IMAGE, *diagnostics)),
    }
    if node not in table:
        raise KeyError(f"node {node!r} has no entry in the access policy; nodes: {sorted(table)}")
    return table[node]


def node_access(robot: str, node: str, *, sim: bool) -> Access:
    """Everything node ``node`` of ``robot``'s graph may do when the graph runs simulated (``sim``) or real.

    In the simulated graph every node but those of :data:`WALL_CLOCK_NODES` runs on sim time
    (``use_sim_time: $(sim)``), so it subscribes to ``/clock``; only ``sim_robot`` may publish it.

    Raises:
        KeyError: an unknown robot or node (the message lists the known ones).
    """
    if robot not in ROBOTS:
        raise KeyError(f"robot {robot!r} has no access policy; robots: {list(ROBOTS)}")
    return _own_access(robot, node) | node_infrastructure(node, sim_time=sim and node not in WALL_CLOCK_NODES)


def operator_access(robot: str) -> Access:
    """A person's terminal: trigger, reset or enable the robot (and the simulated robot), watch diagnostics."""
    if robot not in ROBOTS:
        raise KeyError(f"robot {robot!r} has no access policy; robots: {list(ROBOTS)}")
    return _access(publish=(topics.ESTOP, "/rosout", "/parameter_events"), subscribe=(topics.DIAGNOSTICS,),
                   call=_DRIVER_SERVICES[robot],
                   serve=(f"{ROS_CLI_NODES}/{service}" for service in NODE_SERVICES))


def graph_access(robot: str, *, modes: tuple[bool, ...] = (True, False)) -> dict[str, Access]:
    """Enclave name -> grant for every node ``robot``'s graph starts in the given modes (``sim`` true/false).

    A node that runs in both modes gets the union (e.g. the planner also subscribes to ``/clock``).
    External tools (RViz) get no enclave: they are not ours to grant. ``operator`` is always included.
    """
    from simdist_ros.graph import load_graph

    graph = load_graph(robot)
    grants: dict[str, Access] = {}
    for node in graph.nodes:
        if node.external:
            continue
        for sim in modes:
            if (node.if_arg == "sim" and not sim) or (node.unless_arg == "sim" and sim):
                continue
            grant = node_access(robot, node.name, sim=sim)
            grants[node.name] = grants[node.name] | grant if node.name in grants else grant
    grants[OPERATOR] = operator_access(robot)
    return grants


def observed_access(observer: Any, node: str, namespace: str = "/") -> Access:  # noqa: ANN401 (an rclpy Node)
    """What node ``node`` really uses, read from the ROS graph by ``observer`` (any rclpy node that sees it).

    Compare with :func:`node_access` to check a running graph against the policy (the tests do).
    """
    def names(query: str) -> frozenset[str]:
        return frozenset(name for name, _types in getattr(observer, query)(node, namespace))

    return Access(publish=names("get_publisher_names_and_types_by_node"),
                  subscribe=names("get_subscriber_names_and_types_by_node"),
                  serve=names("get_service_names_and_types_by_node"),
                  call=names("get_client_names_and_types_by_node"))
