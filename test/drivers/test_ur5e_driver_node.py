"""The UR5e driver node in a real rclpy graph with the MuJoCo arm backend: commands (default QoS, NaN, wrong
length), state, e-stop, reset into disabled and the explicit enable."""

import threading
import time

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from simdist_core.sim.ur5e_constants import ARM_JOINTS
from simdist_ros.runtime import make_executor
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger
from ur5e_bringup.ur5e_control import ArmMode
from ur5e_bringup.ur5e_driver_node import Ur5eDriverNode

from simdist_ros import msgs, qos, topics

pytestmark = pytest.mark.timeout(180)


def _wait(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def _call(peer, name):
    client = peer.create_client(Trigger, name)
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(Trigger.Request())
    assert _wait(future.done)
    return future.result()


def test_rtde_backend_without_ip_is_a_clear_parameter_error():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(ValueError, match="robot_ip"):
            Ur5eDriverNode(context=context)
        with pytest.raises(ValueError, match="runaway_speed_rad_s must be > max_joint_speed_rad_s"):
            Ur5eDriverNode(context=context, parameter_overrides=[
                Parameter("backend", value="mujoco"), Parameter("max_joint_speed_rad_s", value=2.0),
                Parameter("runaway_speed_rad_s", value=1.0)])
    finally:
        rclpy.shutdown(context=context)


def test_driver_node_with_the_mujoco_arm():
    context = rclpy.Context()
    rclpy.init(context=context)
    driver = Ur5eDriverNode(context=context, parameter_overrides=[Parameter("backend", value="mujoco"),
                                                                  Parameter("control_hz", value=250.0)])
    peer = rclpy.create_node("peer", context=context)
    executor = make_executor(context=context)
    executor.add_node(driver)
    executor.add_node(peer)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        joints, wrenches, executed, odoms = [], [], [], []
        peer.create_subscription(Odometry, topics.ODOM, odoms.append, qos.SENSOR)
        peer.create_subscription(JointState, topics.JOINT_STATES, joints.append, qos.SENSOR)
        peer.create_subscription(WrenchStamped, topics.WRENCH, wrenches.append, qos.SENSOR)
        executed_stamps = []
        peer.create_subscription(Float64MultiArray, topics.EXECUTED_COMMAND, lambda m: executed.append(m.data),
                                 qos.command(20.0))
        peer.create_subscription(Float64MultiArray, topics.EXECUTED_COMMAND,
                                 lambda m: executed_stamps.append(msgs.command_stamp_ns(m)), qos.command(20.0))
        # A publisher with default QoS (as `ros2 topic pub` or a teleop tool makes): the driver must hear it.
        # Regression: the driver requested a deadline, which a default publisher does not offer: nothing arrived.
        cmd_pub = peer.create_publisher(Float64MultiArray, topics.COMMAND, QoSProfile(depth=10))
        estop_pub = peer.create_publisher(Bool, topics.ESTOP, 10)
        assert _wait(lambda: len(joints) >= 3 and len(wrenches) >= 3)
        q0, _, _ = msgs.joint_state_to_arrays(joints[-1], ARM_JOINTS)
        action = [0.0, 0.0, 1.0, 0.0]  # up
        for _ in range(40):
            cmd_pub.publish(Float64MultiArray(data=action))
            time.sleep(0.05)
        assert any(np.allclose(e, action) for e in executed)
        q1, _, _ = msgs.joint_state_to_arrays(joints[-1], ARM_JOINTS)
        assert np.max(np.abs(q1 - q0)) > 0.01, "the arm moved under the commands"
        assert not any(executed_stamps), "an unstamped command gives an unstamped executed_command"
        # A planner's command, stamped with the observation it answers and carrying its plan: the arm applies its
        # action alone (each action is one incremental move), and executed_command echoes the stamp.
        down = [0.0, 0.0, -0.5, 0.0]
        plan = np.array([down, [1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
        stamp_ns = msgs.stamp_to_ns(joints[-1].header.stamp)
        for _ in range(10):
            cmd_pub.publish(msgs.make_command(np.array(down), stamp_ns, plan))
            time.sleep(0.05)
        assert _wait(lambda: stamp_ns in executed_stamps)
        assert np.allclose(executed[executed_stamps.index(stamp_ns)], down)
        # Once they stop, the last stamped action moves the target again on the missed periods, then the arm holds.
        assert _wait(lambda: driver.controller.repeated_moves >= 1 and driver.controller.mode is not ArmMode.ACTIVE)
        # NaN and wrong-length commands are dropped and counted; the arm keeps its mode.
        for i, bad in enumerate(([0.0, float("nan"), 0.0, 0.0], [0.0] * 3, [0.0] * 12), start=1):
            cmd_pub.publish(Float64MultiArray(data=bad))  # one at a time: the driver keeps only the newest
            assert _wait(lambda i=i: driver.inputs.bad_commands == i), bad
        assert driver.controller.mode in (ArmMode.ACTIVE, ArmMode.HOLD, ArmMode.STOPPED)
        # A best-effort publisher cannot reach a reliable reader: counted and logged, not silent.
        peer.create_publisher(Float64MultiArray, topics.COMMAND, qos.SENSOR)
        assert _wait(lambda: driver.inputs.incompatible_publishers >= 1)

        # odom carries the TCP pose the encoder reads: the sim's tcp site through the same kinematics.
        assert odoms and odoms[-1].child_frame_id == "tcp"
        tcp_pos, _, _, _ = msgs.odom_to_arrays(odoms[-1])
        sim = driver.backend.sim
        np.testing.assert_allclose(tcp_pos, sim.data.site_xpos[sim.lowlevel.site_id], atol=0.01)

        estop_pub.publish(Bool(data=True))
        assert _wait(lambda: driver.controller.mode is ArmMode.ESTOP)
        cmd_pub.publish(Float64MultiArray(data=action))
        assert _wait(lambda: driver.controller.ignored_commands >= 1)
        assert _call(peer, "reset_estop").success
        assert _wait(lambda: driver.controller.mode is ArmMode.DISABLED), "reset alone never re-enables"
        ignored = driver.controller.ignored_commands
        cmd_pub.publish(Float64MultiArray(data=action))
        assert _wait(lambda: driver.controller.ignored_commands > ignored)
        assert _call(peer, "enable").success
        assert _wait(lambda: driver.controller.mode is ArmMode.IDLE)
    finally:
        driver.close()
        executor.shutdown()
        thread.join(timeout=10)
        driver.destroy_node()
        peer.destroy_node()
        rclpy.shutdown(context=context)
