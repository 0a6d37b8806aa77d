"""Test harness for node tests: start nodes as real processes, observe them from a private rclpy Context.

Nodes run as ``python -m simdist_ros.<node> --ros-args ...`` in their own process (the ros wheels' .pth
re-executes the interpreter once; the pid stays the same). The test process joins the same private
ROS_DOMAIN_ID (set in test/conftest.py, inherited by the children) with its own Context.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

REPO = Path(__file__).resolve().parents[2]
# Several test sessions share this machine and ROS_DOMAIN_ID = 100 + pid % 100 can collide: node tests
# additionally run in their own domain and namespace, so a stranger's /clock or sensors never leak in.
DOMAIN_ID = random.Random(os.getpid() ^ int(time.time())).randrange(1, 100)


def _param(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_param(v) if not isinstance(v, str) else f"'{v}'" for v in value) + "]"
    return str(value)


def unique_namespace(tag: str) -> str:
    return f"/t{os.getpid()}_{tag}_{random.randrange(10**6)}"


class NodeProcess:
    """A node in its own process; its log goes to a temp file (read with ``log()``)."""

    def __init__(self, module: str, params: dict, name: str, namespace: str = "") -> None:
        self.log_file = tempfile.NamedTemporaryFile("w+", prefix=f"{name}_", suffix=".log", delete=False)
        args = [sys.executable, "-u", "-m", f"simdist_ros.{module}", "--ros-args", "-r", f"__node:={name}"]
        if namespace:
            args += ["-r", f"__ns:={namespace}", "-r", f"/clock:={namespace}/clock"]
            args += ["-r", f"/diagnostics:={namespace}/diagnostics"]
            args += ["-r", f"/tf:={namespace}/tf", "-r", f"/tf_static:={namespace}/tf_static"]
        for key, value in params.items():
            args += ["-p", f"{key}:={_param(value)}"]
        env = dict(os.environ, PYTHONUNBUFFERED="1", RCUTILS_LOGGING_BUFFERED_STREAM="0", ROS_DOMAIN_ID=str(DOMAIN_ID))
        self.proc = subprocess.Popen(args, stdout=self.log_file, stderr=subprocess.STDOUT, env=env, cwd=REPO)

    def log(self) -> str:
        return Path(self.log_file.name).read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGINT (like Ctrl-C) and wait; returns the exit code (kills after ``timeout_s``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()
        return self.proc.returncode


class Observer:
    """A probe node in a private Context: collects messages, publishes test inputs, spins on demand."""

    def __init__(self, namespace: str = "", use_sim_time: bool = False) -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=DOMAIN_ID)
        self.ns = namespace
        self.node = rclpy.create_node("test_observer", namespace=namespace or None, context=self.context)
        if use_sim_time:
            self.node.set_parameters([rclpy.parameter.Parameter("use_sim_time", value=True)])
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.received: dict[str, deque] = {}

    def topic(self, name: str) -> str:
        """Absolute names (/clock, /diagnostics) are remapped into the test namespace too."""
        return f"{self.ns}{name}" if name.startswith("/") and self.ns else name

    def collect(self, msg_type, topic: str, qos, maxlen: int = 2000) -> deque:
        """Subscribe and keep up to ``maxlen`` messages of ``topic`` (newest last)."""
        store = self.received.setdefault(topic, deque(maxlen=maxlen))
        self.node.create_subscription(msg_type, self.topic(topic), lambda msg: store.append(msg), qos)
        return store

    def publisher(self, msg_type, topic: str, qos):
        return self.node.create_publisher(msg_type, self.topic(topic), qos)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)

    def spin_until(self, predicate, timeout_s: float, on_spin=None) -> bool:
        """Spin until ``predicate()`` holds (True) or ``timeout_s`` passes (False); ``on_spin`` runs each loop."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if predicate():
                return True
            if on_spin is not None:
                on_spin()
            self.executor.spin_once(timeout_sec=0.02)
        return predicate()

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def diag_values(store, name_part: str) -> dict[str, str]:
    """Values of the newest DiagnosticStatus whose name contains ``name_part`` ({} if none yet)."""
    for arr in reversed(store):
        for status in arr.status:
            if name_part in status.name:
                return {kv.key: kv.value for kv in status.values}
    return {}


def every(period_s: float, fn):
    """An ``on_spin`` callback that calls ``fn()`` at most once per ``period_s`` (wall clock)."""
    state = {"next": 0.0}

    def tick():
        now = time.monotonic()
        if now >= state["next"]:
            state["next"] = now + period_s
            fn()

    return tick


def fixed_latent_feed(obs, hz: float, seed: int, applied_delay: bool = True):
    """An ``on_spin`` callback that publishes one fixed random latent (16-d ``z``, 51-step context) at ``hz``.

    ``applied_delay``: the latent also reports that the robot applied each command on time (else the planner
    estimates the delay from the latent's age, which a loaded CI machine can push past one period).
    """
    import numpy as np
    from std_msgs.msg import Float32MultiArray

    from simdist_ros import msgs, qos, topics

    rng = np.random.default_rng(seed)
    blocks = {"z": rng.normal(size=16), "context": rng.normal(size=(51, 16))}
    if applied_delay:
        blocks["applied_delay"] = np.zeros(1)
    pub = obs.publisher(Float32MultiArray, topics.LATENT, qos.LATENT(hz))
    return every(1.0 / hz, lambda: pub.publish(msgs.make_latent(blocks, obs.node.get_clock().now().nanoseconds)))


def tiny_world_model(robot: str = "go2", seed: int = 0):
    """A randomly initialised, deliberately small WorldModel (node tests need shapes, not skill)."""
    import torch
    from simdist_core.models import WorldModel, WorldModelConfig
    from simdist_core.robots import get_robot

    torch.manual_seed(seed)
    cfg = WorldModelConfig(latent_dim=16, width=16, heads=2, layers=1, ffn=32, policy_layers=1, encoder_hidden=32)
    return WorldModel(get_robot(robot), cfg)


def update_source(tmp_path):
    """(update_dir, key_file, key) as ``simdist launch`` sets them up for the planner and the finetuner."""
    from simdist_core.checkpoint_auth import create_key_file, read_key

    key_file = create_key_file(tmp_path / "launch" / "model_update.key")
    update_dir = tmp_path / "updates"
    update_dir.mkdir(exist_ok=True)
    return update_dir, key_file, read_key(key_file)


def signed_update(key, path, parts_changed=("dynamics",)):
    """The announcement the finetuner publishes for the checkpoint at ``path`` (tagged with ``key``)."""
    from simdist_core.checkpoint import read_manifest
    from simdist_ros.model_update import make_announcement

    return make_announcement(read_manifest(path), key, path, list(parts_changed))
