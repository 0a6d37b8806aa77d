"""RViz sees what the graph publishes: the nodes of the launch plan (``sim:=true rviz:=true``, no adaptation)
run as processes over DDS, and the robot's ``.rviz`` file is checked against them.

    * every frame stamped on a drawn marker, an image, the height map or odometry is connected to the RViz fixed
      frame through ``/tf`` + ``/tf_static``, and each moving link on the way has a transform at exactly that
      stamp (RViz can place the marker where the robot was when it was planned);
    * every link of the URDF on ``robot_description`` is a TF frame (the RobotModel display can draw it all);
    * every topic a display of the ``.rviz`` file reads is published in the graph, with the display's message
      type and a compatible QoS (reliability, durability), and its fixed and target frames exist.

The model is a small random world model (the graph's plumbing is under test, not walking).
"""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from nav_msgs.msg import Odometry
from node_harness import NodeProcess, Observer, tiny_world_model, unique_namespace
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from sensor_msgs.msg import Image
from simdist_core.checkpoint import save_checkpoint
from simdist_ros.graph import load_graph
from simdist_ros.robot_tf import LATCHED, TF_QOS, TFMessage, tf_available
from std_msgs.msg import String
from visualization_msgs.msg import Marker, MarkerArray

from simdist_ros import msgs, qos, topics

PLANNER = ["num_samples=16", "num_pi_samples=4", "iterations=1", "num_elites=4"]
DISPLAY_TYPES = {"MarkerArray": "visualization_msgs/msg/MarkerArray", "Odometry": "nav_msgs/msg/Odometry",
                 "Image": "sensor_msgs/msg/Image", "RobotModel": "std_msgs/msg/String"}  # fmt: skip
RVIZ_QOS = {"Reliable": ReliabilityPolicy.RELIABLE, "Best Effort": ReliabilityPolicy.BEST_EFFORT,
            "Transient Local": DurabilityPolicy.TRANSIENT_LOCAL, "Volatile": DurabilityPolicy.VOLATILE}  # fmt: skip
IMAGE_TOPICS = {"go2": topics.HEIGHT_MAP, "ur5e": topics.CAMERA_IMAGE}


def _plan(robot):
    """(nodes we start, the .rviz config) of the launch plan with the simulated robot and RViz."""
    graph = load_graph(robot)
    resolved = graph.resolve({"sim": "true", "rviz": "true", "adapt": "false", "record": "false"})
    rviz = next(n for n in resolved if n.package == "rviz2")
    config = yaml.safe_load(Path(rviz.arguments[rviz.arguments.index("-d") + 1]).read_text())
    node_params = yaml.safe_load(graph.params_file_path().read_text())
    ours = [n for n in resolved if not n.external]
    assert {n.package for n in ours} == {"simdist_ros"}, "with sim:=true every node is a simdist_ros node"
    return ours, node_params, config


def _displays(config):
    """(class short name, topic, requested reliability, requested durability) of each display that reads one."""
    out = []
    for d in config["Visualization Manager"]["Displays"]:
        topic = d.get("Topic") or d.get("Description Topic")
        if topic:
            out.append((d["Class"].split("/")[-1], topic["Value"], topic.get("Reliability Policy", "Reliable"),
                        topic.get("Durability Policy", "Volatile")))  # fmt: skip
    return out


def _parents(transforms):
    """{child: parent} of a set of TransformStamped; a frame with two parents is not a tree."""
    parents = {}
    for t in transforms:
        previous = parents.setdefault(t.child_frame_id, t.header.frame_id)
        assert previous == t.header.frame_id, f"{t.child_frame_id} has two parents: {previous}, {t.header.frame_id}"
    return parents


def _chain(frame, parents, fixed):
    """The frames from ``frame`` up to ``fixed`` (``fixed`` may also sit below ``frame``'s root: then both
    chains meet at the root); raises AssertionError if they are not connected."""
    def up(f):
        path = [f]
        while path[-1] in parents:
            path.append(parents[path[-1]])
        return path

    a, b = up(frame), up(fixed)
    assert a[-1] == b[-1], f"frame {frame!r} is not connected to the fixed frame {fixed!r} (roots {a[-1]}, {b[-1]})"
    return a + b


