"""Shared plumbing of the SimDist nodes: ``main()`` skeleton, tick statistics, checkpoint lookup.

Kept out of the node files so each node stays a thin adapter.

Executors, chosen on measurement: rclpy 9.1.2's ``MultiThreadedExecutor`` busy-spins (upstream ros2/rclpy
issue 1452, fixed after Kilted): a task queued behind a running callback is re-yielded and re-submitted to
the thread pool on every pass. On a 2-core machine the planner's executor polled 3,400-5,600 times a second
for 15-40 callbacks, burnt most of a core and starved its own control tick of the GIL (25 % of 50 Hz ticks
kept at a real-time factor of 0.25). Every node therefore spins a single-threaded executor; a node that
needs concurrency owns a worker thread (the simulator loop, the replay writer, the model-swap verifier, the
finetuner's worker process) instead of asking the executor for it. ``simdist bench graph`` measures the
executors side by side (``SIMDIST_EXECUTOR``) and reports wake-ups per executed callback.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
import rclpy.signals
from rclpy.exceptions import InvalidHandle
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node

from simdist_ros import boot

STAT_WINDOW = 2000
"""Tick latencies kept for percentiles (a bounded deque: ~16 KB)."""


class TickStats:
    """Latency and missed-tick bookkeeping of a periodic callback.

    A tick's latency is measured on the wall clock (``time.perf_counter``). Missed ticks are counted on
    the node's clock (ROS time, i.e. sim time under ``use_sim_time``): a gap of more than 1.5 periods
    between two tick starts means ``round(gap / period) - 1`` ticks never ran (rcl timers skip
    missed periods instead of bunching them). Memory: ``STAT_WINDOW`` floats.
    """

    def __init__(self, period_s: float) -> None:
        self.period_ns = int(round(period_s * 1e9))
        self.latencies_s: deque[float] = deque(maxlen=STAT_WINDOW)
        self.ticks = 0
        self.missed_ticks = 0
        self.deadline_misses = 0
        self._last_start_ns: int | None = None
        self._t0 = 0.0

    def start(self, now_ns: int) -> int:
        """Call at the start of a tick; returns the number of ticks missed since the previous one."""
        self._t0 = time.perf_counter()
        missed = 0
        if self._last_start_ns is not None and now_ns - self._last_start_ns > 1.5 * self.period_ns:
            missed = int(round((now_ns - self._last_start_ns) / self.period_ns)) - 1
        self._last_start_ns = now_ns
        self.missed_ticks += missed
        self.ticks += 1
        return missed

    def stop(self) -> float:
        """Call at the end of a tick; returns its wall-clock latency in seconds."""
        latency = time.perf_counter() - self._t0
        self.latencies_s.append(latency)
        if latency * 1e9 > self.period_ns:
            self.deadline_misses += 1
        return latency

    def percentiles_ms(self) -> tuple[float, float]:
        """(p50, p99) tick latency in milliseconds over the window; NaN before the first tick."""
        if not self.latencies_s:
            return float("nan"), float("nan")
        p50, p99 = np.percentile(np.fromiter(self.latencies_s, float), [50, 99])
        return float(p50) * 1e3, float(p99) * 1e3


class Watchdog:
    """Runs ``callback`` in the node's executor while the node's regular tick has stopped.

    Due ``first_periods`` after the last regular tick (or at once if there was none), then once a period until
    ticks resume; periods on the node's clock (sim time under ``use_sim_time``).

    Why not a control-rate ROS timer: each firing costs rclpy 9.1.2 a pass of its executor, ~0.8 ms of a core
    on the 2-core VM (4 % of a core at 50 Hz), and a watchdog almost never has anything to do. Here a daemon
    thread sleeps until the earliest moment the callback could be due (about once a period while ticks come,
    ~0.1 ms each) and, when it is due, triggers a guard condition: the callback then runs in the executor like
    any other, never beside the node's other callbacks (``callback_group`` for a multi-threaded executor).
    """

    def __init__(
        self,
        node: Node,
        period_ns: int,
        callback: Callable[[], None],
        first_periods: float = 1.5,
        callback_group: Any = None,  # noqa: ANN401  (rclpy callback group)
    ) -> None:
        self.period_ns, self.first_ns = period_ns, int(first_periods * period_ns)
        self._clock, self._callback = node.get_clock(), callback
        self._last_tick_ns: int | None = None  # the regular tick (written by the executor thread only)
        self._last_fire_ns: int | None = None
        self._pending = False
        self._guard = node.create_guard_condition(self._fire, callback_group=callback_group)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)
        self._thread.start()

    def ticked(self, now_ns: int, data_ns: int | None = None) -> None:
        """The regular tick ran at ``now_ns`` (node clock) on data stamped ``data_ns`` (the same clock), if known.

        The wait counts from the later of the two, capped at a period ahead. Why: a simulator publishes a step's
        sensors before its ``/clock``, so a tick can see step k's data while the node's clock still reads step
        k - 1. Counted from that clock, the watchdog was due half a period after step k; in lockstep the next
        step's ``/clock`` then often arrived before its data and the watchdog planned again on step k's data,
        which moved the planner's warm start and noise on by a tick (two identical lockstep runs differed in an
        episode). The cap keeps a stamp from the future (a forged message) from silencing the watchdog.
        """
        self._last_tick_ns = now_ns if data_ns is None else max(now_ns, min(data_ns, now_ns + self.period_ns))

    def due_in_ns(self, now_ns: int) -> int:
        """Node-clock nanoseconds until the callback is due (<= 0: due now)."""
        waits = [0]
        # A clock more than a period behind the last tick went back (a restarted simulation): no reason to wait.
        if self._last_tick_ns is not None and now_ns - self._last_tick_ns >= -self.period_ns:
            waits.append(self._last_tick_ns + self.first_ns - now_ns)
        if self._last_fire_ns is not None and 0 <= now_ns - self._last_fire_ns:
            waits.append(self._last_fire_ns + self.period_ns - now_ns)
        return max(waits)

    def _run(self) -> None:
        # Sleeping the node-clock wait in wall seconds is exact at real-time factor 1 and early below it (the
        # thread looks again); capped at one period so a clock that jumps ahead is noticed within a period.
        while not self._stop.is_set():
            wait_ns = self.due_in_ns(self._clock.now().nanoseconds)
            if wait_ns <= 0:
                if not self._pending:  # else the executor is busy and will run it: no polling meanwhile
                    self._pending = True
                    try:
                        self._guard.trigger()
                    except InvalidHandle:  # the node is being destroyed
                        return
                wait_ns = self.period_ns
            self._stop.wait(min(max(wait_ns, 1_000_000), self.period_ns) * 1e-9)

    def _fire(self) -> None:
        self._pending = False
        now_ns = self._clock.now().nanoseconds
        if self.due_in_ns(now_ns) > 0:  # a regular tick came while the trigger was on its way
            return
        self._last_fire_ns = now_ns
        self._callback()

    def close(self) -> None:
        """Stop the thread (before the node is destroyed)."""
        self._stop.set()
        self._thread.join(timeout=2.0)


def repo_root() -> Path:
    """The source checkout this package runs from (holds ``checkpoints/``); falls back to the cwd."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "checkpoints").is_dir() or (parent / ".git").exists():
            return parent
    return Path.cwd()


