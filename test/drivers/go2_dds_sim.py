"""A MuJoCo Go2 that speaks the robot's DDS messages (rt/lowcmd in, rt/lowstate out), for driver tests.

It runs in its own process (``Go2DdsSim.start``; the SDK's DDS factory is one per process) on loopback
with a private domain. Physics is the Menagerie Go2 with its torque motors; the motor PD the real Go2
runs on its motor drivers is computed here from each LowCmd (``tau = kp (q* - q) + kd (dq* - dq) + tau_ff``,
mode 0 = motor off), in SDK motor order (FR, FL, RR, RL) mapped to MuJoCo order with go2_constants.

The test talks to it over a pipe: ``stats()`` returns what the robot received (CRC validity, gains and
targets of the last commands), ``set_remote``/``pause_state``/``corrupt_next_states`` inject faults.
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


def _run(conn, domain_id: int, state_decimation: int, start_pose: str) -> None:  # noqa: C901 - one test loop
    import mujoco
    from simdist_core.sim import go2_constants as gc
    from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher, ChannelSubscriber
    from unitree_sdk2py.idl.default import unitree_go_msg_dds__LowState_
    from unitree_sdk2py.idl.unitree_go.msg.dds_ import LowCmd_, LowState_
    from unitree_sdk2py.utils.crc import CRC

    model = _build_model()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    if start_pose == "lying":
        data.qpos[2] = 0.12
        data.qpos[7:] = np.array([0.0, 1.25, -2.65] * 4)
    mujoco.mj_forward(model, data)
    qadr = np.array([model.joint(n).qposadr[0] for n in gc.JOINT_NAMES])
    vadr = np.array([model.joint(n).dofadr[0] for n in gc.JOINT_NAMES])
    act = np.array([model.actuator(n).id for n in gc.ACTUATOR_NAMES])
    foot_geoms = [model.geom(n).id for n in gc.FOOT_GEOM_NAMES]
    leg_mj_to_sdk = np.array([gc.LEGS.index(leg) for leg in gc.SDK_LEGS])

    ChannelFactoryInitialize(domain_id, "lo")
    crc = CRC()
    latest = {"cmd": None}
    history: deque = deque(maxlen=HISTORY)
    counts = {"commands": 0, "crc_ok": 0, "crc_bad": 0, "states": 0}

    def on_cmd(msg: LowCmd_) -> None:
        ok = crc.Crc(msg) == msg.crc
        counts["commands"] += 1
        counts["crc_ok" if ok else "crc_bad"] += 1
        motors = msg.motor_cmd[:12]
        row = np.array([[m.mode, m.q, m.dq, m.kp, m.kd, m.tau] for m in motors], dtype=np.float64)  # (12, 6) SDK
        history.append((ok, row))
        if ok:
            latest["cmd"] = row

    sub = ChannelSubscriber("rt/lowcmd", LowCmd_)
    sub.Init(on_cmd, 0)
    pub = ChannelPublisher("rt/lowstate", LowState_)
    pub.Init()
    remote = bytes(40)
    paused = False
    corrupt = 0
    dt = model.opt.timestep
    next_s = time.monotonic()
    step = 0
    conn.send("ready")
    while True:
        while conn.poll():
            request, arg = conn.recv()
            if request == "stop":
                conn.send(dict(counts))
                return
            if request == "stats":
                rows = list(history)
                conn.send({**counts,
                           "crc_flags": np.array([r[0] for r in rows], dtype=bool),
                           "cmds": np.array([r[1] for r in rows]).reshape(-1, 12, 6),
                           "q_mj": data.qpos[qadr].copy(),
                           "base_height_m": float(data.qpos[2])})
            elif request == "remote":
                remote = bytes(arg)
                conn.send(True)
            elif request == "pause":
                paused = bool(arg)
                conn.send(True)
            elif request == "corrupt":
                corrupt = int(arg)
                conn.send(True)
        # The motor PD of the real robot, in SDK order -> MuJoCo order.
        cmd = latest["cmd"]
        tau = np.zeros(12)
        if cmd is not None:
            cmd_mj = cmd[gc.SDK_TO_MUJOCO]  # (12, 6)
            q, dq = data.qpos[qadr], data.qvel[vadr]
            on = cmd_mj[:, 0] != 0
            tau = on * (cmd_mj[:, 3] * (cmd_mj[:, 1] - q) + cmd_mj[:, 4] * (cmd_mj[:, 2] - dq) + cmd_mj[:, 5])
        data.ctrl[act] = np.clip(tau, -gc.TORQUE_LIMIT_NM, gc.TORQUE_LIMIT_NM)
        mujoco.mj_step(model, data)
        step += 1
        if step % state_decimation == 0 and not paused:
            msg = unitree_go_msg_dds__LowState_()
            q_mj, dq_mj = data.qpos[qadr], data.qvel[vadr]
            for i, j in enumerate(gc.MUJOCO_TO_SDK):
                msg.motor_state[i].q = float(q_mj[j])
                msg.motor_state[i].dq = float(dq_mj[j])
                msg.motor_state[i].tau_est = float(data.actuator_force[act[j]])
            msg.imu_state.quaternion = [float(x) for x in data.qpos[3:7]]
            msg.imu_state.gyroscope = [float(x) for x in data.qvel[3:6]]
            msg.imu_state.accelerometer = [float(x) for x in data.sensordata[:3]]
            msg.foot_force = [int(min(_foot_force(model, data, foot_geoms[k]), 32767)) for k in leg_mj_to_sdk]
            msg.wireless_remote = list(remote)
            msg.tick = int(step * dt * 1000)
            msg.crc = crc.Crc(msg)
            if corrupt > 0:
                msg.crc ^= 0xFFFF
                corrupt -= 1
            pub.Write(msg)
            counts["states"] += 1
        next_s += dt
        delay = next_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.1:
            next_s = time.monotonic()  # a loaded CI machine: run slower than real time, never burst


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
