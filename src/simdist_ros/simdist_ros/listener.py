"""A private rclpy node for tools that watch a running graph (demo, soak and graph benchmarks).

Each tool runs in the process that launched the graph and must not share rclpy's global context with
anything else it starts, so the listener owns a context, one node and a single-threaded executor (the
multi-threaded one busy-spins in this rclpy, see ``runtime``). Subscribe, spin for a while, close.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class Listener:
    """One node in its own rclpy context, spun by the caller."""

    def __init__(self, name: str) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def subscribe(self, msg_type: Any, topic: str, callback: Callable[[Any], None], qos: Any) -> None:  # noqa: ANN401
        """Call ``callback`` with every message of ``msg_type`` on ``topic``."""
        self.node.create_subscription(msg_type, topic, callback, qos)

    def spin(self, seconds: float, step_s: float = 0.05) -> None:
        """Handle messages for ``seconds`` of wall time (each wait at most ``step_s``)."""
        self.spin_until(time.monotonic() + seconds, step_s)

    def spin_until(self, t_end: float, step_s: float = 0.05) -> None:
        """Handle messages until ``time.monotonic()`` reaches ``t_end``."""
        while (left := t_end - time.monotonic()) > 0:
            self.executor.spin_once(timeout_sec=min(step_s, left))

    def close(self) -> None:
        """Destroy the node and shut the private context down."""
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
