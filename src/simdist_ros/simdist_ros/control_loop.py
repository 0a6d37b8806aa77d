"""A fixed-rate driver loop thread that survives its tick (no ROS import: testable without a graph).

Shared by the Go2 and UR5e drivers: the hardware loop runs in its own thread and never waits on ROS.
A tick that raises, once or on every tick, is followed at once by the controller's ``fail_safe``: a
path that uses nothing the normal tick uses but the e-stop latch and the raw robot link, catches
everything, and sends the robot its safe command (Go2: damping; UR5e: a stop). Latching the e-stop
alone was not enough: a tick that raises before it writes (a mistyped e-stop button name raised
KeyError on every tick) left the robot with no command at all. Errors are counted and logged
(the first at once, then at most once a second with the count). A late tick is counted as an
overrun and the schedule restarts from now (no burst of catch-up ticks).
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
    """What the loop drives: a rate, one tick, and a fail-safe that never raises."""

    @property
    def config(self) -> _Rate: ...  # noqa: D102

    def tick(self) -> object: ...  # noqa: D102

    def fail_safe(self, reason: str) -> None: ...  # noqa: D102


class SafeControlLoop:
    """Calls ``controller.tick()`` at ``controller.config.control_hz`` in a daemon thread (see the module)."""

    def __init__(self, controller: LoopController, name: str) -> None:
        self.controller = controller
        self.name = name
        self.errors = 0
        """Ticks that raised (each followed by ``fail_safe``)."""
        self.fail_safe_errors = 0
        """``fail_safe`` calls that raised anyway (a broken controller; counted, never propagated)."""
        self.overruns = 0
        """Ticks that started later than their slot."""
        self._next_log_s = 0.0
        self._unlogged = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread."""
        self._stop.set()
        self._thread.join(timeout=2.0)

    def step(self) -> bool:
        """One guarded tick: ``tick()``, or ``fail_safe`` if it raised. Returns False when the tick raised."""
        try:
            self.controller.tick()
            return True
        except Exception as exc:  # noqa: BLE001 - the loop must survive and the robot must get its safe command
            self.errors += 1
            reason = f"control tick raised {exc!r}"
            try:
                self.controller.fail_safe(reason)
            except Exception:  # noqa: BLE001 - fail_safe must not raise; if it does, count it and keep looping
                self.fail_safe_errors += 1
            self._log(reason)
            return False

    def _log(self, reason: str) -> None:
        now = time.monotonic()
        if now < self._next_log_s:
            self._unlogged += 1
            return
        self._next_log_s = now + 1.0
        LOG.error("%s tick failed (%d so far, %d not logged since the last line); fail-safe sent: %s",
                  self.name, self.errors, self._unlogged, reason, exc_info=self._unlogged == 0 and self.errors == 1)
        self._unlogged = 0

    def _run(self) -> None:
        period = 1.0 / self.controller.config.control_hz
        next_s = time.monotonic()
        while not self._stop.is_set():
            self.step()
            next_s += period
            delay = next_s - time.monotonic()
            if delay < 0:
                self.overruns += 1
                next_s = time.monotonic()  # do not burst to catch up
            else:
                self._stop.wait(delay)