@pytest.mark.timeout(420)
@pytest.mark.parametrize("robot", ["go2", "ur5e"])
def test_rviz_config_matches_the_running_graph(tmp_path, robot):
    ours, node_params, config = _plan(robot)
    save_checkpoint(tmp_path / "ckpt", tiny_world_model(robot), version=1)
    # The test's own settings over the robot's params file and the graph's parameters: a tiny checkpoint, no model
    # updates, lockstep (sim time independent of the shared machine's load), a small planner budget.
    overrides = {
        "sim_robot": {"lockstep": True, "real_time_factor": 1.0 if robot == "go2" else 0.5},
        "encoder": {"checkpoint": str(tmp_path / "ckpt")},
        "planner": {"checkpoint": str(tmp_path / "ckpt"), "planner_overrides": PLANNER, "rollout_every_n": 2,
                    "update_dir": None, "update_key_file": None},  # None: the node's default (no updates)
    }  # fmt: skip
    ns = unique_namespace(f"rviz_{robot}")
    nodes = []
    for n in ours:
        params = {**node_params.get(n.name, {}).get("ros__parameters", {}), **n.parameters, **overrides[n.name]}
        params = {k: v for k, v in params.items() if v is not None}
        nodes.append(NodeProcess(n.executable, params, n.name, ns))
    obs = Observer(ns)
    try:
        markers = obs.collect(MarkerArray, topics.PREDICTED_ROLLOUT, qos.RELIABLE)
        images = obs.collect(Image, IMAGE_TOPICS[robot], qos.SENSOR)
        odom = obs.collect(Odometry, topics.ODOM, qos.SENSOR)
        description = obs.collect(String, topics.ROBOT_DESCRIPTION, LATCHED)
        tf, tf_static = [], []
        if tf_available():
            tf = obs.collect(TFMessage, topics.TF, TF_QOS, maxlen=5000)
            tf_static = obs.collect(TFMessage, topics.TF_STATIC, LATCHED)

        def ready():
            return len(markers) >= 4 and images and odom and description and (tf_static or not tf_available())

        ok = obs.spin_until(lambda: ready() or not all(n.alive() for n in nodes), 240.0)
        assert ok and all(n.alive() for n in nodes), "\n".join(n.log()[-2000:] for n in nodes)
        obs.spin_for(0.5)  # the /tf of the newest samples
        fixed = config["Visualization Manager"]["Global Options"]["Fixed Frame"]
        target = config["Visualization Manager"]["Views"]["Current"]["Target Frame"]

        # 1. Every topic a display reads exists with the display's type and a QoS it can match.
        published = dict(obs.node.get_topic_names_and_types())
        for kind, topic, reliability, durability in _displays(config):
            name = f"{ns}{topic}"  # RViz runs at the root; this graph runs in the test's namespace
            assert DISPLAY_TYPES[kind] in published.get(name, []), f"{kind} display: {topic} not published"
            for info in obs.node.get_publishers_info_by_topic(name):
                offered = info.qos_profile
                if RVIZ_QOS[reliability] == ReliabilityPolicy.RELIABLE:
                    assert offered.reliability == ReliabilityPolicy.RELIABLE, f"{topic}: RViz asks reliable"
                if RVIZ_QOS[durability] == DurabilityPolicy.TRANSIENT_LOCAL:
                    assert offered.durability == DurabilityPolicy.TRANSIENT_LOCAL, f"{topic}: RViz asks latched"
        urdf_links = {link.get("name") for link in ET.fromstring(description[-1].data).findall("link")}
        if not tf_available():
            pytest.skip("tf2_msgs is not importable (scripts/gen_tf2_msgs.py): topics checked, TF not")

        # 2. TF is one tree holding the fixed frame, the view's target frame and every URDF link.
        dynamic = [t for m in tf for t in m.transforms]
        static = [t for m in tf_static for t in m.transforms]
        parents = _parents(dynamic + static)
        frames = set(parents) | set(parents.values())
        assert fixed in frames and (target == "<Fixed Frame>" or target in frames), (fixed, target, frames)
        assert urdf_links <= frames, f"URDF links without a TF frame: {urdf_links - frames}"
        for link in urdf_links:
            _chain(link, parents, fixed)

        # 3. Every stamped frame of what RViz draws is connected, moving links at exactly the message's stamp.
        stamps = {}
        for t in dynamic:
            stamps.setdefault((t.header.frame_id, t.child_frame_id), set()).add(msgs.stamp_to_ns(t.header.stamp))
        newest_tf = max(s for v in stamps.values() for s in v)
        drawn = [m for arr in markers for m in arr.markers if m.action == Marker.ADD]
        stamped = [(m.header.frame_id, msgs.stamp_to_ns(m.header.stamp)) for m in drawn]
        stamped += [(m.header.frame_id, msgs.stamp_to_ns(m.header.stamp)) for m in (*images, *odom)]
        stamped += [(m.child_frame_id, msgs.stamp_to_ns(m.header.stamp)) for m in odom]
        assert {"", None}.isdisjoint(f for f, _ in stamped), "every message names its frame"
        checked = 0
        for frame, t_ns in stamped:
            chain = _chain(frame, parents, fixed)
            if t_ns > newest_tf or t_ns < min(min(v) for v in stamps.values()):
                continue  # TF of that instant not collected (before the observer joined, or after it stopped)
            for child in chain:
                edge = (parents.get(child), child)
                if edge in stamps:  # a moving link: RViz needs its transform at this stamp
                    assert t_ns in stamps[edge], f"no /tf {edge} at {t_ns} for a message in {frame!r}"
            checked += 1
        assert checked >= 4, "too few stamped messages overlapped the collected /tf"
        assert {m.header.frame_id for m in drawn} == {node_params["planner"]["ros__parameters"]["frame_id"]}
    finally:
        obs.close()
        for n in nodes:
            n.stop()
