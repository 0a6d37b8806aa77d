"""RtdeBackend against real sockets: refused, silent peer, and ur_rtde's receive path against an RTDE test server.

No UR controller or URSim can run here, so the receive path talks to ``rtde_test_server`` (protocol v2,
written for these tests) in its own process; the control interface (script upload) is not exercised.
Each run uses its own loopback address (127.x.y.z, all routed to lo on Linux) so runs never collide.
"""

import os
import socket
import time

import numpy as np
import pytest
from rtde_test_server import RtdeTestServer
from ur5e_bringup.backend import BackendConnectError, RtdeBackend, rtde_preflight
from ur5e_bringup.ur5e_control import ArmControlConfig, ArmMode, Ur5eController

pytestmark = pytest.mark.timeout(120)

_PID = os.getpid()
REFUSED_HOST = f"127.{10 + _PID % 200}.{(_PID // 200) % 250}.1"
SILENT_HOST = f"127.{10 + _PID % 200}.{(_PID // 200) % 250}.2"
SERVER_HOST = f"127.{10 + _PID % 200}.{(_PID // 200) % 250}.3"


def _wait(predicate, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_refused_connection_is_reported():
    with pytest.raises(BackendConnectError, match="could not connect.*robot's IP"):
        RtdeBackend(REFUSED_HOST).connect(timeout_s=5.0)


def test_silent_peer_times_out_with_a_clear_error():
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((SILENT_HOST, 30004))
    listener.listen(4)  # accepts (kernel backlog) and never answers
    try:
        with pytest.raises(BackendConnectError, match="no reply within 0.5 s.*silent peer"):
            RtdeBackend(SILENT_HOST).connect(timeout_s=0.5)
    finally:
        listener.close()


@pytest.fixture
def server():
    srv = RtdeTestServer(SERVER_HOST).start()
    yield srv
    srv.stop()


def test_preflight_accepts_an_rtde_peer_and_full_connect_needs_the_dashboard(server):
    rtde_preflight(SERVER_HOST, 5.0)
    with pytest.raises(BackendConnectError, match="dashboard server"):
        RtdeBackend(SERVER_HOST).connect(timeout_s=0.5)


def test_receive_path_state_protective_stop_and_link_loss(server):
    q = [0.1, -1.2, 1.3, -0.4, 0.5, -0.6]
    server.set("q", q)
    backend = RtdeBackend(SERVER_HOST, frequency_hz=125.0, read_only=True)
    backend.connect(timeout_s=5.0)
    try:
        assert _wait(lambda: np.allclose(backend.read_state().q_rad, q))
        state = backend.read_state()
        assert state.connected and not state.protective_stop and state.wrench.shape == (6,)
        assert not backend.servo_j(np.zeros(6), 0, 0, 0.002, 0.1, 300), "read-only backends refuse motion"

        server.set("protective_stop", True)
        assert _wait(lambda: backend.protective_stop_active)
        assert backend.read_state().protective_stop
        server.set("protective_stop", False)
        assert _wait(lambda: not backend.protective_stop_active)

        controller = Ur5eController(ArmControlConfig(), backend)
        assert controller.tick() is ArmMode.IDLE
        server.drop_connections()
        assert _wait(lambda: not backend.read_state().connected)
        assert controller.tick() is ArmMode.ESTOP
        assert "connection" in controller.estop_reason
    finally:
        backend.close()
