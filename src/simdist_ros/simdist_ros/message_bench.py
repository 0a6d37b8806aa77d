"""``simdist bench messages``: what receiving one ROS message costs a Python node on this machine.

Every SimDist node spins rclpy's single-threaded executor (``runtime.py``). rclpy rebuilds its wait set in
Python on every wake-up and builds a Python message object for every sample it takes, so a node pays per
message it receives, whatever its callback does. On a 2-vCPU VM that cost decided whether the Go2 graph with
its adaptation nodes fits two cores (``docs/results/live_graph.md``: the replay buffer alone receives ~340 messages a
second). This benchmark measures it with the Go2 graph's own message types and sizes:

- a publisher process sends, at ``--rate`` Hz, ``/clock`` and the Go2 sensor set (``joint_states``
  JointState of 12 joints, ``imu`` Imu, ``odom`` Odometry, ``height_map`` 32FC1 Image of the Go2 map,
  ``foot_contacts`` Float64MultiArray of 4), as the simulated robot does;
- this process runs one subscriber node (``use_sim_time``, so it also takes ``/clock``) per configuration:
  no sensor topic, one, all five; for ``--seconds`` each it counts messages and its own CPU time.

The marginal cost per message is the CPU of the five-topic run less the clock-only run, per extra message.
Nothing else should run while it measures (it reports the load average).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from simdist_core.cliargs import ArgumentParser, check_positive, cli_main

SENSOR_TOPICS = ("joint_states", "imu", "odom", "height_map", "foot_contacts")
"""The Go2 sensor set, in the order a configuration adds them."""


def _messages() -> dict[str, Any]:
    """One message per sensor topic, with the sizes the simulated Go2 publishes."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Image, Imu, JointState
    from simdist_core.robots import GO2
    from std_msgs.msg import Float64MultiArray

    rows, cols = GO2.height_map_shape
    joints = list(GO2.action_names)
    return {
        "joint_states": JointState(name=joints, position=[0.1] * 12, velocity=[0.2] * 12, effort=[0.3] * 12),
        "imu": Imu(),
        "odom": Odometry(),
        "height_map": Image(height=rows, width=cols, encoding="32FC1", step=4 * cols, data=bytes(4 * rows * cols)),
        "foot_contacts": Float64MultiArray(data=[1.0, 0.0, 1.0, 0.0]),
    }


def publish(rate_hz: float, seconds: float) -> None:
    """The publisher process: every sensor topic and ``/clock`` at ``rate_hz`` for ``seconds`` (wall time)."""
    import signal

    import rclpy
    import rclpy.signals
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock

    from simdist_ros import qos

    stop = []  # the parent's SIGTERM ends the loop; rclpy's own handler would invalidate the context mid-publish
    rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    node = Node("message_bench_publisher")
    messages = _messages()
    pubs = {t: node.create_publisher(type(m), t, qos.SENSOR) for t, m in messages.items()}
    clock = node.create_publisher(Clock, "/clock", 10)
    period, start, k = 1.0 / rate_hz, time.monotonic(), 0
    while time.monotonic() - start < seconds and not stop:
        k += 1
        for topic, pub in pubs.items():
            pub.publish(messages[topic])
        stamp = Clock()
        stamp.clock.sec, stamp.clock.nanosec = divmod(int(k * period * 1e9), 1_000_000_000)
        clock.publish(stamp)
        time.sleep(max(0.0, start + k * period - time.monotonic()))
    node.destroy_node()
    rclpy.shutdown()


def measure(topics: tuple[str, ...], seconds: float, warmup_s: float) -> dict[str, Any]:
    """One subscriber node on ``topics`` (plus ``/clock``), spun for ``seconds`` after ``warmup_s``."""
    import rclpy
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from simdist_ros import qos
    from simdist_ros.runtime import CountingExecutor

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = Node("message_bench_subscriber", context=context,
                    parameter_overrides=[Parameter("use_sim_time", value=True)])  # fmt: skip
        received = [0]
        types = {t: type(m) for t, m in _messages().items()}
        for topic in topics:
            node.create_subscription(types[topic], topic, lambda _m: received.__setitem__(0, received[0] + 1),
                                     qos.SENSOR)  # fmt: skip
        executor = CountingExecutor(context=context)
        executor.add_node(node)
        end = time.monotonic() + warmup_s
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.1)
        before, n0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF), received[0], executor.callbacks, time.monotonic()
        while time.monotonic() - t0 < seconds:
            executor.spin_once(timeout_sec=0.1)
        after, wall = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - t0
        cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    return {"topics": list(topics), "sensor_messages_per_s": round((received[0] - n0) / wall, 1),
            "callbacks_per_s": round((executor.callbacks - c0) / wall, 1), "cpu_percent": round(100 * cpu_s / wall, 2)}


def run(rate_hz: float, seconds: float, warmup_s: float = 3.0) -> dict[str, Any]:
    """Publisher in a child process; the subscriber configurations one after the other in this process."""
    configs = [(), SENSOR_TOPICS[:1], SENSOR_TOPICS]
    total_s = len(configs) * (seconds + warmup_s) + 10.0
    child = subprocess.Popen([sys.executable, "-m", "simdist_ros.message_bench", "--publisher",
                              "--rate", str(rate_hz), "--seconds", str(total_s)])  # fmt: skip
    load = os.getloadavg()[0]
    try:
        time.sleep(2.0)  # the publisher's start-up (imports, discovery)
        runs = [measure(topics, seconds, warmup_s) for topics in configs]
    finally:
        child.terminate()
        child.wait(timeout=10)
    clock_only, all_topics = runs[0], runs[-1]
    extra = all_topics["callbacks_per_s"] - clock_only["callbacks_per_s"]
    per_msg_ms = 10.0 * (all_topics["cpu_percent"] - clock_only["cpu_percent"]) / extra if extra > 0 else None
    from simdist_ros import procmem
    from simdist_ros.soak import git_commit

    return {"rate_hz": rate_hz, "seconds": seconds, "runs": runs,
            "cpu_ms_per_message": None if per_msg_ms is None else round(per_msg_ms, 3),
            "machine": procmem.machine_info(), "load_avg_1m_at_start": load, "load_avg_1m_at_end": os.getloadavg()[0],
            "git_commit": git_commit(), "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip


def format_table(report: dict[str, Any]) -> str:
    """Subscribed topics, messages and callbacks per second, CPU of a core; then the marginal cost."""
    lines = [f"{'subscribed (+ /clock)':<58}{'sensor msg/s':>13}{'callbacks/s':>13}{'CPU %':>8}"]
    for r in report["runs"]:
        lines.append(f"{', '.join(r['topics']) or '(none)':<58}{r['sensor_messages_per_s']:>13}"
                     f"{r['callbacks_per_s']:>13}{r['cpu_percent']:>8}")  # fmt: skip
    lines.append(f"CPU per received message: {report['cpu_ms_per_message']} ms of a core "
                 f"(load average {report['load_avg_1m_at_start']:.2f} at the start)")
    return "\n".join(lines)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist bench messages", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=50.0, help="publishing rate in Hz")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    parser.add_argument("--publisher", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    check_positive("--rate", args.rate)
    check_positive("--seconds", args.seconds)
    return args


@cli_main("simdist bench messages")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench messages``."""
    args = _parse(argv)
    if args.publisher:
        publish(args.rate, args.seconds)
        return 0
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randrange(1, 100)))  # the child inherits it
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    report = run(args.rate, args.seconds)
    print(format_table(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
        print(f"simdist bench messages: wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
