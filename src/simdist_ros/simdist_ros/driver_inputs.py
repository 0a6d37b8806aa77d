"""A hardware driver's untrusted inputs: ``joint_command`` and the ``estop`` topic.

Both robot drivers (``go2_bringup``, ``ur5e_bringup``) take the same two topics and must treat them the same
way, so the checks live here once: anything on the DDS network can publish to a robot's topics, so a command
of the wrong length or with a non-finite value is dropped (the controller keeps the last good target and its
watchdog decides when that is too old), counted and logged; a publisher whose QoS the driver cannot take is
counted and logged too, because its commands would otherwise never arrive without a word; ``estop`` True
latches the driver's stop, False does nothing (clearing a stop takes the driver's ``reset_estop`` service).

The controller gets each command's action, the plan it carries and the age of the observation it answers, on the
node's clock (the clock its sensor topics are stamped with, so the stamp a planner copies back is comparable);
plan and age are None for a command without them. What it does with them is the controller's own (the Go2 plays
the plan, the UR5e repeats a stamped action on a period without a fresh command).
"""

from __future__ import annotations

from collections.abc import Callable

from rclpy.callback_groups import CallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from std_msgs.msg import Bool, Float64MultiArray

from simdist_ros import msgs, qos, topics


class DriverInputs:
    """Subscribes a driver node to ``joint_command`` and ``estop`` and counts what it had to refuse."""

    def __init__(self, node: Node, action_dim: int, set_action: Callable[..., bool],
                 mode: Callable[[], str], estop: Callable[[str], None], callback_group: CallbackGroup) -> None:
        """Subscribe now; every callback runs in ``callback_group``.

        Args:
            node: the driver node (its logger, its subscriptions).
            action_dim: the robot's action length; any other length is a bad command.
            set_action: ``set_action(action, plan, obs_age_s)`` hands a checked command to the controller (plan and
                age None for a command without them; no plan without a stamp); False if its mode ignores it.
            mode: the controller's mode, for the log line of an ignored command.
            estop: latches the controller's stop, with a reason.
            callback_group: the driver's input group (never the control loop's thread).
        """
        self._log = node.get_logger()
        self._clock = node.get_clock()
        self._action_dim, self._set_action, self._mode, self._estop = action_dim, set_action, mode, estop
        self.bad_commands = 0
        """Commands dropped for their shape or values."""
        self.accepted_stamp_ns: int | None = None
        """The observation the last accepted command answered (None: unstamped, or none accepted yet)."""
        self.incompatible_publishers = 0
        """QoS mismatch events: a ``joint_command`` publisher this subscription cannot hear."""
        node.create_subscription(Float64MultiArray, topics.COMMAND, self._on_command, qos.DRIVER_COMMAND,
                                 callback_group=callback_group,
                                 event_callbacks=SubscriptionEventCallbacks(incompatible_qos=self._on_incompatible))
        node.create_subscription(Bool, topics.ESTOP, self._on_estop, 10, callback_group=callback_group)

    def _on_command(self, msg: Float64MultiArray) -> None:
        try:
            action, plan = msgs.read_command(msg, self._action_dim)
            stamp_ns = msgs.command_stamp_ns(msg)
            age_s = None if stamp_ns is None else (self._clock.now().nanoseconds - stamp_ns) * 1e-9
            accepted = self._set_action(action, plan if age_s is not None else None, age_s)
        except ValueError as exc:  # MessageError is a ValueError, as is the controller's own check: hold the last
            self.bad_commands += 1  # good command
            self._log.error(f"bad joint_command dropped ({self.bad_commands} so far): {exc}",
                            throttle_duration_sec=1.0)
            return
        if accepted:
            self.accepted_stamp_ns = stamp_ns
        else:
            self._log.warning(f"joint_command ignored in mode {self._mode()}", throttle_duration_sec=1.0)

    def _on_incompatible(self, event: object) -> None:
        self.incompatible_publishers += 1
        self._log.error(f"a joint_command publisher offers QoS this driver cannot take ({event}); its commands "
                        "never arrive: publish reliable (the ROS default)")

    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self._estop("estop topic")
