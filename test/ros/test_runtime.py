"""``run_node``'s exit code: a signal-driven shutdown is clean even if rclpy's spin trips over a destroyed
handle on the way out; the same error while running is a failure (exit 1)."""

import os
import signal
import threading
import time

import pytest
from rclpy.exceptions import InvalidHandle
from rclpy.node import Node
from simdist_ros.runtime import CountingExecutor

from simdist_ros import runtime


@pytest.fixture
def restore_signals():
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_invalid_handle_during_shutdown_is_a_clean_exit(monkeypatch, restore_signals):
    released = threading.Event()
    original_shutdown = CountingExecutor.shutdown

    def spin(self):  # what rclpy does when shutdown destroys a handle the waiting spin still uses
        released.wait(10.0)
        raise InvalidHandle("cannot use Destroyable because destruction was requested")

    def shutdown(self, timeout_sec=None):
        released.set()
        time.sleep(0.05)
        return original_shutdown(self, timeout_sec)

    monkeypatch.setattr(CountingExecutor, "spin", spin)
    monkeypatch.setattr(CountingExecutor, "shutdown", shutdown)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    assert runtime.run_node(lambda: Node("run_node_clean_exit"), []) == 0
    timer.join()


def test_invalid_handle_while_running_is_a_failure(monkeypatch, restore_signals):
    def spin(self):
        raise InvalidHandle("a handle destroyed under a running node")

    monkeypatch.setattr(CountingExecutor, "spin", spin)
    assert runtime.run_node(lambda: Node("run_node_failure"), []) == 1


def test_default_executor_counts_passes_and_callbacks(monkeypatch):
    """The default executor is the single-threaded one that reports wake-ups per executed callback."""
    import rclpy

    monkeypatch.delenv("SIMDIST_EXECUTOR", raising=False)
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        executor = runtime.make_executor(context=context)
        assert isinstance(executor, CountingExecutor)
        node = Node("counting_executor", context=context)
        fired = []
        node.create_timer(0.01, lambda: fired.append(1))
        executor.add_node(node)
        for _ in range(20):
            executor.spin_once(timeout_sec=0.2)
        assert executor.callbacks == len(fired) > 0
        assert executor.passes >= executor.callbacks
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_unknown_executor_is_a_clear_error():
    with pytest.raises(ValueError, match="valid: single, events, multi"):
        runtime.make_executor("threads")
