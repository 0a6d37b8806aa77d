"""The generated keystore in a DDS with the security plugins: enforced grants, encrypted traffic, no strangers.

Skips where the plugins are absent (the pip wheels' Fast DDS), with the probe's reason; the Docker build runs
it with SIMDIST_REQUIRE_DDS_SECURITY=1, where a skip would be a failure.
"""

import os
import subprocess
import sys
import time

import pytest
import rclpy
from _security import make_keystore, skip_or_fail
from rclpy.context import Context
from simdist_ros.secure_launch import security_environment, security_probe
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger

from simdist_ros import qos, topics

pytestmark = pytest.mark.timeout(300)
DOMAIN_ID = int(os.environ.get("ROS_DOMAIN_ID") or 0)
_STRANGER = """
import time, rclpy
from std_msgs.msg import Float64MultiArray
rclpy.init()
node = rclpy.create_node("stranger")
pub = node.create_publisher(Float64MultiArray, "joint_command", 10)
end = time.monotonic() + 10.0  # on an open domain the driver's subscription is found within a second or two
while pub.get_subscription_count() == 0 and time.monotonic() < end:
    time.sleep(0.1)
matched = pub.get_subscription_count() > 0
for _ in range(40):
    pub.publish(Float64MultiArray(data=[9.0] * 12))
    time.sleep(0.05)
print(f"published matched={matched}", flush=True)
"""


@pytest.fixture(scope="module")
def keystore(tmp_path_factory):
    path = make_keystore(tmp_path_factory.mktemp("ks"), "go2")
    reason = security_probe(path, os.environ)
    if reason is not None:
        skip_or_fail(reason)
    return path


@pytest.fixture
def secure_env(keystore, monkeypatch):
    for key, value in security_environment(keystore).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ROS_SECURITY_ENCLAVE_OVERRIDE", raising=False)
    return keystore


class Enclave:
    """One rclpy context in enclave ``/simdist/<name>`` with one node of that name (its grant's node services)."""

    def __init__(self, name, node_name=None):
        self.context = Context()
        rclpy.init(context=self.context, domain_id=DOMAIN_ID, args=["--ros-args", "--enclave", f"/simdist/{name}"])
        self.node = rclpy.create_node(node_name or name, context=self.context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def _spin_until(enclaves, predicate, timeout_s=60.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not predicate():
        for e in enclaves:
            e.executor.spin_once(timeout_sec=0.01)
    return predicate()


def test_grants_are_enforced_and_strangers_are_not_heard(secure_env):
    planner, driver = Enclave("planner"), Enclave("go2_driver")
    # ros2cli's hidden node names are what the operator's grant names (access_policy.ROS_CLI_NODES).
    operator = Enclave("operator", node_name="_ros2cli_test_operator")
    everyone = (planner, driver, operator)
    try:
        received, resets = [], []

        def reset(_request, response):
            resets.append(1)
            response.success = True
            return response

        driver.node.create_subscription(Float64MultiArray, topics.COMMAND, received.append, qos.DRIVER_COMMAND)
        driver.node.create_service(Trigger, "reset_estop", reset)
        command = planner.node.create_publisher(Float64MultiArray, topics.COMMAND, qos.command(50.0))
        assert _spin_until(everyone, lambda: command.get_subscription_count() > 0), "planner never met the driver"
        command.publish(Float64MultiArray(data=[0.1] * 12))
        assert _spin_until(everyone, lambda: received), "an allowed, authenticated command did not arrive"

        client = operator.node.create_client(Trigger, "reset_estop")
        assert _spin_until(everyone, client.service_is_ready)
        future = client.call_async(Trigger.Request())
        assert _spin_until(everyone, future.done) and future.result().success and resets == [1]

        # A participant without an identity (security off) publishes commands: the secure domain never hears them.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROS_SECURITY_")}
        before = len(received)
        stranger = subprocess.Popen([sys.executable, "-c", _STRANGER], env=env, stdout=subprocess.PIPE, text=True)
        _spin_until(everyone, lambda: stranger.poll() is not None, timeout_s=120.0)
        assert stranger.wait() == 0 and "published matched=False" in stranger.stdout.read(), "it saw the driver"
        assert len(received) == before, "an unauthenticated participant's command reached the driver"

        # Outside a grant, creating the endpoint fails under Enforce (checked last: a refused endpoint leaves
        # nothing behind that the exchanges above could depend on).
        with pytest.raises(RuntimeError):
            planner.node.create_publisher(String, topics.MODEL_UPDATE, qos.ANNOUNCE)  # only the finetuner
        with pytest.raises(RuntimeError):
            driver.node.create_publisher(Float64MultiArray, topics.COMMAND, 1)  # only the planner
        with pytest.raises(RuntimeError):
            planner.node.create_client(Trigger, "reset_estop")  # only the operator
    finally:
        for e in everyone:
            e.close()


def test_an_enclave_missing_from_the_keystore_cannot_start(secure_env):
    with pytest.raises(RuntimeError, match="SECURITY ERROR"):
        Enclave("not_in_the_policy")
