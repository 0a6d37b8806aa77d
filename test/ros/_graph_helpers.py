"""Helpers for the graph tests: start node processes, publish a synthetic Go2 stream, collect messages."""

import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD, JOINT_NAMES
from simdist_ros.launcher import NODE_BOOT, entry_point
from std_msgs.msg import String

from simdist_ros import msgs, qos, topics

DT_NS = 20_000_000


def start_node(executable, params, log_path, name=None):
    """One node in its own process (like the launcher does), output to ``log_path``."""
    module, func = entry_point(executable)
    cmd = [sys.executable, "-c", NODE_BOOT.format(module=module, func=func), "--ros-args"]
    if name:
        cmd += ["-r", f"__node:={name}"]
    for key, value in params.items():
        cmd += ["-p", f"{key}:={value}"]
    log = open(log_path, "ab")
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # SIGABRT on a hang dumps every thread's stack
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)


def stop(proc, sig=signal.SIGINT, timeout=20):
    """Signal the node's process group and wait; on a hang, SIGABRT (stack dump in its log) and return None."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGABRT)
        proc.wait(timeout=10)
        return None


class Go2Streamer:
    """Publishes the Go2 sensor topics + executed command, one step per call, in a private context."""

    def __init__(self, context):
        self.node = rclpy.create_node("go2_streamer", context=context)
        self.pubs = {
            "joint_states": self.node.create_publisher(msgs.JointState, topics.JOINT_STATES, qos.SENSOR),
            "imu": self.node.create_publisher(msgs.Imu, topics.IMU, qos.SENSOR),
            "odom": self.node.create_publisher(msgs.Odometry, topics.ODOM, qos.SENSOR),
            "height_map": self.node.create_publisher(msgs.Image, topics.HEIGHT_MAP, qos.SENSOR),
            "executed": self.node.create_publisher(msgs.Float64MultiArray, topics.EXECUTED_COMMAND, qos.executed(50.0)),
        }
        self.t_ns = 1_000_000_000
        self.i = 0

    def step(self):
        t, i = self.t_ns, self.i
        q = DEFAULT_POSE_RAD + 0.01 * math.sin(i / 5)
        self.pubs["joint_states"].publish(msgs.make_joint_state(JOINT_NAMES, q, np.zeros(12), np.zeros(12), t))
        self.pubs["imu"].publish(msgs.make_imu(np.array([1.0, 0, 0, 0]), np.zeros(3), np.array([0, 0, 9.81]), t, "imu"))
        self.pubs["odom"].publish(msgs.make_odom(np.array([0.01 * i, 0, 0.27]), np.array([1.0, 0, 0, 0]),
                                                 np.array([0.5, 0, 0]), np.zeros(3), t))
        self.pubs["height_map"].publish(msgs.make_height_map(np.full((21, 15), -0.27, np.float32), t))
        time.sleep(0.002)  # sensors first, then the command that closes the step
        self.pubs["executed"].publish(msgs.make_float64_array(np.full(12, 0.01 * (i % 50))))
        self.t_ns += DT_NS
        self.i += 1

    def matched(self):
        return all(p.get_subscription_count() > 0 for p in self.pubs.values())


class ObservationStreamer:
    """Publishes the encoder's ``observation`` topic for the Go2, one step per call, in a private context.

    Step k carries proprio filled with k and ``action_before`` filled with k / 100, so a record can be checked.
    """

    def __init__(self, context):
        from simdist_core.robots import GO2
        from std_msgs.msg import Float32MultiArray

        self.spec = GO2
        self.node = rclpy.create_node("observation_streamer", context=context)
        self.pub = self.node.create_publisher(Float32MultiArray, topics.OBSERVATION, qos.OBSERVATION(50.0))
        self.t_ns = 1_000_000_000
        self.i = 0
        self.episode = 1
        self._start = True

    def step(self, episode_start=False):
        """Publish the next observation; ``episode_start`` = the encoder restarted its history here."""
        if episode_start:
            self.episode += 1
        obs = {"proprio": np.full(self.spec.proprio_dim, float(self.i), np.float32),
               "command": np.array([0.5, 0.0, 0.0], np.float32),
               "height_map": np.full(self.spec.height_map_shape, -0.27, np.float32)}
        action = np.full(self.spec.action_dim, self.i / 100.0, np.float32)
        self.pub.publish(msgs.make_observation(obs, action, self.t_ns, episode_start=self._start or episode_start,
                                               episode=self.episode))
        self._start = False
        self.t_ns += DT_NS
        self.i += 1

    def matched(self):
        return self.pub.get_subscription_count() > 0


class AnnounceCollector:
    """Collects JSON announcements (chunk_ready / model_update) with the transient-local QoS."""

    def __init__(self, context, topic):
        self.node = rclpy.create_node("collector", context=context)
        self.items = []
        self.node.create_subscription(String, topic, lambda m: self.items.append(json.loads(m.data)), qos.ANNOUNCE)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)


def wait_for(predicate, timeout_s, spin=None, step_s=0.05):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        if spin is not None:
            spin(step_s)
        else:
            time.sleep(step_s)
    return predicate()


class DiagnosticsCollector:
    """Keeps the newest DiagnosticStatus values per status name (shares the executor of ``spin_with``)."""

    def __init__(self, context, executor=None):
        from diagnostic_msgs.msg import DiagnosticArray

        self.node = rclpy.create_node("diag_collector", context=context)
        self.latest = {}
        self.history = []
        self.node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._on, qos.RELIABLE)
        self.executor = executor or SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)

    def _on(self, msg):
        for status in msg.status:
            values = msgs.status_values(status)
            self.latest[status.name] = values
            self.history.append((status.name, values))

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def find(self, prefix):
        return next((v for k, v in self.latest.items() if k.startswith(prefix)), None)
