"""The simulated UR5e as an ``ArmBackend``: the project's MuJoCo scene stepped in lockstep with ``servo_j``.

Each ``servo_j(q, ..., dt_s)`` sets the arm's position servos to ``q`` and advances physics by ``dt_s``,
the way the UR controller tracks a servoJ target over one period. Like the real controller it enters a
protective stop when the TCP force exceeds ``force_limit_n`` (and ignores motion until ``unlock``), it
can drop the link (``disconnect``) and report impossible joint readings (``sensor_fault``), so the
driver's handling of each is testable.
"""

from __future__ import annotations

import threading

import mujoco
import numpy as np
from simdist_core.sim.ur5e import LowLevelConfig, UR5eSim
from simdist_core.sim.ur5e_constants import HOME_QPOS_RAD
from simdist_core.sim.ur5e_scene import SceneConfig

from ur5e_bringup.backend import ArmState, BackendConnectError


class MujocoBackend:
    """MuJoCo UR5e + gripper scene behind the ``ArmBackend`` interface."""

    def __init__(self, scene: SceneConfig | None = None, start_q_rad: np.ndarray | None = None,
                 force_limit_n: float = 150.0) -> None:
        self.sim = UR5eSim(scene if scene is not None else SceneConfig(), LowLevelConfig(), render=False)
        self.start_q_rad = np.array(HOME_QPOS_RAD if start_q_rad is None else start_q_rad, dtype=np.float64)
        self.force_limit_n = force_limit_n
        self._lock = threading.Lock()
        self._connected = False
        self._ever_connected = False
        self._protective_stop = False
        self.servo_calls = 0
        self.stop_calls = 0
        self._sensor_fault: dict[str, np.ndarray] = {}

    def connect(self, timeout_s: float) -> None:
        """Reset the arm to ``start_q_rad`` at rest (``timeout_s`` is unused: nothing can hang here)."""
        with self._lock:
            self.sim.reset_arm(self.start_q_rad)
            self._connected = self._ever_connected = True
            self._protective_stop = False

    def _q(self) -> np.ndarray:
        return self.sim.data.qpos[self.sim.lowlevel.qpos_adr].copy()

    def read_state(self) -> ArmState:
        """Joint state and the tared wrist wrench.

        Raises:
            BackendConnectError: never connected.
        """
        with self._lock:
            if not self._ever_connected:
                raise BackendConnectError("MujocoBackend.read_state before connect()")
            ll = self.sim.lowlevel
            q = self._sensor_fault.get("q_rad", self._q())
            dq = self._sensor_fault.get("dq_rad_s", self.sim.data.qvel[ll.dof_adr].copy())
            return ArmState(q_rad=q, dq_rad_s=dq, wrench=self.sim.wrench(), protective_stop=self._protective_stop,
                            connected=self._connected)

    def servo_j(self, q_rad: np.ndarray, speed: float, accel: float, dt_s: float, lookahead_s: float,
                gain: float) -> bool:
        """Track ``q_rad`` for ``dt_s`` of physics; False (and no motion) when stopped or disconnected."""
        with self._lock:
            if not self._connected or self._protective_stop:
                return False
            self.servo_calls += 1
            self._advance(np.asarray(q_rad, dtype=np.float64), dt_s)
            return True

    def _advance(self, q_target: np.ndarray, dt_s: float) -> None:
        model, data = self.sim.model, self.sim.data
        data.ctrl[self.sim.lowlevel.act_ids] = q_target
        mujoco.mj_step(model, data, nstep=max(1, round(dt_s / model.opt.timestep)))
        if np.linalg.norm(self.sim.wrench()[:3]) > self.force_limit_n:
            self._protective_stop = True
            data.ctrl[self.sim.lowlevel.act_ids] = self._q()

    def stop(self) -> None:
        """Hold the measured pose (servoStop)."""
        with self._lock:
            self.stop_calls += 1
            self.sim.data.ctrl[self.sim.lowlevel.act_ids] = self._q()

    @property
    def protective_stop_active(self) -> bool:
        """Whether the simulated controller is protective-stopped."""
        return self._protective_stop

    # ---- fault injection (what an operator or a cable would do) -------------------------------------------
    def trigger_protective_stop(self) -> None:
        """As if the controller detected a collision."""
        self._protective_stop = True

    def unlock(self) -> None:
        """As if the operator cleared the protective stop on the pendant."""
        self._protective_stop = False

    def sensor_fault(self, q_rad: np.ndarray | None = None, dq_rad_s: np.ndarray | None = None) -> None:
        """As if the encoders reported these joint positions / velocities (any shape, NaN); None = true values."""
        with self._lock:
            self._sensor_fault = {k: np.asarray(v, dtype=np.float64) for k, v in
                                  (("q_rad", q_rad), ("dq_rad_s", dq_rad_s)) if v is not None}

    def disconnect(self) -> None:
        """As if the cable was pulled."""
        self._connected = False

    def close(self) -> None:
        """Free the renderer."""
        self._connected = False
        self.sim.close()
