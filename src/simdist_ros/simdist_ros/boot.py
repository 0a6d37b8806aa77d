"""The first code a launched node process runs, before its (slow) imports of rclpy, torch and the model.

Why: a graph whose node fails at start-up is stopped with SIGINT while the other nodes may still be
importing. Python's default SIGINT handler would raise ``KeyboardInterrupt`` inside an import and the node
would die with -2 instead of stopping cleanly. Here SIGINT only records the request; ``run_node`` reads it
once its own handlers are installed and returns 0 without starting the node. SIGTERM keeps its default
(the launcher's escalation must still stop a process stuck in an import).
"""

import signal
import threading

stop_requested = threading.Event()
"""Set by SIGINT between process start and ``run_node`` installing its own handlers."""


def defer_stop_signal() -> None:
    """Record SIGINT instead of raising ``KeyboardInterrupt`` until the node's own handler takes over."""
    signal.signal(signal.SIGINT, lambda signum, frame: stop_requested.set())