def resolve_checkpoint(path: str, robot: str) -> Path:
    """The checkpoint to load: ``path``, or ``<repo>/checkpoints/<robot>`` when ``path`` is empty.

    Raises:
        FileNotFoundError: nothing there (the message says where it looked and how to fix it).
    """
    if path:
        resolved = Path(os.path.expanduser(path))
    else:
        if not robot:
            raise FileNotFoundError("parameter checkpoint is empty and robot is empty: set one of them")
        resolved = repo_root() / "checkpoints" / robot
    if not resolved.exists():
        raise FileNotFoundError(
            f"checkpoint {str(resolved)!r} does not exist; pass -p checkpoint:=<dir> "
            "(e.g. one written by `simdist pretrain`)"
        )
    return resolved


def manifest_get(manifest: Any, key: str, default: Any = None) -> Any:  # noqa: ANN401  (JSON values)
    """Read ``key`` from a checkpoint manifest that is either a mapping or a dataclass."""
    if isinstance(manifest, Mapping):
        return manifest.get(key, default)
    return getattr(manifest, key, default)


def setup_torch(threads: int) -> None:
    """Cap torch's intra-op threads.

    On a shared 2-core machine more threads raise timer jitter (p99 lateness ~1 ms with 1 thread against
    3-5 ms with torch busy on both cores).
    """
    import torch

    torch.set_num_threads(max(1, threads))


