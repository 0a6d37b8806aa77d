"""Simulated UR5e + 2F-85: the fixed low-level controller, raw sensors and the proprio encoding.

``UR5eLowLevel`` turns the normalised 4-d action (dx, dy, dz, dyaw) into a TCP target and runs a
damped-least-squares IK at ``ik_hz`` that commands the arm's position servos with roll/pitch locked
(tool down). Expert, planner and the real driver share it, so the action means the same everywhere.
``proprio_from_sensors`` is the one encoding of sensors into the (23,) proprio row, used by the env
and by the ROS encoder node.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simdist_core.robots import UR5E
from simdist_core.sim import ur5e_constants as consts
from simdist_core.sim.ur5e_render import OffscreenCamera
from simdist_core.sim.ur5e_scene import SceneConfig, build_ur5e_model, mujoco


@dataclass(frozen=True, kw_only=True)
class LowLevelConfig:
    """Action scaling and IK settings (shared by sim, expert, planner and the real driver)."""

    max_step_m: float = 0.005
    """TCP target translation per control step at |action| = 1 (0.1 m/s at 20 Hz)."""
    max_yaw_step_rad: float = 0.1
    """TCP target yaw change per control step at |action| = 1 (2 rad/s at 20 Hz)."""
    ik_hz: float = 250.0
    """Rate of the IK layer commanding the position servos."""
    damping: float = 0.02
    """Damped-least-squares lambda (metres / radians)."""
    ik_gain: float = 2.5
    """Servo command = q + ik_gain * dq: the Menagerie servos are overdamped (kv/kp = 0.2 s), so a gain
    of 1 lags ~0.2 s; 2.5 gives ~0.08 s and a task-space stiffness of roughly 10 kN/m."""
    leash_m: float = 0.008
    """The target stays within this of the measured TCP: bounds contact force and wind-up."""
    leash_yaw_rad: float = 0.2
    """The target yaw stays within this of the measured TCP yaw (as ``leash_m``)."""
    joint_margin_rad: float = 0.05
    """Servo commands stay this far inside the joint ranges (wrist_3 has +-2 pi: about 2 turns)."""
    workspace_lo_m: tuple[float, float, float] = (-0.2, -0.8, 0.0)
    """Lower corner (x, y, z) of the box below."""
    workspace_hi_m: tuple[float, float, float] = (0.5, -0.1, 0.45)
    """Box (base frame) the TCP target is clamped to."""

    def __post_init__(self) -> None:
        for name in ("max_step_m", "max_yaw_step_rad", "ik_hz", "damping", "ik_gain", "leash_m", "leash_yaw_rad"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if any(lo >= hi for lo, hi in zip(self.workspace_lo_m, self.workspace_hi_m, strict=True)):
            raise ValueError(f"workspace_lo_m must be < workspace_hi_m, got {self.workspace_lo_m=}, "
                             f"{self.workspace_hi_m=}")


def yaw_of(rot: np.ndarray) -> float:
    """Yaw (rad) of a tool rotation matrix (3, 3): heading of its x axis in the base xy plane."""
    return math.atan2(rot[1, 0], rot[0, 0])


def wrap_angle(angle_rad: float) -> float:
    """Wrap to [-pi, pi)."""
    return (angle_rad + math.pi) % (2 * math.pi) - math.pi


def quarter_turn(angle_rad: float | np.ndarray) -> float | np.ndarray:
    """Wrap to [-pi/4, pi/4): a square peg fits its hole every quarter turn, so that is all of a yaw error."""
    return (angle_rad + math.pi / 4) % (math.pi / 2) - math.pi / 4


def tool_rot(yaw_rad: float) -> np.ndarray:
    """Tool-down rotation (3, 3) with heading ``yaw_rad``."""
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ consts.TOOL_DOWN_ROT


class UR5eLowLevel:
    """TCP target from normalised actions + damped-least-squares IK onto the position servos."""

    def __init__(self, model: mujoco.MjModel, cfg: LowLevelConfig) -> None:
        self.cfg = cfg
        self.model = model
        self.site_id = model.site(consts.TCP_SITE).id
        self.qpos_adr = np.array([model.joint(n).qposadr[0] for n in consts.ARM_JOINTS])
        self.dof_adr = np.array([model.joint(n).dofadr[0] for n in consts.ARM_JOINTS])
        self.act_ids = np.array([model.actuator(n).id for n in consts.ARM_ACTUATORS])
        ranges = np.array([model.joint(n).range for n in consts.ARM_JOINTS])  # (6, 2)
        self.q_lo = ranges[:, 0] + cfg.joint_margin_rad
        self.q_hi = ranges[:, 1] - cfg.joint_margin_rad
        self.target_pos = np.zeros(3)
        self.target_yaw = 0.0
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))
        self._quat_cur = np.zeros(4)
        self._quat_tgt = np.zeros(4)
        self._rot_err = np.zeros(3)

    def measured(self, data: mujoco.MjData) -> tuple[np.ndarray, float]:
        """Measured TCP position (3,) and yaw, the yaw unwrapped next to the current target."""
        pos = data.site_xpos[self.site_id].copy()
        yaw = yaw_of(data.site_xmat[self.site_id].reshape(3, 3))
        return pos, self.target_yaw - wrap_angle(self.target_yaw - yaw)

    def reset(self, data: mujoco.MjData) -> None:
        """Put the target on the measured TCP (call after setting qpos and ``mj_forward``)."""
        self.target_yaw = yaw_of(data.site_xmat[self.site_id].reshape(3, 3))
        self.target_pos, self.target_yaw = self.measured(data)

    def apply_action(self, action: np.ndarray, data: mujoco.MjData) -> None:
        """Move the target by a normalised action (4,) in [-1, 1] (clipped), then leash it to the TCP."""
        a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        pos, yaw = self.measured(data)
        target = self.target_pos + a[:3] * self.cfg.max_step_m
        target = pos + np.clip(target - pos, -self.cfg.leash_m, self.cfg.leash_m)
        self.target_pos = np.clip(target, self.cfg.workspace_lo_m, self.cfg.workspace_hi_m)
        target_yaw = self.target_yaw + a[3] * self.cfg.max_yaw_step_rad
        self.target_yaw = yaw + float(np.clip(target_yaw - yaw, -self.cfg.leash_yaw_rad, self.cfg.leash_yaw_rad))

    def ik_step(self, data: mujoco.MjData, gain: float | None = None) -> None:
        """One damped-least-squares step: servo command = q + gain * J^T (J J^T + lambda^2 I)^-1 e.

        ``gain`` defaults to ``cfg.ik_gain``; 1.0 gives a plain Newton step (kinematic IK).
        """
        mujoco.mj_jacSite(self.model, data, self._jacp, self._jacr, self.site_id)
        jac = np.vstack([self._jacp[:, self.dof_adr], self._jacr[:, self.dof_adr]])  # (6, 6)
        pos_err = self.target_pos - data.site_xpos[self.site_id]
        mujoco.mju_mat2Quat(self._quat_cur, data.site_xmat[self.site_id])
        mujoco.mju_mat2Quat(self._quat_tgt, tool_rot(self.target_yaw).ravel())
        mujoco.mju_subQuat(self._rot_err, self._quat_tgt, self._quat_cur)  # body-frame rotation error
        rot_err = data.site_xmat[self.site_id].reshape(3, 3) @ self._rot_err  # to the base frame
        err = np.concatenate([pos_err, rot_err])
        lam2 = self.cfg.damping**2
        dq = jac.T @ np.linalg.solve(jac @ jac.T + lam2 * np.eye(6), err)
        q = data.qpos[self.qpos_adr]
        gain = self.cfg.ik_gain if gain is None else gain
        data.ctrl[self.act_ids] = np.clip(q + gain * dq, self.q_lo, self.q_hi)


    def joint_command(self, data: mujoco.MjData, joint_pos_rad: np.ndarray) -> np.ndarray:
        """Servo command (6,) rad for measured joints (real driver: kinematics-only ``data``, no physics).

        The real driver calls ``apply_action`` once per action and this at ``ik_hz`` with the measured
        joint angles, then sends the result with servoJ: the same controller as in simulation.
        """
        data.qpos[self.qpos_adr] = joint_pos_rad
        mujoco.mj_kinematics(self.model, data)
        mujoco.mj_comPos(self.model, data)
        self.ik_step(data)
        return data.ctrl[self.act_ids].copy()


def proprio_from_sensors(sensors: dict[str, np.ndarray]) -> np.ndarray:
    """Encode raw sensors into one proprio row (23,) float32, layout ``robots.UR5E.proprio_fields``.

    Args:
        sensors: ``joint_pos`` (6,) rad, ``joint_vel`` (6,) rad/s, ``tcp_pos`` (3,) m and ``tcp_quat``
            (4,) w-x-y-z in the base frame, ``wrench`` (6,) tared force N + torque N m in the base frame.

    Raises:
        ValueError: a missing key, a wrong shape or a non-finite value (named in the message).
    """
    widths = {"joint_pos": 6, "joint_vel": 6, "tcp_pos": 3, "tcp_quat": 4, "wrench": 6}
    parts: dict[str, np.ndarray] = {}
    for key, width in widths.items():
        if key not in sensors:
            raise ValueError(f"sensors lack {key!r}; need {sorted(widths)}")
        value = np.asarray(sensors[key], dtype=np.float64)
        if value.shape != (width,) or not np.all(np.isfinite(value)):
            raise ValueError(f"sensors[{key!r}] must be finite with shape ({width},), got {value.shape} {value}")
        parts[key] = value
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, parts["tcp_quat"] / np.linalg.norm(parts["tcp_quat"]))
    yaw = yaw_of(rot.reshape(3, 3))
    scale = np.array([consts.WRENCH_FORCE_SCALE_N] * 3 + [consts.WRENCH_TORQUE_SCALE_NM] * 3)
    wrench = np.clip(parts["wrench"] / scale, -consts.WRENCH_CLIP, consts.WRENCH_CLIP)
    row = np.concatenate([parts["joint_pos"], parts["joint_vel"], parts["tcp_pos"], [math.cos(yaw), math.sin(yaw)],
                          wrench])
    return row.astype(np.float32)  # (23,)


class UR5eSim:
    """Model, data, low-level controller, wrist F/T sensor and a reusable offscreen renderer."""

    def __init__(self, scene: SceneConfig, lowlevel: LowLevelConfig, *, render: bool = True) -> None:
        self.model = build_ur5e_model(scene)
        self.data = mujoco.MjData(self.model)
        self.lowlevel = UR5eLowLevel(self.model, lowlevel)
        self.render_enabled = render
        self.substeps = round(UR5E.control_dt / self.model.opt.timestep)
        self.ik_every = max(1, round(1.0 / (lowlevel.ik_hz * self.model.opt.timestep)))
        self.ft_site = self.model.site(consts.FT_SITE).id
        self.fixture_mocap = self.model.body(consts.FIXTURE_BODY).mocapid[0]
        self.part_body = self.model.body(consts.PART_BODY).id
        force_id, torque_id = self.model.sensor(consts.FORCE_SENSOR).id, self.model.sensor(consts.TORQUE_SENSOR).id
        self.force_adr = self.model.sensor_adr[force_id]
        self.torque_adr = self.model.sensor_adr[torque_id]
        self.finger_act = self.model.actuator(consts.FINGER_ACTUATOR).id
        self._tare = np.zeros(6)
        self._renderer: OffscreenCamera | None = None
        self._image_shape = UR5E.image_shape or (64, 64)

    # -- state -------------------------------------------------------------------------------------
    def reset_arm(self, qpos_rad: np.ndarray, finger_ctrl: float = 0.0) -> None:
        """Place the arm at ``qpos_rad`` (6,) at rest, settle the gripper, tare the F/T sensor."""
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[self.lowlevel.qpos_adr] = qpos_rad
        self.data.ctrl[self.lowlevel.act_ids] = qpos_rad
        self.data.ctrl[self.finger_act] = finger_ctrl
        mujoco.mj_forward(self.model, self.data)
        self.lowlevel.reset(self.data)
        for _ in range(10):  # let the finger linkage and the sensor settle before taring
            self.lowlevel.ik_step(self.data)
            mujoco.mj_step(self.model, self.data)
        self._tare = self._raw_wrench_site()

    def set_fixture(self, pos_m: np.ndarray, yaw_rad: float) -> None:
        """Move the mocap fixture (hole centre on the table surface, heading ``yaw_rad``)."""
        self.data.mocap_pos[self.fixture_mocap] = pos_m
        self.data.mocap_quat[self.fixture_mocap] = [math.cos(yaw_rad / 2), 0.0, 0.0, math.sin(yaw_rad / 2)]
        mujoco.mj_forward(self.model, self.data)

    def control_step(self, action: np.ndarray, before_physics: Callable[[], None] | None = None) -> None:
        """One 20 Hz control period: move the target, run IK at ``ik_hz`` and physics at 500 Hz.

        ``before_physics`` runs before every physics step (task forces such as the thread model).
        """
        self.lowlevel.apply_action(action, self.data)
        for k in range(self.substeps):
            if k % self.ik_every == 0:
                self.lowlevel.ik_step(self.data)
            if before_physics is not None:
                before_physics()
            mujoco.mj_step(self.model, self.data)

    # -- sensors -----------------------------------------------------------------------------------
    def _raw_wrench_site(self) -> np.ndarray:
        force = self.data.sensordata[self.force_adr : self.force_adr + 3]
        torque = self.data.sensordata[self.torque_adr : self.torque_adr + 3]
        return np.concatenate([force, torque])

    def wrench(self) -> np.ndarray:
        """Tared wrist wrench (6,): force N and torque N m in the base frame (like UR's TCP force)."""
        rot = self.data.site_xmat[self.ft_site].reshape(3, 3)
        local = self._raw_wrench_site() - self._tare  # tool-down, so gravity is constant in the sensor frame
        return np.concatenate([rot @ local[:3], rot @ local[3:]])

    def render(self) -> np.ndarray:
        """RGB image (h, w, 3) uint8 from the scene camera (zeros when rendering is disabled)."""
        if not self.render_enabled:
            return np.zeros((*self._image_shape, 3), dtype=np.uint8)
        if self._renderer is None:
            self._renderer = OffscreenCamera(self.model, consts.SCENE_CAMERA, *self._image_shape)
        return self._renderer.render(self.data)

    def sensors(self, *, image: bool = True) -> dict[str, np.ndarray]:
        """What a real UR5e + camera gives: joint_pos/vel (6,), tcp_pos (3,), tcp_quat (4,), wrench (6,), image."""
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[self.lowlevel.site_id])
        out = {
            "joint_pos": self.data.qpos[self.lowlevel.qpos_adr].copy(),
            "joint_vel": self.data.qvel[self.lowlevel.dof_adr].copy(),
            "tcp_pos": self.data.site_xpos[self.lowlevel.site_id].copy(),
            "tcp_quat": quat,
            "wrench": self.wrench(),
        }
        if image:
            out["image"] = self.render()
        return out

    def close(self) -> None:
        """Free the GL context of the renderer (safe to call twice)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
