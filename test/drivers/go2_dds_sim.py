"""A MuJoCo Go2 that speaks the robot's DDS messages (rt/lowcmd in, rt/lowstate out), for driver tests.

It runs in its own process (``Go2DdsSim.start``; the SDK's DDS factory is one per process) on loopback
with a private domain. Physics is the Menagerie Go2 with its torque motors; the motor PD the real Go2
runs on its motor drivers is computed here from each LowCmd (``tau = kp (q* - q) + kd (dq* - dq) + tau_ff``,
mode 0 = motor off), in SDK motor order (FR, FL, RR, RL) mapped to MuJoCo order with go2_constants.

The test talks to it over a pipe: ``stats()`` returns what the robot received (CRC validity, gains and
targets of the last commands), ``set_remote``/``pause_state``/``corrupt_next_states``/``nan_next_states``
inject faults.
"""

from __future__ import annotations

import multiprocessing as mp
import struct
import time
from collections import deque

import numpy as np

HISTORY = 4000  # commands kept for stats()


def _build_model():
    import mujoco
    from simdist_core.sim.assets import go2_xml_path

    spec = mujoco.MjSpec.from_file(str(go2_xml_path()))
    floor = spec.worldbody.add_geom()
    floor.name = "floor"
    floor.type = mujoco.mjtGeom.mjGEOM_PLANE
    floor.size = [0, 0, 0.05]
    spec.add_sensor(type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu")
    model = spec.compile()
    return model


class _SimProcess:
    """The simulator inside its process: physics, the robot's motor PD, DDS I/O and the test pipe."""

    def __init__(self, conn, domain_id: int, state_decimation: int, start_pose: str) -> None:
        import mujoco
        from simdist_core.sim import go2_constants as gc
        from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher, ChannelSubscriber
        from unitree_sdk2py.idl.unitree_go.msg.dds_ import LowCmd_, LowState_
        from unitree_sdk2py.utils.crc import CRC

        self.gc, self.conn, self.decimation = gc, conn, state_decimation
        self.model = _build_model()
        self.data = mujoco.MjData(self.model)
        mujoco.mj_resetDataKeyframe(self.model, self.data, 0)
        if start_pose == "lying":
            self.data.qpos[2] = 0.12
            self.data.qpos[7:] = np.array([0.0, 1.25, -2.65] * 4)
        mujoco.mj_forward(self.model, self.data)
        self.qadr = np.array([self.model.joint(n).qposadr[0] for n in gc.JOINT_NAMES])
        self.vadr = np.array([self.model.joint(n).dofadr[0] for n in gc.JOINT_NAMES])
        self.act = np.array([self.model.actuator(n).id for n in gc.ACTUATOR_NAMES])
        self.foot_geoms = [self.model.geom(n).id for n in gc.FOOT_GEOM_NAMES]
        self.leg_mj_to_sdk = np.array([gc.LEGS.index(leg) for leg in gc.SDK_LEGS])
        ChannelFactoryInitialize(domain_id, "lo")
        self.crc = CRC()
        self.cmd = None  # (12, 6) SDK order: mode, q, dq, kp, kd, tau of the last valid LowCmd
        self.history: deque = deque(maxlen=HISTORY)
        self.counts = {"commands": 0, "crc_ok": 0, "crc_bad": 0, "states": 0}
        self.remote, self.paused, self.corrupt, self.nan_states, self.step = bytes(40), False, 0, 0, 0
        self.sub = ChannelSubscriber("rt/lowcmd", LowCmd_)
        self.sub.Init(self.on_cmd, 0)
        self.pub = ChannelPublisher("rt/lowstate", LowState_)
        self.pub.Init()

    def on_cmd(self, msg) -> None:
        ok = self.crc.Crc(msg) == msg.crc
        self.counts["commands"] += 1
        self.counts["crc_ok" if ok else "crc_bad"] += 1
        row = np.array([[m.mode, m.q, m.dq, m.kp, m.kd, m.tau] for m in msg.motor_cmd[:12]], dtype=np.float64)
        self.history.append((ok, row))
        if ok:
            self.cmd = row

    def serve_requests(self) -> bool:
        """Answer the test's requests; False when asked to stop."""
        while self.conn.poll():
            request, arg = self.conn.recv()
            if request == "stop":
                self.conn.send(dict(self.counts))
                return False
            if request == "stats":
                rows = list(self.history)
                self.conn.send({**self.counts, "crc_flags": np.array([r[0] for r in rows], dtype=bool),
                                "cmds": np.array([r[1] for r in rows]).reshape(-1, 12, 6),
                                "q_mj": self.data.qpos[self.qadr].copy(), "base_height_m": float(self.data.qpos[2]),
                                "base_quat_wxyz": self.data.qpos[3:7].copy(), "sim_time_s": float(self.data.time)})
                continue
            if request == "remote":
                self.remote = bytes(arg)
            elif request == "pause":
                self.paused = bool(arg)
            elif request == "corrupt":
                self.corrupt = int(arg)
            elif request == "nan":
                self.nan_states = int(arg)
            self.conn.send(True)
        return True

    def physics_step(self) -> None:
        """The motor PD of the real robot (SDK order -> MuJoCo order), then one physics step."""
        import mujoco

        tau = np.zeros(12)
        if self.cmd is not None:
            cmd = self.cmd[self.gc.SDK_TO_MUJOCO]  # (12, 6)
            q, dq = self.data.qpos[self.qadr], self.data.qvel[self.vadr]
            tau = (cmd[:, 0] != 0) * (cmd[:, 3] * (cmd[:, 1] - q) + cmd[:, 4] * (cmd[:, 2] - dq) + cmd[:, 5])
        self.data.ctrl[self.act] = np.clip(tau, -self.gc.TORQUE_LIMIT_NM, self.gc.TORQUE_LIMIT_NM)
        mujoco.mj_step(self.model, self.data)
        self.step += 1

    def publish_state(self) -> None:
        from unitree_sdk2py.idl.default import unitree_go_msg_dds__LowState_

        msg = unitree_go_msg_dds__LowState_()
        data = self.data
        q_mj, dq_mj = data.qpos[self.qadr].copy(), data.qvel[self.vadr]
        if self.nan_states > 0:  # a broken encoder: valid CRC, impossible value
            q_mj[0] = float("nan")
            self.nan_states -= 1
        for i, j in enumerate(self.gc.MUJOCO_TO_SDK):
            msg.motor_state[i].q = float(q_mj[j])
            msg.motor_state[i].dq = float(dq_mj[j])
            msg.motor_state[i].tau_est = float(data.actuator_force[self.act[j]])
        msg.imu_state.quaternion = [float(x) for x in data.qpos[3:7]]
        msg.imu_state.gyroscope = [float(x) for x in data.qvel[3:6]]
        msg.imu_state.accelerometer = [float(x) for x in data.sensordata[:3]]
        msg.foot_force = [int(min(_foot_force(self.model, data, self.foot_geoms[k]), 32767))
                          for k in self.leg_mj_to_sdk]
        msg.wireless_remote = list(self.remote)
        msg.tick = int(self.step * self.model.opt.timestep * 1000)
        msg.crc = self.crc.Crc(msg)
        if self.corrupt > 0:
            msg.crc ^= 0xFFFF
            self.corrupt -= 1
        self.pub.Write(msg)
        self.counts["states"] += 1

    def run(self) -> None:
        dt = self.model.opt.timestep
        next_s = time.monotonic()
        self.conn.send("ready")
        while self.serve_requests():
            self.physics_step()
            if self.step % self.decimation == 0 and not self.paused:
                self.publish_state()
            next_s += dt
            delay = next_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.1:
                next_s = time.monotonic()  # a loaded CI machine: run slower than real time, never burst


def _run(conn, domain_id: int, state_decimation: int, start_pose: str) -> None:
    _SimProcess(conn, domain_id, state_decimation, start_pose).run()


def _foot_force(model, data, geom_id: int) -> float:
    import mujoco

    force = np.zeros(6)
    total = 0.0
    for i in range(data.ncon):
        c = data.contact[i]
        if geom_id in (c.geom1, c.geom2):
            mujoco.mj_contactForce(model, data, i, force)
            total += float(np.linalg.norm(force[:3]))
    return total


def remote_bytes(*buttons: str) -> bytes:
    """A wireless_remote payload with ``buttons`` pressed (bit layout of go2_sdk.REMOTE_BUTTONS)."""
    from go2_bringup.go2_sdk import REMOTE_BUTTONS

    word = 0
    for name in buttons:
        word |= 1 << REMOTE_BUTTONS[name]
    return bytes(2) + struct.pack("<H", word) + bytes(36)


class Go2DdsSim:
    """Handle on a simulator process."""

    def __init__(self, domain_id: int, state_decimation: int = 2, start_pose: str = "standing") -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_run, args=(child, domain_id, state_decimation, start_pose), daemon=True)

    def start(self, timeout_s: float = 60.0) -> Go2DdsSim:
        self._proc.start()
        if not self._conn.poll(timeout_s):
            raise RuntimeError(f"Go2 DDS simulator did not start within {timeout_s} s")
        assert self._conn.recv() == "ready"
        return self

    def _ask(self, request: str, arg=None, timeout_s: float = 30.0):
        self._conn.send((request, arg))
        if not self._conn.poll(timeout_s):
            raise RuntimeError(f"Go2 DDS simulator did not answer {request!r}")
        return self._conn.recv()

    def stats(self) -> dict:
        return self._ask("stats")

    def set_remote(self, *buttons: str) -> None:
        self._ask("remote", remote_bytes(*buttons))

    def pause_state(self, paused: bool) -> None:
        self._ask("pause", paused)

    def corrupt_next_states(self, n: int) -> None:
        self._ask("corrupt", n)

    def nan_next_states(self, n: int) -> None:
        """The next ``n`` LowStates report NaN for one joint (with a valid CRC)."""
        self._ask("nan", n)

    def stop(self) -> None:
        if self._proc.is_alive():
            try:
                self._ask("stop", timeout_s=10.0)
            except (RuntimeError, BrokenPipeError, EOFError):
                pass
            self._proc.join(timeout=10.0)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=5.0)
