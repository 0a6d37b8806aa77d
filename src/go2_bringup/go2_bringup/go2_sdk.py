"""Low-level Go2 I/O over unitree_sdk2py (CycloneDDS): rt/lowstate in, rt/lowcmd out. No ROS here.

The SDK speaks motor order FR, FL, RR, RL; everything this module returns or accepts is in MuJoCo order
(FL, FR, RL, RR), converted with the named permutations of ``simdist_core.sim.go2_constants``.

Three SDK pitfalls are handled here (each found by running the SDK):
- an exception raised inside a ``ChannelSubscriber`` handler kills the SDK's reader silently, so the
  handler catches everything, logs it (throttled) and counts it in ``stats``;
- CycloneDDS 0.10 (Go2 firmware, official SDK) and 11 (unitree-sdk2py-dimos wheels) do not discover each
  other, which looks exactly like a robot that is off: ``wait_for_state`` says so when nothing arrives;
- a CycloneDDS entity whose Python object is garbage-collected inside a listener callback calls
  ``dds_delete`` on the DDS receive thread, which then waits for its own callback to finish: a deadlock
  (seen in our tests as a hung process). Closed channels are therefore never released: ``close`` parks
  them in ``_RETIRED`` (a few KB each) and the handler of a closed bridge returns at once.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from go2_bringup.constants import foot_permutations, joint_permutations

LOG = logging.getLogger("go2_sdk")

LOWCMD_TOPIC = "rt/lowcmd"
LOWSTATE_TOPIC = "rt/lowstate"
NUM_MOTORS = 12
"""Leg motors; the messages carry 20 motor slots, the rest stay zero."""
LOWLEVEL_FLAG = 0xFF
"""``level_flag`` of a low-level command."""
HEAD = (0xFE, 0xEF)
"""Frame header of a Go2 low-level command."""
MOTOR_MODE_SERVO = 0x01
"""``MotorCmd_.mode``: PMSM servo (0 would switch the motor off)."""

# Buttons of the Unitree wireless remote: bit index into the little-endian 16-bit word at
# wireless_remote[2:4] (byte 2: R1, L1, start, select, R2, L2, F1, F2; byte 3: A, B, X, Y, up, right, down, left).
_RETIRED: list[object] = []
"""Channels of closed bridges, kept alive for the process lifetime (see the module docstring)."""

REMOTE_BUTTONS = {name: bit for bit, name in enumerate(
    ("R1", "L1", "start", "select", "R2", "L2", "F1", "F2", "A", "B", "X", "Y", "up", "right", "down", "left"))}


class Go2NotRespondingError(RuntimeError):
    """Nothing arrived on rt/lowstate within the timeout."""

    def __init__(self, timeout_s: float, domain_id: int, interface: str | None) -> None:
        super().__init__(
            f"no LowState on {LOWSTATE_TOPIC} within {timeout_s:.1f} s (DDS domain {domain_id}, interface "
            f"{interface or 'auto'}). Check: the robot is on and in low-level mode (sport mode released), the "
            f"network interface is the one wired to the robot (ip link; robot at 192.168.123.161), and the "
            f"CycloneDDS versions match: Go2 firmware speaks CycloneDDS 0.10.x, which does NOT discover "
            f"CycloneDDS 11 (the unitree-sdk2py-dimos wheels). On the robot PC install the supported stack "
            f"from src/go2_bringup/README.md.")


@dataclass(frozen=True)
class Go2State:
    """One LowState sample, in MuJoCo order and SI units."""

    receive_time_s: float
    """``time.monotonic()`` when the sample arrived."""
    tick: int
    """The robot's own millisecond tick counter."""
    q_rad: np.ndarray
    """(12,) joint positions."""
    dq_rad_s: np.ndarray
    """(12,) joint velocities."""
    tau_est_nm: np.ndarray
    """(12,) estimated joint torques."""
    quat_wxyz: np.ndarray
    """(4,) base orientation."""
    gyro_rad_s: np.ndarray
    """(3,) base angular velocity in the base frame."""
    accel_m_s2: np.ndarray
    """(3,) specific force in the base frame."""
    foot_force: np.ndarray
    """(4,) raw foot force sensor readings, feet FL, FR, RL, RR."""
    remote_buttons: int
    """16-bit button word of the wireless remote (``REMOTE_BUTTONS`` bit indices)."""

    def is_finite(self) -> bool:
        """Whether every joint and IMU value is finite (a NaN from a broken encoder or IMU makes it unusable)."""
        return all(bool(np.all(np.isfinite(a))) for a in (self.q_rad, self.dq_rad_s, self.quat_wxyz,
                                                          self.gyro_rad_s, self.accel_m_s2))


