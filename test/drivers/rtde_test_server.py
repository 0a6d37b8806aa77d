"""A minimal RTDE server (UR Real-Time Data Exchange, protocol v2) for exercising ur_rtde's receive path.

Implements what ``rtde_receive.RTDEReceiveInterface`` needs: protocol-version negotiation ('V'),
controller version ('v'), output setup ('O', answered with the RTDE type of each requested variable),
start/pause ('S'/'P') and a stream of data packages ('U') at ``rate_hz``. It runs in its own process:
ur_rtde blocks while holding the GIL, so a server thread in the test process would never get to answer.

State is set over a pipe: joint positions, the protective-stop bit, and ``drop`` (close the connection).
No UR controller or RTDE emulator exists on the registries, so this is written for the tests from the
public RTDE guide; it is not a UR simulator (no control script, no dashboard server).
"""

from __future__ import annotations

import multiprocessing as mp
import select
import socket
import struct
import time

V, CONTROLLER_VERSION, SETUP_OUTPUTS, START, PAUSE, DATA = 86, 118, 79, 83, 80, 85

_VECTOR6D = ("target_q", "target_qd", "target_qdd", "target_current", "target_moment", "actual_q", "actual_qd",
             "actual_current", "joint_control_output", "actual_TCP_pose", "actual_TCP_speed", "actual_TCP_force",
             "target_TCP_pose", "target_TCP_speed", "joint_temperatures", "actual_joint_voltage", "ft_raw_wrench",
             "payload_inertia")
_TYPES = {**{n: "VECTOR6D" for n in _VECTOR6D},
          "actual_digital_input_bits": "UINT64", "actual_digital_output_bits": "UINT64",
          "robot_mode": "INT32", "safety_mode": "INT32", "joint_mode": "VECTOR6INT32",
          "actual_tool_accelerometer": "VECTOR3D", "payload_cog": "VECTOR3D",
          "runtime_state": "UINT32", "robot_status_bits": "UINT32", "safety_status_bits": "UINT32"}
_FORMATS = {"DOUBLE": ">d", "VECTOR6D": ">6d", "VECTOR3D": ">3d", "INT32": ">i", "UINT32": ">I", "UINT64": ">Q",
            "VECTOR6INT32": ">6i"}
PROTECTIVE_STOP_BIT = 2  # safety_status_bits: bit 2 = protective stopped


def rtde_type(name: str) -> str:
    if name in _TYPES:
        return _TYPES[name]
    if name.startswith("output_int_register_"):
        return "INT32"
    return "DOUBLE"  # timestamp, voltages, scalings, analog I/O, payload, output_double_register_*


def _packet(kind: int, payload: bytes = b"") -> bytes:
    return struct.pack(">HB", 3 + len(payload), kind) + payload


def _value(name: str, state: dict, t0: float):
    if name in ("actual_q", "target_q"):
        return state["q"]
    if name == "timestamp":
        return time.monotonic() - t0
    if name == "safety_status_bits":
        return (1 << PROTECTIVE_STOP_BIT) if state["protective_stop"] else 1
    if name == "robot_mode":
        return 7  # running
    if name == "safety_mode":
        return 3 if state["protective_stop"] else 1
    kind = rtde_type(name)
    return [0] * int(_FORMATS[kind][1]) if kind.startswith("VECTOR") else 0


def _read_packet(conn: socket.socket) -> tuple[int, bytes] | None:
    header = b""
    while len(header) < 3:
        chunk = conn.recv(3 - len(header))
        if not chunk:
            return None
        header += chunk
    size, kind = struct.unpack(">HB", header)
    payload = b""
    while len(payload) < size - 3:
        chunk = conn.recv(size - 3 - len(payload))
        if not chunk:
            return None
        payload += chunk
    return kind, payload


class _Server:
    """The RTDE server inside its process."""

    def __init__(self, pipe, host: str, port: int) -> None:
        self.pipe = pipe
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(4)
        self.state = {"q": [0.0] * 6, "protective_stop": False}
        self.clients: dict[socket.socket, list[str] | None] = {}  # socket -> output recipe (variable names)
        self.streaming: set[socket.socket] = set()
        self.t0 = time.monotonic()
        self.packages = 0

    def serve_pipe(self) -> bool:
        """Apply the test's requests; False when asked to stop."""
        while self.pipe.poll():
            request, arg = self.pipe.recv()
            if request == "stop":
                self.pipe.send(self.packages)
                return False
            if request == "drop":
                for client in list(self.clients):
                    client.close()
                self.clients.clear()
                self.streaming.clear()
            else:
                self.state[request] = arg
            self.pipe.send(True)
        return True

    def serve_sockets(self) -> None:
        readable, _, _ = select.select([self.listener, *self.clients], [], [], 0.0)
        for sock in readable:
            if sock is self.listener:
                self.clients[self.listener.accept()[0]] = None
                continue
            try:
                packet = _read_packet(sock)
            except OSError:
                packet = None
            if packet is None:
                self.clients.pop(sock, None)
                self.streaming.discard(sock)
                sock.close()
            else:
                self.answer(sock, *packet)

    def answer(self, sock: socket.socket, kind: int, payload: bytes) -> None:
        if kind == V:
            sock.sendall(_packet(V, b"\x01"))
        elif kind == CONTROLLER_VERSION:
            sock.sendall(_packet(CONTROLLER_VERSION, struct.pack(">IIII", 5, 11, 0, 0)))
        elif kind == SETUP_OUTPUTS:  # payload: double frequency, then comma-separated variable names
            names = [n for n in payload[8:].decode().split(",") if n]
            self.clients[sock] = names
            sock.sendall(_packet(SETUP_OUTPUTS, b"\x01" + ",".join(rtde_type(n) for n in names).encode()))
        elif kind == START:
            self.streaming.add(sock)
            sock.sendall(_packet(START, b"\x01"))
        elif kind == PAUSE:
            self.streaming.discard(sock)
            sock.sendall(_packet(PAUSE, b"\x01"))

    def stream(self) -> None:
        for sock in list(self.streaming):
            body = b"\x01" + b"".join(struct.pack(_FORMATS[rtde_type(n)], *_as_list(_value(n, self.state, self.t0)))
                                      for n in self.clients[sock])
            try:
                sock.sendall(_packet(DATA, body))
                self.packages += 1
            except OSError:
                self.streaming.discard(sock)


def _serve(pipe, host: str, port: int, rate_hz: float) -> None:
    server = _Server(pipe, host, port)
    pipe.send("ready")
    next_s = time.monotonic()
    while server.serve_pipe():
        server.serve_sockets()
        server.stream()
        next_s += 1.0 / rate_hz
        time.sleep(max(0.0, next_s - time.monotonic()))


def _as_list(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


class RtdeTestServer:
    """Handle on a server process."""

    def __init__(self, host: str, port: int = 30004, rate_hz: float = 125.0) -> None:
        ctx = mp.get_context("spawn")
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, host, port, rate_hz), daemon=True)

    def start(self) -> RtdeTestServer:
        self._proc.start()
        if not self._pipe.poll(30.0):
            raise RuntimeError("RTDE test server did not start")
        assert self._pipe.recv() == "ready"
        return self

    def set(self, key: str, value) -> None:
        self._pipe.send((key, value))
        assert self._pipe.poll(10.0)
        self._pipe.recv()

    def drop_connections(self) -> None:
        self.set("drop", None)

    def stop(self) -> None:
        if self._proc.is_alive():
            self._pipe.send(("stop", None))
            self._pipe.poll(5.0)
            self._proc.join(timeout=5.0)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=5.0)
