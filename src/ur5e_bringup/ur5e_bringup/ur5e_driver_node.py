"""UR5e driver node: the simulated robot's topics over ur_rtde servoJ (or the MuJoCo arm for tests/sim).

Graph role (topics relative, see ``simdist_ros.topics``):
    in   ``joint_command`` (Float64MultiArray, normalised (dx, dy, dz, dyaw), qos.DRIVER_COMMAND: reliable,
         newest only, no deadline, so any reliable publisher is heard), ``estop`` (Bool)
    out  ``joint_states`` (UR joint order = MuJoCo order), ``odom`` (TCP pose in the base frame, child frame
         ``tcp``: the sim's TCP site through the same MuJoCo kinematics, as ``simdist_ros.sensors`` expects),
         ``wrench`` (WrenchStamped, TCP force in the base frame), ``executed_command`` (the action applied; zeros
         while holding or stopped; published before the sensors it precedes and, while commands are fresh,
         stamped with the observation the last command answered, so the planner measures the delay),
         ``/diagnostics``; for RViz (``simdist_ros.robot_tf``): ``robot_description``,
         ``/tf`` (arm joints from the measured positions; the gripper fingers are not measured and stay open) and
         ``/tf_static`` (flange ``tool0``, ``tcp``, and ``camera_optical_frame`` at the simulated scene camera's
         pose: a real camera's mounting differs, publish its calibration instead with ``publish_tf`` false)
    srv  ``estop``, ``reset_estop`` (clears the latch into ``disabled``), ``enable`` (accept commands again)
         (std_srvs/Trigger)

The 500 Hz servo loop (``ur5e_control.ArmLoop``) runs in its own thread; callbacks only hand it actions.
The camera is a separate node (``camera_node``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState
from simdist_core.robots import UR5E
from simdist_core.sim.ur5e import LowLevelConfig
from simdist_core.sim.ur5e_constants import ARM_JOINTS
from simdist_ros.driver_inputs import DriverInputs
from simdist_ros.params import P, declare_table
from simdist_ros.robot_tf import RobotTf
from simdist_ros.runtime import run_node
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from simdist_ros import msgs, qos, topics
from ur5e_bringup.backend import ArmBackend, RtdeBackend
from ur5e_bringup.ur5e_control import ArmControlConfig, ArmLoop, ArmMode, Ur5eController

BACKENDS = ("rtde", "mujoco")


@dataclass(frozen=True, kw_only=True)
class Ur5eDriverParams:
    """Runtime settings of the UR5e driver (names match the parameter rows)."""

    backend: str
    robot_ip: str
    rtde_frequency_hz: float
    connect_timeout_s: float
    control_hz: float
    publish_hz: float
    hold_timeout_s: float
    stop_timeout_s: float
    max_joint_speed_rad_s: float
    max_joint_accel_rad_s2: float
    servo_lookahead_s: float
    servo_gain: float
    ik_gain: float
    runaway_speed_rad_s: float
    frame_id: str
    publish_tf: bool
    repeat_missed: bool

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend=!r}")
        if self.backend == "rtde" and not self.robot_ip:
            raise ValueError("backend 'rtde' needs robot_ip (e.g. -p robot_ip:=192.168.1.10)")


_D = ArmControlConfig()
ROWS = (
    P("backend", "rtde", "Arm backend: rtde (real UR) or mujoco (simulated arm)", read_only=True),
    P("robot_ip", "", "UR controller IP (backend rtde)", read_only=True),
    P("rtde_frequency_hz", 500.0, "RTDE rate (500 on e-Series)", lo=10.0, hi=500.0, read_only=True),
    P("connect_timeout_s", 2.0, "Bound on each connection check", lo=0.1, hi=60.0, read_only=True),
    P("control_hz", _D.control_hz, "servoJ rate in Hz", lo=50.0, hi=500.0, read_only=True),
    P("publish_hz", 50.0, "Sensor topic rate in Hz", lo=1.0, hi=500.0, read_only=True),
    P("hold_timeout_s", _D.hold_timeout_s, "Command age -> hold the TCP target", lo=0.01, hi=5.0, read_only=True),
    P("stop_timeout_s", _D.stop_timeout_s, "Command age -> stop the arm", lo=0.02, hi=10.0, read_only=True),
    P("max_joint_speed_rad_s", _D.max_joint_speed_rad_s, "Joint speed limit", lo=0.01, hi=3.14, read_only=True),
    P("max_joint_accel_rad_s2", _D.max_joint_accel_rad_s2, "Joint accel limit", lo=0.1, hi=100.0, read_only=True),
    P("servo_lookahead_s", _D.servo_lookahead_s, "servoJ lookahead", lo=0.03, hi=0.2, read_only=True),
    P("servo_gain", _D.servo_gain, "servoJ gain", lo=100.0, hi=2000.0, read_only=True),
    P("ik_gain", 0.0, "IK step gain; 0 = backend default (rtde 1.0: servoJ tracks; mujoco: the sim's value)",
      lo=0.0, hi=5.0, read_only=True),
    P("runaway_speed_rad_s", _D.runaway_speed_rad_s, "Measured joint speed that latches the e-stop (> the speed "
      "limit)", lo=0.02, hi=3.14, read_only=True),
    P("frame_id", "base", "Frame of the wrench", read_only=True),
    P("publish_tf", True, "Publish robot_description, /tf and /tf_static for RViz", read_only=True),
    P("repeat_missed", _D.repeat_missed, "Repeat a stamped command's action on a 20 Hz period without a fresh one "
      "(as the simulated robot does)", read_only=True),
)


def make_backend(p: Ur5eDriverParams) -> ArmBackend:
    """The backend named by the parameters (MuJoCo is imported only when asked for)."""
    if p.backend == "mujoco":
        from ur5e_bringup.mujoco_backend import MujocoBackend

        return MujocoBackend()
    return RtdeBackend(p.robot_ip, p.rtde_frequency_hz)


def ik_gain(p: Ur5eDriverParams) -> float:
    """The IK step gain for the backend (see ``ur5e_control``: a real servoJ needs no lag compensation)."""
    if p.ik_gain > 0:
        return p.ik_gain
    return 1.0 if p.backend == "rtde" else LowLevelConfig().ik_gain


class Ur5eDriverNode(Node):
    """Adapter between ROS and ``Ur5eController``."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("ur5e_driver", **kwargs)
        self.params = p = declare_table(self, ROWS, Ur5eDriverParams)
        # Every setting is checked (dataclass __post_init__) before the node connects to the arm.
        control = ArmControlConfig(control_hz=p.control_hz, hold_timeout_s=p.hold_timeout_s,
                                   stop_timeout_s=p.stop_timeout_s, max_joint_speed_rad_s=p.max_joint_speed_rad_s,
                                   max_joint_accel_rad_s2=p.max_joint_accel_rad_s2,
                                   servo_lookahead_s=p.servo_lookahead_s, servo_gain=p.servo_gain,
                                   runaway_speed_rad_s=p.runaway_speed_rad_s, repeat_missed=p.repeat_missed)
        lowlevel = LowLevelConfig(ik_gain=ik_gain(p))
        self.backend = make_backend(p)
        self.get_logger().info(f"connecting to the arm (backend {p.backend} {p.robot_ip})")
        self.backend.connect(p.connect_timeout_s)
        self.controller = Ur5eController(control, self.backend, lowlevel)
        self.controller.tick()  # first state before any command arrives
        self.loop = ArmLoop(self.controller)
        inputs, outputs = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        self.inputs = DriverInputs(self, UR5E.action_dim, self.controller.set_action,
                                   lambda: self.controller.mode.value, self.controller.estop, inputs)
        self.create_service(Trigger, "estop", self._srv_estop, callback_group=inputs)
        self.create_service(Trigger, "reset_estop", self._srv_reset, callback_group=inputs)
        self.create_service(Trigger, "enable", self._srv_enable, callback_group=inputs)
        self._joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, qos.SENSOR)
        self._wrench_pub = self.create_publisher(WrenchStamped, topics.WRENCH, qos.SENSOR)
        self._odom_pub = self.create_publisher(Odometry, topics.ODOM, qos.SENSOR)
        self._exec_pub = self.create_publisher(Float64MultiArray, topics.EXECUTED_COMMAND,
                                               qos.executed(UR5E.control_hz))
        self._diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        self._robot_tf = RobotTf(self, UR5E.name) if p.publish_tf else None
        self.create_timer(1.0 / p.publish_hz, self._publish, callback_group=outputs)
        self.create_timer(1.0, self._diagnostics, callback_group=outputs)
        self.loop.start()

    def _srv_estop(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.controller.estop("estop service")
        response.success, response.message = True, "e-stop latched: arm stopped until reset_estop"
        return response

    def _srv_reset(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = self.controller.reset()
        response.message = ("e-stop cleared; the arm stays disabled until the enable service is called"
                            if response.success
                            else "refused: the controller still reports a protective stop (clear it on the pendant)")
        return response

    def _srv_enable(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = self.controller.enable()
        response.message = ("enabled: commands move the arm" if response.success
                            else "refused: a stop is latched; call reset_estop first")
        return response

    def _publish(self) -> None:
        state = self.controller.state
        if state is None or not self.controller.reading_ok:  # never restamp an old or impossible reading
            return
        t_ns = self.get_clock().now().nanoseconds
        # Before the sensors it precedes (the encoder pairs it with them); stamped while commands are fresh.
        stamp = self.inputs.accepted_stamp_ns if self.controller.mode is ArmMode.ACTIVE else None
        self._exec_pub.publish(msgs.make_executed(self.controller.executed_action, stamp))
        self._joint_pub.publish(msgs.make_joint_state(ARM_JOINTS, state.q_rad, state.dq_rad_s, [0.0] * 6, t_ns))
        self._wrench_pub.publish(msgs.make_wrench(state.wrench[:3], state.wrench[3:], t_ns, self.params.frame_id))
        zeros = np.zeros(3)
        self._odom_pub.publish(msgs.make_odom(self.controller.tcp_pos_m, self.controller.tcp_quat_wxyz, zeros, zeros,
                                              t_ns, self.params.frame_id, "tcp"))
        if self._robot_tf is not None:
            self._robot_tf.publish(t_ns, state.q_rad)

    def _diagnostics(self) -> None:
        c = self.controller
        level = "error" if c.mode in (ArmMode.ESTOP, ArmMode.PROTECTIVE_STOP) else (
            "warn" if c.mode in (ArmMode.HOLD, ArmMode.STOPPED, ArmMode.DISABLED) else "ok")
        values = {"mode": c.mode.value, "estop_reason": c.estop_reason or "", "ticks": c.ticks,
                  "loop_errors": self.loop.errors, "loop_overruns": self.loop.overruns,
                  "ignored_commands": c.ignored_commands, "bad_commands": self.inputs.bad_commands,
                  "servo_refusals": c.servo_refusals, "bad_states": c.bad_states,
                  "repeated_moves": c.repeated_moves,
                  "fail_safe_stops": c.fail_safe_stops, "fail_safe_errors": c.fail_safe_errors,
                  "loop_fail_safe_errors": self.loop.fail_safe_errors,
                  "incompatible_command_publishers": self.inputs.incompatible_publishers,
                  **{f"clamped_{k}": v for k, v in c.clamp_counts.items()}}
        status = msgs.make_status("ur5e_driver", level, c.estop_reason or c.mode.value, values, hardware_id="ur5e")
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def close(self) -> None:
        """Stop the servo loop, stop the arm and release the link."""
        self.loop.stop()
        self.backend.close()


def main(args: list[str] | None = None) -> int:
    """Entry point ``ur5e_driver_node`` (``--ros-args -p robot_ip:=192.168.1.10``).

    The shared ``run_node`` handles SIGINT/SIGTERM even when no timer fires, joins the node's threads via
    ``close()`` and only then shuts the context down.
    """
    return run_node(Ur5eDriverNode, args, threads=2)


if __name__ == "__main__":
    raise SystemExit(main())