EXECUTORS = ("single", "events", "multi")
"""Executor kinds ``run_node`` can spin (``SIMDIST_EXECUTOR``; default ``single``, see the module docstring)."""


class CountingExecutor(SingleThreadedExecutor):
    """rclpy's single-threaded executor that counts its passes and the callbacks it executed.

    A pass is one request for the next ready callback; a pass that returns none (a timeout, a guard
    condition, an entity that was not ready after all) is a wake-up that did no work. The ratio
    ``passes / callbacks`` is what the busy-spin of the multi-threaded executor drove into the hundreds.
    """

    def __init__(self, **kwargs: Any) -> None:  # noqa: ANN401  (rclpy's keyword arguments)
        super().__init__(**kwargs)
        self.passes = 0
        self.callbacks = 0

    def wait_for_ready_callbacks(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401  (rclpy's signature)
        """Count the pass, then the callback if one is returned (rclpy raises when none is ready)."""
        self.passes += 1
        ready = super().wait_for_ready_callbacks(*args, **kwargs)  # raises on timeout / shutdown
        self.callbacks += 1
        return ready


_executor_in_use: list[Executor] = []


class FullCollectionPauses:
    """Counts generation-2 garbage collections and how long they held the GIL (``gc.callbacks``).

    A full collection stops every thread of the process, the control tick included; diagnostics report
    them so a stalled tick can be told apart from a slow one. Memory: three numbers.
    """

    def __init__(self) -> None:
        self.count = 0
        self.total_ms = 0.0
        self.max_ms = 0.0
        self._t0 = 0.0

    def install(self) -> None:
        """Start counting (idempotent)."""
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._t0 = time.perf_counter()
            return
        ms = (time.perf_counter() - self._t0) * 1e3
        self.count += 1
        self.total_ms += ms
        self.max_ms = max(self.max_ms, ms)

    def values(self) -> dict[str, float]:
        """Count, total and longest pause (ms) since ``install``."""
        return {"gc_full_collections": self.count, "gc_full_total_ms": round(self.total_ms, 1),
                "gc_full_max_ms": round(self.max_ms, 1)}


_full_collections = FullCollectionPauses()


def process_counts() -> dict[str, float]:
    """Executor wake-ups and full garbage collections of this process, for a node's diagnostics."""
    return {**executor_counts(), **_full_collections.values()}


def executor_counts() -> dict[str, float]:
    """Wake-up counters of this process's executor for diagnostics (empty for executors that keep none)."""
    for executor in _executor_in_use:
        if isinstance(executor, CountingExecutor):
            return {"executor_passes": executor.passes, "executor_callbacks": executor.callbacks,
                    "executor_passes_per_callback": round(executor.passes / max(executor.callbacks, 1), 3)}
    return {}


def make_executor(kind: str | None = None, threads: int = 2, context: Any = None) -> Executor:  # noqa: ANN401
    """The executor ``run_node`` spins: ``kind`` or ``$SIMDIST_EXECUTOR`` (default ``single``).

    ``events`` is rclpy's experimental C++ events executor, ``multi`` the thread-pool executor (kept
    only so the benchmark can show what it costs).

    Raises:
        ValueError: an unknown kind (the message lists the valid ones).
    """
    kind = kind or os.environ.get("SIMDIST_EXECUTOR", "single")
    if kind == "single":
        return CountingExecutor(context=context)
    if kind == "events":
        from rclpy.experimental import EventsExecutor

        return EventsExecutor(context=context)
    if kind == "multi":
        return MultiThreadedExecutor(num_threads=threads, context=context)
    raise ValueError(f"unknown executor {kind!r}; valid: {', '.join(EXECUTORS)}")


def freeze_startup_heap() -> None:
    """Move every object alive after start-up into the garbage collector's permanent generation.

    Why: a full (generation-2) collection walks every tracked object while holding the GIL, so the control
    tick waits for it: with torch, rclpy and a model loaded (205 k objects) one took 217 ms on the 2-core VM,
    with this heap frozen 0.002 ms (``scripts/diagnostics/gc_pause.py``). Python starts one by itself when
    enough long-lived objects accumulate, and a hot swap builds a whole model. Objects created later are
    collected as before, and frozen ones are still freed by reference counting (a dropped model is: it holds
    no reference cycle); only cyclic garbage made during start-up is never reclaimed.
    """
    gc.collect()  # what start-up left as garbage goes now, not into the permanent generation
    gc.freeze()
    _full_collections.install()  # counted from here on: start-up's own collections are not the loop's


def run_node(make_node: Callable[[], Node], args: list[str] | None = None, threads: int = 2) -> int:
    """Standard ``main()``: init, spin the executor (:func:`make_executor`), shut down cleanly.

    rclpy's own signal handlers are off: they shut the context down while callbacks may still be
    publishing on other executor threads. Instead the executor spins in a thread while the main thread
    waits for SIGINT / SIGTERM (what launchers send). A waiting main thread always sees the signal, even
    when every timer is on a ``/clock`` that stopped. Then the executor stops (waiting for running
    callbacks), the node's ``close()`` joins its worker threads, and only then is the context shut down.

    Returns:
        A process exit code: 0 after a signal, 1 if the node failed to start or a callback raised.
    """
    stop = threading.Event()
    shutting_down = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    with rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO):
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        logger = rclpy.logging.get_logger("simdist")
        if boot.stop_requested.is_set():  # SIGINT while this process was still importing (launched nodes)
            logger.info("stop requested before the node started; exiting without starting it")
            return 0
        try:
            node = make_node()
        except Exception as exc:  # noqa: BLE001  (process boundary: report why the node cannot start)
            logger.fatal(f"node failed to start: {exc}")
            return 1
        freeze_startup_heap()
        try:
            executor = make_executor(threads=threads)
        except ValueError as exc:
            logger.fatal(str(exc))
            return 1
        _executor_in_use[:] = [executor]
        executor.add_node(node)
        failure: list[BaseException] = []

        def spin() -> None:
            try:
                executor.spin()
            except ExternalShutdownException:
                pass
            except InvalidHandle as exc:
                # executor.shutdown() destroys handles a waiting spin may still touch: benign only then
                # (seen once in a 5-minute demo: the replay buffer had sealed all its data, yet exited 1).
                if not shutting_down.is_set():
                    failure.append(exc)
            except Exception as exc:  # noqa: BLE001  (reported below; the process exits 1)
                failure.append(exc)
            finally:
                stop.set()

        spinner = threading.Thread(target=spin, name="executor")
        spinner.start()
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:  # a signal that arrived before the handlers were installed
            pass
        shutting_down.set()
        executor.shutdown(timeout_sec=5.0)
        spinner.join(timeout=10.0)
        close = getattr(node, "close", None)
        if close is not None:
            close()
        node.destroy_node()
        if failure:
            logger.fatal(f"node stopped by an exception in a callback: {failure[0]!r}")
            return 1
    return 0
