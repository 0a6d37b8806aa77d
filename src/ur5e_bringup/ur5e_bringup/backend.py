"""What the UR5e driver needs from an arm, and the real one over ur_rtde.

``ArmBackend`` is the small interface the control loop uses; ``RtdeBackend`` talks to a UR controller
(RTDE on port 30004, control script upload), ``mujoco_backend.MujocoBackend`` is the simulated arm for
tests and sim. Joint order is the UR controller's, which is also MuJoCo's (``ur5e_constants.ARM_JOINTS``).

ur_rtde pitfall (measured): against a peer that accepts TCP but never speaks RTDE,
the interface constructors block forever, and they hold the GIL while doing so (measured: a worker
thread with a join timeout never gets control back). ``RtdeBackend.connect`` therefore first checks,
with plain socket timeouts, that the peer answers an RTDE protocol-version request and that the
dashboard server greets, and only then hands the address to ur_rtde.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


class BackendConnectError(ConnectionError):
    """The arm could not be reached; the message says where, how it failed and what to check."""


@dataclass(frozen=True)
class ArmState:
    """One reading of the arm (UR joint order, SI units)."""

    q_rad: np.ndarray
    """(6,) joint positions."""
    dq_rad_s: np.ndarray
    """(6,) joint velocities."""
    wrench: np.ndarray
    """(6,) force N and torque N m at the TCP in the base frame (UR's ``actual_TCP_force``)."""
    protective_stop: bool
    """The controller is in a protective (or emergency) stop: motion commands are ignored."""
    connected: bool
    """The link to the controller is up."""


class ArmBackend(Protocol):
    """The arm as the driver's control loop sees it."""

    def connect(self, timeout_s: float) -> None:
        """Open the link, bounded in time; raises ``BackendConnectError``."""

    def read_state(self) -> ArmState:
        """The newest state (non-blocking)."""

    def servo_j(self, q_rad: np.ndarray, speed: float, accel: float, dt_s: float, lookahead_s: float,
                gain: float) -> bool:
        """Stream one joint-space servo target (6,); False if the controller refused it."""

    def stop(self) -> None:
        """Stop servoing and decelerate to rest."""

    @property
    def protective_stop_active(self) -> bool:
        """Whether the controller is in a protective stop."""

    def close(self) -> None:
        """Release the link (safe to call twice)."""


RTDE_PORT = 30004
DASHBOARD_PORT = 29999
RTDE_REQUEST_PROTOCOL_VERSION = 86  # 'V'
RTDE_PROTOCOL_VERSION = 2


def rtde_preflight(host: str, timeout_s: float, port: int = RTDE_PORT) -> None:
    """Check, with socket timeouts, that ``host:port`` speaks RTDE before ur_rtde is handed the address.

    Sends RTDE_REQUEST_PROTOCOL_VERSION (v2) and waits for the matching reply. This exists because
    ur_rtde's constructors block forever, holding the GIL, against a silent peer, so no Python-side timeout
    could interrupt them.

    Raises:
        BackendConnectError: refused / unreachable (fast), or no RTDE reply within ``timeout_s``.
    """
    where = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(struct.pack(">HBH", 5, RTDE_REQUEST_PROTOCOL_VERSION, RTDE_PROTOCOL_VERSION))
            header = _recv_exactly(sock, 3)
            size, kind = struct.unpack(">HB", header)
            payload = _recv_exactly(sock, max(size - 3, 0))
    except TimeoutError as exc:
        raise BackendConnectError(
            f"RTDE at {where}: no reply within {timeout_s:.1f} s (a silent peer: wrong host, a firewall, or a "
            f"controller still booting). Check that the robot is powered on and in remote control mode."
        ) from exc
    except OSError as exc:
        raise BackendConnectError(
            f"RTDE at {where}: could not connect ({exc}). Check the robot's IP (pendant: Settings > Network), "
            f"the cable, and that the controller is on."
        ) from exc
    if kind != RTDE_REQUEST_PROTOCOL_VERSION or not payload or payload[0] != 1:
        raise BackendConnectError(f"RTDE at {where}: unexpected reply to the protocol-version request "
                                  f"(type {kind}, payload {payload!r}); is this a UR controller (PolyScope >= 3.3)?")


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionResetError("peer closed the connection")
        buf += chunk
    return buf


class RtdeBackend:
    """A real UR controller through ur_rtde (``pip install ur-rtde==1.6.5``)."""

    def __init__(self, host: str, frequency_hz: float = 500.0, read_only: bool = False) -> None:
        """A UR controller at ``host``.

        Args:
            host: controller IP.
            frequency_hz: RTDE rate (500 on e-Series).
            read_only: connect only the receive interface (monitoring; ``servo_j`` then refuses).
        """
        self.host = host
        self.frequency_hz = frequency_hz
        self.read_only = read_only
        self._receive: Any = None
        self._control: Any = None

    def connect(self, timeout_s: float) -> None:
        """Connect receive then control interface, each bounded by ``timeout_s``.

        Raises:
            ImportError: ur_rtde is not installed (names the pip package).
            BackendConnectError: refused, unreachable or silent peer (the message says which and what to check).
        """
        try:
            import rtde_control
            import rtde_receive
        except ImportError as exc:
            raise ImportError("the UR5e driver needs ur_rtde: pip install ur-rtde==1.6.5") from exc
        rtde_preflight(self.host, timeout_s)
        if not self.read_only:
            self._check_dashboard(timeout_s)
        try:
            self._receive = rtde_receive.RTDEReceiveInterface(self.host, self.frequency_hz)
            if not self.read_only:
                self._control = rtde_control.RTDEControlInterface(self.host, self.frequency_hz)
        except RuntimeError as exc:
            self.close()
            raise BackendConnectError(f"ur_rtde could not connect to {self.host}: {exc}") from exc

    def _check_dashboard(self, timeout_s: float) -> None:
        """The control interface also talks to the dashboard server; a real one greets at once."""
        try:
            with socket.create_connection((self.host, DASHBOARD_PORT), timeout=timeout_s) as sock:
                sock.settimeout(timeout_s)
                greeting = sock.recv(256)
        except OSError as exc:  # includes TimeoutError
            raise BackendConnectError(f"dashboard server at {self.host}:{DASHBOARD_PORT} did not greet within "
                                      f"{timeout_s:.1f} s ({exc!r}); RTDE control needs it (robot in remote mode?)"
                                      ) from exc
        if not greeting:
            raise BackendConnectError(f"dashboard server at {self.host}:{DASHBOARD_PORT} closed the connection")

    def read_state(self) -> ArmState:
        """The newest RTDE sample."""
        r = self._receive
        connected = bool(r.isConnected())
        stop = bool(r.isProtectiveStopped() or r.isEmergencyStopped())
        return ArmState(q_rad=np.asarray(r.getActualQ(), dtype=np.float64),
                        dq_rad_s=np.asarray(r.getActualQd(), dtype=np.float64),
                        wrench=np.asarray(r.getActualTCPForce(), dtype=np.float64),
                        protective_stop=stop, connected=connected)

    def servo_j(self, q_rad: np.ndarray, speed: float, accel: float, dt_s: float, lookahead_s: float,
                gain: float) -> bool:
        """Stream one servoJ target (False when read-only or not connected)."""
        if self._control is None:
            return False
        return bool(self._control.servoJ([float(v) for v in q_rad], speed, accel, dt_s, lookahead_s, gain))

    def stop(self) -> None:
        """ServoStop with a firm deceleration."""
        if self._control is not None:
            self._control.servoStop(2.0)

    @property
    def protective_stop_active(self) -> bool:
        """Whether the controller reports a protective or emergency stop."""
        return self._receive is not None and bool(self._receive.isProtectiveStopped())

    def close(self) -> None:
        """Stop the control script and disconnect both interfaces."""
        if self._control is not None:
            self._control.servoStop(2.0)
            self._control.stopScript()
            self._control.disconnect()
            self._control = None
        if self._receive is not None:
            self._receive.disconnect()
            self._receive = None