@dataclass(frozen=True, kw_only=True)
class BridgeConfig:
    """Where to find the robot."""

    domain_id: int = 0
    """DDS domain (the Go2 uses 0)."""
    interface: str | None = None
    """Network interface wired to the robot (e.g. ``eth0``), ``lo`` for the test simulator, None = auto."""
    check_state_crc: bool = True
    """Drop LowState samples whose CRC does not match (counted in ``stats['crc_errors']``)."""

    def __post_init__(self) -> None:
        if not 0 <= self.domain_id <= 232:
            raise ValueError(f"domain_id must be in [0, 232] (CycloneDDS), got {self.domain_id=}")


def remote_pressed(buttons: int, names: tuple[str, ...]) -> bool:
    """Whether every button in ``names`` is pressed in the remote's button word.

    Raises:
        KeyError: unknown button name (the message lists the valid ones).
    """
    for name in names:
        if name not in REMOTE_BUTTONS:
            raise KeyError(f"unknown remote button {name!r}; valid: {sorted(REMOTE_BUTTONS)}")
    return bool(names) and all(buttons >> REMOTE_BUTTONS[name] & 1 for name in names)


class Go2SdkBridge:
    """Reads rt/lowstate into ``Go2State`` and writes rt/lowcmd with a valid CRC."""

    def __init__(self, config: BridgeConfig, on_state: Callable[[Go2State], None] | None = None) -> None:
        self.config = config
        self._on_state = on_state
        self._mj_to_sdk, self._sdk_to_mj = joint_permutations()
        self._foot_sdk_to_mj = foot_permutations()[1]
        self._lock = threading.Lock()
        self._latest: Go2State | None = None
        self._arrived = threading.Event()
        self._last_error_log_s = -1e9
        self.stats = {"states": 0, "handler_errors": 0, "crc_errors": 0, "nonfinite_states": 0, "commands": 0,
                      "write_failures": 0}
        """Counters: states accepted, handler exceptions caught, CRC mismatches, states with NaN/inf joint or
        IMU values (counted on arrival, so a burst between two control ticks is not missed), commands
        written/failed."""
        self._publisher = None
        self._subscriber = None
        self._closed = False
        self._crc = None
        self._lowcmd_factory = None

    def start(self) -> None:
        """Join the DDS domain and open the channels (once per process: the SDK's factory is a singleton).

        Raises:
            ImportError: unitree_sdk2py is missing (names the pip package).
            RuntimeError: the DDS domain could not be created (bad interface name).
        """
        try:
            from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher, ChannelSubscriber
            from unitree_sdk2py.idl.default import unitree_go_msg_dds__LowCmd_
            from unitree_sdk2py.idl.unitree_go.msg.dds_ import LowCmd_, LowState_
            from unitree_sdk2py.utils.crc import CRC
        except ImportError as exc:
            raise ImportError("the Go2 driver needs unitree_sdk2py: pip install unitree-sdk2py-dimos==1.0.3 "
                              "(see src/go2_bringup/README.md for the real robot)") from exc
        try:
            ChannelFactoryInitialize(self.config.domain_id, self.config.interface)
        except Exception as exc:  # the SDK raises a bare Exception
            raise RuntimeError(f"could not join DDS domain {self.config.domain_id} on interface "
                               f"{self.config.interface!r}: {exc}; check the interface name (ip link)") from exc
        self._crc = CRC()
        self._lowcmd_factory = unitree_go_msg_dds__LowCmd_
        self._publisher = ChannelPublisher(LOWCMD_TOPIC, LowCmd_)
        self._publisher.Init()
        self._subscriber = ChannelSubscriber(LOWSTATE_TOPIC, LowState_)
        self._subscriber.Init(self._handle, 0)

    def close(self) -> None:
        """Stop using the channels. They are parked, not deleted (deleting DDS entities can deadlock)."""
        self._closed = True
        _RETIRED.extend(channel for channel in (self._subscriber, self._publisher) if channel is not None)
        self._subscriber = self._publisher = None

    # ---- state --------------------------------------------------------------------------------------------
    def _handle(self, msg: object) -> None:
        """SDK handler: never let an exception escape (it would kill the SDK's reader silently)."""
        if self._closed:
            return
        try:
            state = self._parse(msg)
            if state is None:
                return
            finite = state.is_finite()
            with self._lock:
                self._latest = state
                self.stats["states"] += 1
                self.stats["nonfinite_states"] += not finite
            self._arrived.set()
            if self._on_state is not None:
                self._on_state(state)
        except Exception as exc:  # noqa: BLE001 - the boundary: log, count, keep the reader alive
            self.stats["handler_errors"] += 1
            now = time.monotonic()
            if now - self._last_error_log_s > 1.0:
                self._last_error_log_s = now
                LOG.error("LowState handler failed (%d so far), reception continues: %r",
                          self.stats["handler_errors"], exc)

    def _parse(self, msg: object) -> Go2State | None:
        if self.config.check_state_crc and self._crc.Crc(msg) != msg.crc:
            self.stats["crc_errors"] += 1
            return None
        motors = msg.motor_state[:NUM_MOTORS]
        perm = self._sdk_to_mj

        def column(attr: str) -> np.ndarray:
            return np.array([getattr(m, attr) for m in motors], dtype=np.float64)[perm]

        imu = msg.imu_state
        buttons = struct.unpack("<H", bytes(msg.wireless_remote[2:4]))[0]
        return Go2State(
            receive_time_s=time.monotonic(),
            tick=int(msg.tick),
            q_rad=column("q"),
            dq_rad_s=column("dq"),
            tau_est_nm=column("tau_est"),
            quat_wxyz=np.array(imu.quaternion, dtype=np.float64),
            gyro_rad_s=np.array(imu.gyroscope, dtype=np.float64),
            accel_m_s2=np.array(imu.accelerometer, dtype=np.float64),
            foot_force=np.array(msg.foot_force, dtype=np.float64)[self._foot_sdk_to_mj],
            remote_buttons=int(buttons),
        )

    def latest(self) -> Go2State | None:
        """The newest accepted state, or None before the first one."""
        with self._lock:
            return self._latest

    def wait_for_state(self, timeout_s: float) -> Go2State:
        """Block until a first state arrives.

        Raises:
            Go2NotRespondingError: nothing within ``timeout_s`` (the message lists the likely causes).
        """
        if not self._arrived.wait(timeout_s):
            raise Go2NotRespondingError(timeout_s, self.config.domain_id, self.config.interface)
        return self.latest()

    # ---- command ------------------------------------------------------------------------------------------
    def write(self, q_rad: np.ndarray, kp: float, kd: float, tau_nm: np.ndarray | None = None) -> bool:
        """Send one low-level command: per-joint position target (12,) in MuJoCo order, gains, feed-forward.

        Returns:
            False if the SDK could not write (counted in ``stats['write_failures']``).
        """
        if self._publisher is None:
            self.stats["write_failures"] += 1
            return False
        cmd = self._lowcmd_factory()
        cmd.head[0], cmd.head[1] = HEAD
        cmd.level_flag = LOWLEVEL_FLAG
        cmd.gpio = 0
        q_sdk = np.asarray(q_rad, dtype=np.float64)[self._mj_to_sdk]
        tau_sdk = np.zeros(NUM_MOTORS) if tau_nm is None else np.asarray(tau_nm, dtype=np.float64)[self._mj_to_sdk]
        for i in range(NUM_MOTORS):
            motor = cmd.motor_cmd[i]
            motor.mode = MOTOR_MODE_SERVO
            motor.q = float(q_sdk[i])
            motor.dq = 0.0
            motor.kp = float(kp)
            motor.kd = float(kd)
            motor.tau = float(tau_sdk[i])
        cmd.crc = self._crc.Crc(cmd)
        ok = bool(self._publisher.Write(cmd))
        self.stats["commands" if ok else "write_failures"] += 1
        return ok
