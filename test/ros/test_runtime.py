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


def test_watchdog_is_due_only_after_the_regular_tick_stopped():
    """The decision alone, on made-up node-clock times (no threads involved)."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = Node("watchdog_due", context=context)
        dog = runtime.Watchdog(node, period_ns=100, callback=lambda: None, first_periods=1.5)
        dog.close()  # only the decision is under test here
        assert dog.due_in_ns(1_000) <= 0, "no tick yet: due at once"
        dog.ticked(1_000)
        assert dog.due_in_ns(1_000) == 150 and dog.due_in_ns(1_100) == 50 and dog.due_in_ns(1_150) <= 0
        dog._last_fire_ns = 1_150  # it fired: next one a period later unless a tick comes
        assert dog.due_in_ns(1_200) == 50 and dog.due_in_ns(1_250) <= 0
        dog.ticked(1_240)
        assert dog.due_in_ns(1_250) == 140
        assert dog.due_in_ns(500) <= 0, "a clock that went back (a restarted simulation) is no reason to wait"
        # Data a period newer than the node's clock (a step's sensors before its /clock): the wait counts from the
        # data, so the next step's clock (1_500) finds the watchdog not yet due; counted from the clock it was.
        dog._last_fire_ns = None
        dog.ticked(1_300)
        assert dog.due_in_ns(1_500) <= 0
        dog.ticked(1_300, data_ns=1_400)
        assert dog.due_in_ns(1_300) == 250 and dog.due_in_ns(1_500) == 50 and dog.due_in_ns(1_550) <= 0
        dog.ticked(1_300, data_ns=10**12)  # a stamp from the future: counted as at most a period ahead
        assert dog.due_in_ns(1_550) <= 0
        dog.ticked(1_300, data_ns=1_000)  # older data: the clock counts
        assert dog.due_in_ns(1_400) == 50
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_watchdog_runs_its_callback_in_the_executor_only_while_ticks_are_missing():
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = Node("watchdog_live", context=context)
        executor = CountingExecutor(context=context)
        executor.add_node(node)
        fired: list[int] = []
        # A long period: the quiet phase below only fails if this process stalls for more than 1.5 s.
        dog = runtime.Watchdog(node, period_ns=1_000_000_000, first_periods=1.5,
                               callback=lambda: fired.append(threading.get_ident()))

        def spin_until(cond, seconds, tick=False):
            end = time.monotonic() + seconds
            while time.monotonic() < end and not cond():
                if tick:
                    dog.ticked(node.get_clock().now().nanoseconds)
                executor.spin_once(timeout_sec=0.02)
            return cond()

        assert spin_until(lambda: len(fired) >= 1, 10.0), "no regular tick ever: the watchdog must fire"
        assert fired[0] == threading.get_ident(), "the callback runs in the thread that spins the executor"
        count = len(fired)
        spin_until(lambda: False, 1.3, tick=True)  # regular ticks keep coming (past when the next firing was due)
        assert len(fired) == count, "the watchdog fired although the regular tick ran"
        assert spin_until(lambda: len(fired) > count, 10.0), "ticks stopped: the watchdog must fire again"
        dog.close()
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_full_collections_are_counted_and_the_startup_heap_is_frozen():
    import gc

    pauses = runtime.FullCollectionPauses()
    pauses.install()
    pauses.install()  # idempotent: one callback, each collection counted once
    try:
        gc.collect(0)  # a young collection is not a full one
        assert pauses.values()["gc_full_collections"] == 0
        gc.collect()
        gc.collect()
        values = pauses.values()
        assert values["gc_full_collections"] == 2
        assert 0 <= values["gc_full_max_ms"] <= values["gc_full_total_ms"]
        assert set(runtime.process_counts()) >= {"gc_full_collections", "gc_full_max_ms", "gc_full_total_ms"}

        before = gc.get_freeze_count()
        kept = [[i] for i in range(1000)]  # alive at "start-up": moved out of the collected generations
        runtime.freeze_startup_heap()
        assert gc.get_freeze_count() >= before + len(kept)
    finally:
        gc.callbacks.remove(pauses._on_gc)
        gc.unfreeze()
