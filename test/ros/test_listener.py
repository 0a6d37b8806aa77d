"""The private listener that the demo and the graph benchmarks watch a running graph with."""

import os
import random

from simdist_ros.listener import Listener
from std_msgs.msg import String

from simdist_ros import qos


def test_listener_receives_from_another_context_and_closes_cleanly():
    topic = f"/t{os.getpid()}_listener_{random.randrange(10**6)}"
    talker, listener = Listener("test_talker"), Listener("test_listener")
    got: list[str] = []
    try:
        listener.subscribe(String, topic, lambda msg: got.append(msg.data), qos.RELIABLE)
        pub = talker.node.create_publisher(String, topic, qos.RELIABLE)
        for _ in range(200):  # discovery takes a moment; publish until the listener has something
            pub.publish(String(data="hello"))
            listener.spin(0.05)
            if got:
                break
        assert got and set(got) == {"hello"}
    finally:
        talker.close()
        listener.close()
    assert not listener.context.ok() and not talker.context.ok()
