"""``run_node``'s exit code: a signal-driven shutdown is clean even if rclpy's spin trips over a destroyed
handle on the way out; the same error while running is a failure (exit 1)."""

import os
import signal
import threading
import time

import pytest
from rclpy.exceptions import InvalidHandle
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from simdist_ros import runtime


@pytest.fixture
def restore_signals():
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_invalid_handle_during_shutdown_is_a_clean_exit(monkeypatch, restore_signals):
    released = threading.Event()
    original_shutdown = MultiThreadedExecutor.shutdown

    def spin(self):  # what rclpy does when shutdown destroys a handle the waiting spin still uses
        released.wait(10.0)
        raise InvalidHandle("cannot use Destroyable because destruction was requested")

    def shutdown(self, timeout_sec=None):
        released.set()
        time.sleep(0.05)
        return original_shutdown(self, timeout_sec)

    monkeypatch.setattr(MultiThreadedExecutor, "spin", spin)
    monkeypatch.setattr(MultiThreadedExecutor, "shutdown", shutdown)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    assert runtime.run_node(lambda: Node("run_node_clean_exit"), []) == 0
    timer.join()


def test_invalid_handle_while_running_is_a_failure(monkeypatch, restore_signals):
    def spin(self):
        raise InvalidHandle("a handle destroyed under a running node")

    monkeypatch.setattr(MultiThreadedExecutor, "spin", spin)
    assert runtime.run_node(lambda: Node("run_node_failure"), []) == 1
