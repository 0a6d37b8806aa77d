"""The first code a launched node process runs, before its (slow) imports of rclpy, torch and the model.

Why: a graph whose node fails at start-up is stopped with SIGINT while the other nodes may still be
importing. Python's default SIGINT handler would raise ``KeyboardInterrupt`` inside an import and the node
would die with -2 instead of stopping cleanly. Here SIGINT only records the request; ``run_node`` reads it
once its own handlers are installed and returns 0 without starting the node. SIGTERM keeps its default
(the launcher's escalation must still stop a process stuck in an import).

Two ways in: ``simdist launch`` starts each node with ``defer_stop_signal()`` before importing it; under
``ros2 launch`` / ``ros2 run`` the node's console script imports the node module directly, so every package
with nodes (``simdist_ros``, ``go2_bringup``, ``ur5e_bringup``) imports this module in its ``__init__``, which
Python runs before any node module: it defers SIGINT at import when the process *is* a node executable
(``argv[0]`` is ``.../lib/<package>/<name>_node``). In any other process (tests, notebooks, the CLI) importing
a node module leaves SIGINT alone.
"""

import signal
import sys
import threading
from pathlib import Path

stop_requested = threading.Event()
"""Set by SIGINT between process start and ``run_node`` installing its own handlers."""


def defer_stop_signal() -> None:
    """Record SIGINT instead of raising ``KeyboardInterrupt`` until the node's own handler takes over."""
    signal.signal(signal.SIGINT, lambda signum, frame: stop_requested.set())


def started_as_node_executable(argv0: str) -> bool:
    """Whether ``argv0`` is a node's console script (every node executable's name ends in ``_node``)."""
    return Path(argv0).name.removesuffix(".exe").endswith("_node")


_ARGV0 = sys.argv[0] if sys.argv else ""
if started_as_node_executable(_ARGV0) and threading.current_thread() is threading.main_thread():
    defer_stop_signal()
