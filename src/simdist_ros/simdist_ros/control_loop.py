"""A fixed-rate driver loop thread that survives its tick (no ROS import: testable without a graph).

Shared by the Go2 and UR5e drivers: the hardware loop runs in its own thread and never waits on ROS.
A tick that raises latches the controller's e-stop (robot-facing code fails safe) and is counted and
logged, and the loop keeps running so the e-stop's damping/stop commands keep going out. A late tick
is counted as an overrun and the schedule restarts from now (no burst of catch-up ticks).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

LOG = logging.getLogger(__name__)


class _Rate(Protocol):
    control_hz: float


class LoopController(Protocol):
    """What the loop drives: a rate, one tick, and an e-stop latch."""

    @property
    def config(self) -> _Rate: ...  # noqa: D102

    def tick(self) -> None: ...  # noqa: D102

    def estop(self, reason: str) -> None: ...  # noqa: D102


class SafeControlLoop:
    """Calls ``controller.tick()`` at ``controller.config.control_hz`` in a daemon thread."""

    def __init__(self, controller: LoopController, name: str) -> None:
        self.controller = controller
        self.name = name
        self.errors = 0
        """Ticks that raised (each latched the e-stop)."""
        self.overruns = 0
        """Ticks that started later than their slot."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread."""
        self._stop.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        period = 1.0 / self.controller.config.control_hz
        next_s = time.monotonic()
        while not self._stop.is_set():
            try:
                self.controller.tick()
            except Exception as exc:  # noqa: BLE001 - the loop must survive; latch the e-stop and say why
                self.errors += 1
                self.controller.estop(f"control tick raised {exc!r}")
                LOG.exception("%s tick failed (%d so far)", self.name, self.errors)
            next_s += period
            delay = next_s - time.monotonic()
            if delay < 0:
                self.overruns += 1
                next_s = time.monotonic()  # do not burst to catch up
            else:
                self._stop.wait(delay)
