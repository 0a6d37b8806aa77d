"""Go2 hardware driver node: the same topics as the simulated robot, over unitree_sdk2py low-level control.

Graph role (topics relative, see ``simdist_ros.topics``):
    in   ``joint_command`` (Float64MultiArray, normalised action (12,) in MuJoCo order, qos.DRIVER_COMMAND:
         reliable, newest only, no deadline, so any reliable publisher (the ROS default) is heard; the
         watchdog on command age, not a DDS deadline, is what protects the robot; a stamped command that
         carries its plan has its rows played, ``play_plan``, see ``go2_control``),
         ``estop`` (Bool: True latches damping)
    out  ``joint_states``, ``imu``, ``foot_contacts``, ``odom`` (qos.SENSOR; twist in the base frame from the
         ``velocity_estimator``: leg-kinematic odometry, ``simdist_core.sim.go2_leg_odometry``, or the same feet
         fused with every LowState's accelerometer, ``simdist_core.sim.go2_imu_leg_fusion``),
         ``executed_command`` (the action the motors actually got, after the safety clamps; published before the
         sensors it precedes and, while commands are fresh, stamped with the observation the command in force
         answered, as the simulated robot does, so the planner measures the delay), ``/diagnostics``; for RViz
         (``simdist_ros.robot_tf``): ``robot_description``, ``/tf`` (``odom`` -> ``base_link`` / ``base_yaw``
         from the odometry, leg joints from the measured positions), ``/tf_static`` (``imu``)
    srv  ``estop``, ``reset_estop``, ``stand_up``, ``lie_down`` (std_srvs/Trigger)

The 500 Hz control loop (``go2_control.ControlLoop``) runs in its own thread and never waits on ROS:
callbacks only hand new targets / requests to ``Go2Controller``. Low-level mode runs no Unitree state
estimator, so ``odom`` comes from the driver's own: ``LegOdometry`` (stance-leg kinematics + IMU orientation) or
``ImuLegFusion`` (those feet and the accelerometer in a Kalman filter; the SDK thread adds each LowState's reading).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import Imu, JointState
from simdist_core.robots import GO2
from simdist_core.sim import go2_constants as gc
from simdist_core.sim.go2_imu_leg_fusion import FusionConfig, ImuLegFusion, SpecificForceMean
from simdist_core.sim.go2_leg_odometry import EstimatorConfig, LegOdometry
from simdist_core.sim.go2_lowlevel import Go2LowLevel, LowLevelConfig
from simdist_ros.driver_inputs import DriverInputs
from simdist_ros.params import P, declare_table
from simdist_ros.robot_tf import RobotTf
from simdist_ros.runtime import run_node
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from go2_bringup.constants import joint_limits_rad
from go2_bringup.go2_control import ControlConfig, ControlLoop, Go2Controller, check_estop_buttons
from go2_bringup.go2_sdk import BridgeConfig, Go2SdkBridge
from go2_bringup.safety import Mode, SafetyConfig, SafetyController
from simdist_ros import msgs, qos, topics


@dataclass(frozen=True, kw_only=True)
class Go2DriverParams:
    """Runtime settings of the Go2 driver (names match the parameter rows)."""

    network_interface: str
    domain_id: int
    control_hz: float
    publish_hz: float
    connect_timeout_s: float
    kp: float
    kd: float
    damping_kd: float
    max_step_rad: float
    max_tracking_error_rad: float
    max_velocity_rad_s: float
    hold_timeout_s: float
    damp_timeout_s: float
    interpolation_s: float
    state_timeout_s: float
    stand_duration_s: float
    estop_buttons: tuple[str, ...]
    frame_id: str
    contact_threshold: float
    velocity_estimator: str
    publish_tf: bool
    play_plan: bool

    def __post_init__(self) -> None:
        if self.damp_timeout_s <= self.hold_timeout_s:
            raise ValueError(f"damp_timeout_s must be > hold_timeout_s, got {self.damp_timeout_s=}, "
                             f"{self.hold_timeout_s=}")
        check_estop_buttons(self.estop_buttons)
        if self.velocity_estimator not in VELOCITY_ESTIMATORS:
            raise ValueError(f"velocity_estimator must be one of {VELOCITY_ESTIMATORS}, "
                             f"got {self.velocity_estimator!r}")


VELOCITY_ESTIMATORS = ("leg_odometry", "imu_leg_fusion")


_LL = LowLevelConfig()
_SAFETY = SafetyConfig(q_min_rad=(-1.0,), q_max_rad=(1.0,))  # its defaults (the limits come from the MJCF)
ROWS = (
    P("network_interface", "", "Interface wired to the robot (e.g. eth0); empty = auto", read_only=True),
    P("domain_id", 0, "DDS domain of the robot", lo=0, hi=232, read_only=True),
    P("control_hz", 500.0, "LowCmd rate in Hz", lo=200.0, hi=1000.0, read_only=True),
    P("publish_hz", 50.0, "Sensor topic rate in Hz", lo=1.0, hi=500.0, read_only=True),
    P("connect_timeout_s", 5.0, "Seconds to wait for the first LowState", lo=0.1, hi=120.0, read_only=True),
    P("kp", _LL.kp_nm_per_rad, "Joint PD Kp in N m/rad (must match Go2LowLevel)", lo=1.0, hi=100.0, read_only=True),
    P("kd", _LL.kd_nms_per_rad, "Joint PD Kd in N m s/rad", lo=0.0, hi=10.0, read_only=True),
    P("damping_kd", 2.0, "Kd while damping (kp = 0)", lo=0.1, hi=10.0, read_only=True),
    P("max_step_rad", _SAFETY.max_step_rad, "Max change of a joint target per control tick", lo=0.001, hi=1.0,
      read_only=True),
    P("max_tracking_error_rad", _SAFETY.max_tracking_error_rad, "Max |target - measured| per joint", lo=0.01, hi=3.0,
      read_only=True),
    P("max_velocity_rad_s", 25.0, "Measured joint speed that latches the e-stop", lo=1.0, hi=60.0, read_only=True),
    P("hold_timeout_s", 0.1, "Command age after which the last target is held", lo=0.01, hi=5.0, read_only=True),
    P("damp_timeout_s", 0.5, "Command age after which the robot damps (latched)", lo=0.02, hi=10.0, read_only=True),
    P("interpolation_s", 0.0, "Blend time of a new command (0 = step, as in simulation)", lo=0.0, hi=0.2,
      read_only=True),
    P("state_timeout_s", 0.1, "LowState age that latches the e-stop", lo=0.01, hi=5.0, read_only=True),
    P("stand_duration_s", 2.0, "Length of stand-up / lie-down", lo=0.2, hi=10.0, read_only=True),
    P("estop_buttons", ("L2", "B"), "Remote buttons that latch the e-stop ([] disables)", read_only=True),
    P("frame_id", "base_link", "Base frame (imu, odom child frame)", read_only=True),
    P("contact_threshold", 20.0, "Foot force reading above which a foot is in stance (odometry)", lo=0.0, hi=1000.0,
      read_only=True),
    # imu_leg_fusion: with the shipped Go2 model on foam, leg odometry cost 1.97 m of 5.84 per 10 s and the fusion
    # none (emulated in the simulator, bench_results/GO2_IMU_LEG_FUSION.md).
    P("velocity_estimator", "imu_leg_fusion", "odom twist from imu_leg_fusion (IMU + legs) or leg_odometry",
      read_only=True),
    P("publish_tf", True, "Publish robot_description, /tf and /tf_static for RViz", read_only=True),
    P("play_plan", True, "Play the rows of a stamped plan-carrying command (else its action alone)", read_only=True),
)


class Go2DriverNode(Node):
    """Adapter between ROS topics/services and ``Go2Controller``."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("go2_driver", **kwargs)
        # Every setting is checked (dataclass __post_init__) before the node joins the robot's DDS domain.
        self.params = p = declare_table(self, ROWS, Go2DriverParams)
        lo, hi = joint_limits_rad()
        safety = SafetyController(SafetyConfig(
            q_min_rad=tuple(lo), q_max_rad=tuple(hi), max_step_rad=p.max_step_rad,
            max_tracking_error_rad=p.max_tracking_error_rad, max_velocity_rad_s=p.max_velocity_rad_s,
            hold_timeout_s=p.hold_timeout_s, damp_timeout_s=p.damp_timeout_s, kp=p.kp, kd=p.kd,
            damping_kd=p.damping_kd))
        control = ControlConfig(control_hz=p.control_hz, interpolation_s=p.interpolation_s,
                                state_timeout_s=p.state_timeout_s, stand_duration_s=p.stand_duration_s,
                                estop_buttons=p.estop_buttons, play_plan=p.play_plan,
                                max_plan_age_s=p.hold_timeout_s)
        self._imu = SpecificForceMean()  # every LowState's accelerometer, for ImuLegFusion
        on_state = (lambda state: self._imu.add(state.quat_wxyz, state.accel_m_s2)) \
            if p.velocity_estimator == "imu_leg_fusion" else None
        self.bridge = Go2SdkBridge(BridgeConfig(domain_id=p.domain_id, interface=p.network_interface or None),
                                   on_state=on_state)
        self.bridge.start()
        self.get_logger().info(f"waiting up to {p.connect_timeout_s} s for LowState (domain {p.domain_id}, "
                               f"interface {p.network_interface or 'auto'})")
        try:
            self.bridge.wait_for_state(p.connect_timeout_s)
        except Exception:
            self.bridge.close()
            raise
        lowlevel = Go2LowLevel(LowLevelConfig(kp_nm_per_rad=p.kp, kd_nms_per_rad=p.kd))
        self.controller = Go2Controller(control, self.bridge, safety, lowlevel)
        self.loop = ControlLoop(self.controller)
        threshold = p.contact_threshold
        self.odometry: LegOdometry | ImuLegFusion = (
            LegOdometry(EstimatorConfig(contact_threshold=threshold)) if p.velocity_estimator == "leg_odometry"
            else ImuLegFusion(FusionConfig(contact_threshold=threshold)))
        self._odom_last_s: float | None = None

        inputs = MutuallyExclusiveCallbackGroup()
        outputs = MutuallyExclusiveCallbackGroup()
        self.inputs = DriverInputs(self, GO2.action_dim, self.controller.set_action, self._mode,
                                   self.controller.estop, inputs)
        for name, handler in (("estop", self._srv_estop), ("reset_estop", self._srv_reset),
                              ("stand_up", self._srv_stand_up), ("lie_down", self._srv_lie_down)):
            self.create_service(Trigger, name, handler, callback_group=inputs)
        self._joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, qos.SENSOR)
        self._imu_pub = self.create_publisher(Imu, topics.IMU, qos.SENSOR)
        self._feet_pub = self.create_publisher(Float64MultiArray, topics.FOOT_CONTACTS, qos.SENSOR)
        self._odom_pub = self.create_publisher(Odometry, topics.ODOM, qos.SENSOR)
        self._exec_pub = self.create_publisher(Float64MultiArray, topics.EXECUTED_COMMAND,
                                               qos.executed(GO2.control_hz))
        self._diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        self._robot_tf = RobotTf(self, GO2.name) if p.publish_tf else None
        self.create_timer(1.0 / p.publish_hz, self._publish, callback_group=outputs)
        self.create_timer(1.0, self._diagnostics, callback_group=outputs)
        self.loop.start()
        self.get_logger().info("Go2 driver running: robot is DAMPED; call the stand_up service to stand")

    # ---- inputs (``DriverInputs``) and services -------------------------------------------------------------
    def _mode(self) -> str:
        """The safety mode now, for the log line of a command the controller ignored."""
        return self.controller.safety.mode(self.controller.clock()).value

    def _srv_estop(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.controller.estop("estop service")
        response.success, response.message = True, "e-stop latched: damping until reset_estop"
        return response

    def _srv_reset(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.controller.reset()
        response.success, response.message = True, "e-stop cleared; robot damped, call stand_up to resume"
        return response

    def _srv_stand_up(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = self.controller.stand_up()
        response.message = "standing up" if response.success else "refused: e-stop latched or no LowState"
        return response

    def _srv_lie_down(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = self.controller.lie_down()
        response.message = "lying down" if response.success else "refused: e-stop latched or no LowState"
        return response

    # ---- outputs ------------------------------------------------------------------------------------------
    def _publish(self) -> None:
        state = self.bridge.latest()
        if state is None or not state.is_finite():  # never publish (or integrate odometry from) a NaN reading
            return
        t_ns = self.get_clock().now().nanoseconds
        sent = self.controller.last_sent
        if sent is not None:  # before the sensors it precedes, so the encoder pairs it with them
            stamp = self.inputs.accepted_stamp_ns if sent.mode is Mode.ACTIVE else None
            self._exec_pub.publish(msgs.make_executed(self.controller.executed_action, stamp))
        self._joint_pub.publish(msgs.make_joint_state(gc.JOINT_NAMES, state.q_rad, state.dq_rad_s,
                                                      state.tau_est_nm, t_ns))
        self._imu_pub.publish(msgs.make_imu(state.quat_wxyz, state.gyro_rad_s, state.accel_m_s2, t_ns,
                                            self.params.frame_id))
        self._feet_pub.publish(msgs.make_float64_array(state.foot_force))
        dt = 0.0 if self._odom_last_s is None else state.receive_time_s - self._odom_last_s
        self._odom_last_s = state.receive_time_s
        args = (state.q_rad, state.dq_rad_s, state.gyro_rad_s, state.quat_wxyz, state.foot_force, max(dt, 0.0))
        if isinstance(self.odometry, ImuLegFusion):
            implausible = self.odometry.implausible_imu_periods
            vel = self.odometry.update(*args, self._imu.take())
            if self.odometry.implausible_imu_periods > implausible:
                self.get_logger().warning("IMU acceleration is not a gravity's (wrong units, dead or saturated "
                                          "sensor?): odom velocity from the legs alone", throttle_duration_sec=5.0)
        else:
            vel = self.odometry.update(*args)
        self._odom_pub.publish(msgs.make_odom(self.odometry.pos_m, state.quat_wxyz, vel, state.gyro_rad_s, t_ns,
                                              "odom", self.params.frame_id))
        if self._robot_tf is not None:
            self._robot_tf.publish(t_ns, state.q_rad, (self.odometry.pos_m, state.quat_wxyz))

    def _estimator_counts(self) -> dict[str, int]:
        """The fusion's stance-foot measurements, taken and rejected as slips (none for the leg odometry)."""
        if not isinstance(self.odometry, ImuLegFusion):
            return {}
        return {"slip_rejected_feet": self.odometry.rejected_feet, "slip_accepted_feet": self.odometry.accepted_feet,
                "imu_samples": self._imu.samples, "implausible_imu_periods": self.odometry.implausible_imu_periods}

    def _diagnostics(self) -> None:
        c = self.controller
        mode = c.last_sent.mode.value if c.last_sent is not None else "none"
        reason = c.safety.estop_reason
        level = "error" if reason else ("warn" if mode in ("hold", "damp") else "ok")
        values = {"mode": mode, "estop_reason": reason or "", "ticks": c.ticks, "loop_errors": self.loop.errors,
                  "loop_fail_safe_errors": self.loop.fail_safe_errors,
                  "loop_overruns": self.loop.overruns, "ignored_commands": c.safety.ignored_commands,
                  "bad_commands": self.inputs.bad_commands,
                  "incompatible_command_publishers": self.inputs.incompatible_publishers,
                  "fail_safe_commands": c.fail_safe_commands, "fail_safe_write_errors": c.fail_safe_write_errors,
                  **{f"plan_{k}": v for k, v in c.plan_counts.items()},
                  "velocity_estimator": self.params.velocity_estimator,
                  **self._estimator_counts(),
                  **{f"sdk_{k}": v for k, v in self.bridge.stats.items()},
                  **{f"clamped_{k}": v for k, v in c.clamp_counts.items()}}
        status = msgs.make_status("go2_driver", level, reason or mode, values, hardware_id="go2")
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def close(self) -> None:
        """Leave the robot damped (the last commands it gets are damping ones), then stop the loop and DDS."""
        self.controller.estop("driver shutting down")
        n = self.controller.ticks
        deadline = time.monotonic() + 0.5
        while self.controller.ticks < n + 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.loop.stop()
        self.bridge.close()


def main(args: list[str] | None = None) -> int:
    """Entry point ``go2_driver_node`` (``--ros-args -p network_interface:=eth0``).

    The shared ``run_node`` handles SIGINT/SIGTERM even when no timer fires, joins the node's threads via
    ``close()`` and only then shuts the context down.
    """
    return run_node(Go2DriverNode, args, threads=2)


if __name__ == "__main__":
    raise SystemExit(main())
