"""The simulated Unitree Go2 velocity-tracking env (``RobotEnv`` protocol, see ``sim/base.py``).

One control step (50 Hz) sets the joint targets of ``Go2LowLevel`` and runs ``mj_step`` 10 times in
native code (the PD is a MuJoCo actuator). Observations follow ``robots.GO2``; proprio is computed by
``go2_obs.proprio_from_sensors`` exactly as on the real robot. Rewards are named terms weighted by
``RewardConfig`` (``go2_rewards.py``; ``StepResult.reward_terms`` is logged as ``reward/<term>``). Scenes
are compiled once per terrain kind and cached, so the pretraining mixture switches terrain at reset
without recompiling.

Speed (one process, CPU time, measured on the shared 2-core machine at load average ~11, so pessimistic):
``mj_step`` alone 3.9k control steps/s on flat ground (2.0k on rough: height-field contacts); env step +
height map + expert ~950 transitions/s on flat, ~580 on rough. There is no Python per physics step.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from simdist_core.robots import GO2
from simdist_core.sim.base import DelayLine, StepResult, draw_steps
from simdist_core.sim.go2_config import Go2EnvConfig
from simdist_core.sim.go2_constants import NOMINAL_STANDING_HEIGHT_M
from simdist_core.sim.go2_imu_leg_fusion import ImuLegFusion, SpecificForceMean
from simdist_core.sim.go2_leg_odometry import EstimatorConfig, LegOdometry
from simdist_core.sim.go2_lowlevel import Go2LowLevel
from simdist_core.sim.go2_obs import (
    gait_phase_rad,
    height_map_points,
    proprio_from_sensors,
    quat_to_rotmat,
    wrap_rad,
    yaw_from_quat,
)
from simdist_core.sim.go2_rewards import VALUE_FEATURE_NAMES, reward_terms, stance_schedule, value_features
from simdist_core.sim.go2_scene import CONTACT_THRESHOLD_N, Go2Scene
from simdist_core.sim.terrains import TerrainConfig


class Go2Env:
    """Go2 velocity tracking on one terrain (or the pretraining mixture), at 50 Hz."""

    spec = GO2

    def __init__(self, task: str, config: Go2EnvConfig | None = None) -> None:
        self.task = task
        self.config = config if config is not None else Go2EnvConfig()
        self.low_level = Go2LowLevel(self.config.low_level)
        self.n_substeps = int(round(1.0 / (self.config.control_hz * self.config.physics_dt_s)))
        self.control_dt_s = 1.0 / self.config.control_hz
        self._scenes: dict[str, Go2Scene] = {}
        self._rng = np.random.default_rng()
        self.scene = self._scene(self.config.terrain.kind)
        self.command = np.zeros(3)
        self.domain: dict[str, float] = {}
        self._episode_started = False
        self._odometry: LegOdometry | ImuLegFusion | None = None  # the driver's estimate, when the proprio has it
        self._imu = SpecificForceMean()  # the period's accelerometer samples, for ImuLegFusion
        self._imu_rng = np.random.default_rng()  # emulated IMU errors; apart from _rng, so episodes stay the same
        self._imu_bias_m_s2 = np.zeros(3)
        if self.config.base_velocity_source == "leg_odometry":
            self._odometry = LegOdometry(EstimatorConfig(filter_alpha=self.config.leg_odometry_filter_alpha))
        elif self.config.base_velocity_source == "imu_leg_fusion":
            self._odometry = ImuLegFusion()
        self.reset()

    # ----------------------------------------------------------------------------------------- state
    @property
    def model(self) -> mujoco.MjModel:
        """The current scene's compiled model."""
        return self.scene.model

    @property
    def data(self) -> mujoco.MjData:
        """The current scene's simulation state."""
        return self.scene.data

    @property
    def time_s(self) -> float:
        """Seconds since the episode started."""
        return self._steps * self.control_dt_s

    @property
    def action_delay_steps(self) -> int:
        """Control periods between an action and the step it acts on, this episode."""
        return self._delay.steps

    def gait_phase(self) -> float:
        """Current phase (rad) of the gait clock."""
        return gait_phase_rad(self.time_s, self.config.gait_period_s)

    def _scene(self, kind: str) -> Go2Scene:
        if kind not in self._scenes:
            terrain = self.config.terrain if kind == self.config.terrain.kind else _with_kind(self.config.terrain, kind)
            self._scenes[kind] = Go2Scene(self.config, terrain, self.low_level)
        return self._scenes[kind]

    # ----------------------------------------------------------------------------------------- reset
    def reset(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Draw terrain, domain parameters, command and initial pose; return the first observation."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._imu_rng = np.random.default_rng([seed, 0x1B0])
        rng = self._rng
        cfg, dr = self.config, self.config.randomization
        kind = str(rng.choice(dr.terrain_kinds)) if dr.enabled else cfg.terrain.kind
        self.scene = self._scene(kind)
        slope = float(rng.uniform(*dr.slope_deg_range)) if dr.enabled else cfg.terrain.slope_deg  # =U(slope range)
        self.scene.terrain.configure(self.model, rng, slope)
        self._randomize_domain(rng)
        self.command = np.array(
            [
                rng.uniform(*cfg.command.vx_range_m_s),
                rng.uniform(*cfg.command.vy_range_m_s),  # =U(command ranges)
                rng.uniform(*cfg.command.yaw_rate_range_rad_s),
            ]
        )
        self._reset_pose(rng, slope if kind == "slope" else 0.0)
        self._steps = 0
        self._prev_action = np.zeros(GO2.action_dim)
        self._ramp_to: np.ndarray | None = None  # the last targets blended in (None: start from the reset pose's)
        if self._odometry is not None:
            direction = self._imu_rng.normal(size=3)
            self._imu_bias_m_s2 = self.config.imu_acc_bias_m_s2 * direction / np.linalg.norm(direction)
            self._imu.take()  # samples of the last episode
            self._odometry.reset()
            self._update_odometry()
            self._vel_sq_error_sum = 0.0
        self._fell = False
        self._falls = 0
        self._foot_slip_m = 0.0
        self._commanded_m = 0.0
        self._priv: dict[str, np.ndarray] | None = None
        self._core: dict[str, np.ndarray] | None = None
        self._start_xy = self.data.qpos[0:2].copy()
        yaw0 = yaw_from_quat(self.data.qpos[3:7])
        self._progress_dir = yaw0 + math.atan2(self.command[1], self.command[0])
        self._start_yaw, self._max_heading_change = yaw0, 0.0
        # Drawn after the rest of the episode and only when the range is open, so seeds keep their episodes.
        lo, hi = (int(v) for v in dr.action_delay_steps_range) if dr.enabled else (0, 0)
        self._delay = DelayLine(draw_steps(rng, lo, hi), GO2.action_dim)  # =U{lo..hi}
        return self.observation()

    def _randomize_domain(self, rng: np.random.Generator) -> None:
        cfg, dr, sc, m = self.config, self.config.randomization, self.scene, self.model
        on = dr.enabled
        friction = rng.uniform(*dr.friction_range) if on else cfg.terrain.friction  # =U(0.4, 1.2)
        ratio = rng.uniform(*dr.damping_ratio_range) if on else cfg.terrain.restitution_damping_ratio  # =U(0.5, 1)
        kp_scale = rng.uniform(*dr.kp_scale_range) if on else 1.0  # *U(0.9, 1.1)
        kd_scale = rng.uniform(*dr.kd_scale_range) if on else 1.0  # *U(0.9, 1.1)
        jf_scale = rng.uniform(*dr.joint_friction_scale_range) if on else 1.0  # *U(0.5, 1.5)
        mass_offset = rng.uniform(*dr.base_mass_offset_kg_range) if on else 0.0  # +U(-1, 3) kg
        m.geom_friction[sc.foot_geom_ids, 0] = friction
        m.geom_friction[sc.terrain.floor_geom_id, 0] = friction
        m.geom_solref[sc.foot_geom_ids] = [0.02, ratio]
        self.low_level.apply_gains(m, sc.actuator_ids, kp_scale, kd_scale)
        m.dof_frictionloss[sc.dof_adr] = sc.nominal_frictionloss * jf_scale
        m.body_mass[sc.base_body_id] = sc.nominal_base_mass_kg + mass_offset
        self.domain = {
            "friction": friction,
            "damping_ratio": ratio,
            "kp_scale": kp_scale,
            "kd_scale": kd_scale,
            "joint_friction_scale": jf_scale,
            "base_mass_offset_kg": mass_offset,
        }

    def _reset_pose(self, rng: np.random.Generator, slope_deg: float) -> None:
        dr, d = self.config.randomization, self.data
        mujoco.mj_resetData(self.model, d)
        yaw = rng.uniform(-dr.init_yaw_rad, dr.init_yaw_rad) if dr.enabled else 0.0  # =U(-0.3, 0.3)
        pitch = -math.radians(slope_deg) * math.cos(yaw)  # nose up on an uphill slope
        d.qpos[0:3] = [
            0.0,
            0.0,
            float(self.scene.terrain.height(0.0, 0.0))
            + (NOMINAL_STANDING_HEIGHT_M + 0.01) / math.cos(math.radians(slope_deg)),
        ]
        d.qpos[3:7] = _quat_mul(
            [math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)], [math.cos(pitch / 2), 0, math.sin(pitch / 2), 0]
        )
        noise = rng.uniform(-1, 1, 12) * dr.init_joint_noise_rad if dr.enabled else np.zeros(12)  # +U(-0.1, 0.1)
        targets = self.low_level.targets(np.zeros(12))
        d.qpos[self.scene.qpos_adr] = targets + noise
        d.ctrl[self.scene.actuator_ids] = targets
        mujoco.mj_forward(self.model, d)

    # ------------------------------------------------------------------------------------------ step
    def step(self, action: np.ndarray) -> StepResult:
        """Apply a normalised action (12,) in [-1, 1] for one control period (clipped; NaN is an error)."""
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (GO2.action_dim,):
            raise ValueError(f"action must have shape ({GO2.action_dim},), got {action.shape}")
        if not np.all(np.isfinite(action)):
            raise ValueError(f"action must be finite, got {action}")
        action = np.clip(action, -1.0, 1.0)
        feet_before = self.data.geom_xpos[self.scene.foot_geom_ids, :2].copy()  # (4, 2)
        contact_before = self._contacts()
        self._apply_targets(self.low_level.targets(self._delay.push(action)))
        self._steps += 1
        self._commanded_m += math.hypot(self.command[0], self.command[1]) * self.control_dt_s
        self._priv = self._core = None
        if self._odometry is not None:
            self._update_odometry()
            error = self._odometry.lin_vel_m_s - self._true_base_lin_vel()
            self._vel_sq_error_sum += float(np.sum(error**2))
        turn = wrap_rad(yaw_from_quat(self.data.qpos[3:7]) - self._start_yaw)
        self._max_heading_change = max(self._max_heading_change, abs(turn))
        planted = contact_before & self._contacts()
        moved = np.linalg.norm(self.data.geom_xpos[self.scene.foot_geom_ids, :2] - feet_before, axis=1)  # (4,)
        self._foot_slip_m += float(np.sum(moved[planted]))
        fallen = self._is_fallen()
        if fallen and not self._fell:
            self._falls += 1
        self._fell = self._fell or fallen
        state = self._core_state()
        terms = reward_terms(state, action, self._prev_action, fallen, self.config)
        self._prev_action = action
        truncated = self.time_s >= self.config.episode_length_s - 1e-9
        return StepResult(
            obs=self.observation(),
            reward=float(sum(terms.values())),
            reward_terms=terms,
            terminated=fallen,
            truncated=truncated and not fallen,
            info={"time_s": self.time_s, "fell": self._fell},
        )

    def _apply_targets(self, targets: np.ndarray) -> None:
        """Hold ``targets`` for one control period, through the hardware driver's target shaping when it is asked for.

        ``target_ramp_s``: blend them in from the last ones (blend 0 on the period's first physics step, 1 once the
        ramp is over); then, each physics step as the driver's safety layer each tick, ``target_max_step_rad`` from
        the last target sent and ``target_max_tracking_error_rad`` around the measured joints. None of them: step.
        """
        cfg, ids = self.config, self.scene.actuator_ids
        ramp, max_step, max_err = cfg.target_ramp_s, cfg.target_max_step_rad, cfg.target_max_tracking_error_rad
        fusion = isinstance(self._odometry, ImuLegFusion)
        if ramp <= 0 and max_step <= 0 and max_err <= 0 and not fusion:
            self.data.ctrl[ids] = targets
            mujoco.mj_step(self.model, self.data, nstep=self.n_substeps)
            return
        start = self.data.ctrl[ids].copy() if self._ramp_to is None else self._ramp_to  # used with a ramp only
        for k in range(self.n_substeps):
            desired = start + min(k * cfg.physics_dt_s / ramp, 1.0) * (targets - start) if ramp > 0 else targets
            if max_step > 0:
                last = self.data.ctrl[ids]
                desired = np.clip(desired, last - max_step, last + max_step)
            if max_err > 0:
                q = self.data.qpos[self.scene.qpos_adr]
                desired = np.clip(desired, q - max_err, q + max_err)
            self.data.ctrl[ids] = desired
            mujoco.mj_step(self.model, self.data)
            if fusion:
                self._imu_sample()
        self._ramp_to = targets

    def _imu_sample(self) -> None:
        """One accelerometer sample for the period's mean (the driver: one a LowState, every 2 ms).

        MuJoCo computes sensors in the step's forward pass, so the sample is the acceleration over the step just
        taken. Emulated errors: the episode's constant bias and white noise per sample (``imu_acc_*``).
        """
        d, cfg = self.data, self.config
        accel = d.sensordata[self.scene.acc_adr] + self._imu_bias_m_s2
        if cfg.imu_acc_noise_m_s2 > 0:
            accel = accel + self._imu_rng.normal(0.0, cfg.imu_acc_noise_m_s2, 3)
        self._imu.add(d.qpos[3:7], accel)

    def _update_odometry(self) -> None:
        """One update of the driver's estimator from this period's simulated sensors (the driver: one a publish)."""
        d, sc = self.data, self.scene
        forces = np.array([d.sensordata[a][0] for a in sc.touch_adr])
        args = (d.qpos[sc.qpos_adr], d.qvel[sc.dof_adr], d.sensordata[sc.gyro_adr], d.qpos[3:7], forces,
                self.control_dt_s)
        if isinstance(self._odometry, ImuLegFusion):
            self._odometry.update(*args, self._imu.take())
        else:
            self._odometry.update(*args)

    def _is_fallen(self) -> bool:
        d = self.data
        height = d.qpos[2] - self.scene.terrain.height_at(d.qpos[0], d.qpos[1])
        up_z = d.xmat[self.scene.base_body_id, 8]  # world z of the base z axis
        return bool(height < self.config.fall_height_m or up_z < math.cos(self.config.fall_tilt_rad))

    # ------------------------------------------------------------------------------------ observation
    def sensors(self) -> dict[str, np.ndarray]:
        """Raw sensor readings (keys ``go2_obs.SENSOR_KEYS``), MuJoCo order, noise-free.

        ``base_lin_vel`` is what the robot would report: the simulator's velocity, or the driver's estimate when
        ``base_velocity_source`` asks for one (so the simulated robot node publishes it in ``odom`` and a graph
        sees what the in-process observation sees). ``base_pos`` stays the simulator's (TF, RViz).
        """
        sc, d = self.scene, self.data
        return {
            "joint_pos": d.qpos[sc.qpos_adr].copy(),
            "joint_vel": d.qvel[sc.dof_adr].copy(),
            "joint_torque": d.actuator_force[sc.actuator_ids].copy(),
            "imu_quat": d.qpos[3:7].copy(),
            "imu_gyro": d.sensordata[sc.gyro_adr].copy(),
            "imu_acc": d.sensordata[sc.acc_adr].copy(),
            "base_lin_vel": self._reported_base_lin_vel(),
            "base_pos": d.qpos[0:3].copy(),
            "foot_contact_forces": np.array([d.sensordata[a][0] for a in sc.touch_adr]),
            "height_map": self._height_map(),
        }

    def _true_base_lin_vel(self) -> np.ndarray:
        """The simulator's base linear velocity in the base frame."""
        return quat_to_rotmat(self.data.qpos[3:7]).T @ self.data.qvel[0:3]

    def _reported_base_lin_vel(self) -> np.ndarray:
        """The base velocity the robot reports: the simulator's, or the driver's estimate (``base_velocity_source``)."""
        return self._true_base_lin_vel() if self._odometry is None else self._odometry.lin_vel_m_s.copy()

    def _height_map(self) -> np.ndarray:
        d = self.data
        gx, gy = height_map_points(d.qpos[0:2], yaw_from_quat(d.qpos[3:7]))
        return (self.scene.terrain.height(gx, gy) - d.qpos[2]).astype(np.float32)  # (21, 15)

    def observation(self) -> dict[str, np.ndarray]:
        """Observation dict (``robots.GO2`` layout), with observation noise when randomisation is on."""
        d, sc = self.data, self.scene
        sensors = {  # the subset of ``sensors()`` the observation needs
            "base_lin_vel": self._reported_base_lin_vel(),
            "imu_gyro": d.sensordata[sc.gyro_adr],
            "imu_quat": d.qpos[3:7],
            "joint_pos": d.qpos[sc.qpos_adr],
            "joint_vel": d.qvel[sc.dof_adr],
        }
        proprio = proprio_from_sensors(sensors, self.command, self.gait_phase(), check=False)
        height_map = self._height_map()
        dr = self.config.randomization
        if dr.enabled:
            proprio = proprio + self._rng.normal(0.0, dr.proprio_noise_std, proprio.shape).astype(
                np.float32
            )  # +N(0, s)
            height_map = height_map + self._rng.normal(0.0, dr.height_map_noise_std_m, height_map.shape).astype(
                np.float32
            )  # +N(0, s)
        return {"proprio": proprio, "command": self.command.astype(np.float32), "height_map": height_map}

    def _core_state(self) -> dict[str, np.ndarray]:
        """State shared by reward, privileged state and value features; computed once per step."""
        if self._core is None:
            self._core = self._compute_core_state()
        return self._core

    def _compute_core_state(self) -> dict[str, np.ndarray]:
        d, sc = self.data, self.scene
        rot = quat_to_rotmat(d.qpos[3:7])
        contacts = self._contacts()
        return {
            "rot": rot,
            "base_lin_vel_body": rot.T @ d.qvel[0:3],
            "base_ang_vel_body": d.sensordata[sc.gyro_adr].copy(),
            "height_above_terrain_m": np.array(d.qpos[2] - sc.terrain.height_at(d.qpos[0], d.qpos[1])),
            "joint_torque": d.actuator_force[sc.actuator_ids],
            "foot_contacts": contacts,
            "desired_stance": stance_schedule(self.gait_phase(), self.config.gait_duty),
            "command": self.command,
            "slope_rad": np.array(math.radians(sc.terrain.slope_deg)),
        }

    def _contacts(self) -> np.ndarray:
        """Feet (4,) bool whose touch sensor reads more than ``CONTACT_THRESHOLD_N``."""
        d = self.data
        return np.array([d.sensordata[a][0] > CONTACT_THRESHOLD_N for a in self.scene.touch_adr])

    def privileged_state(self) -> dict[str, np.ndarray]:
        """True state for experts, value features and the probe (keys below); computed once per step.

        The arrays are shared between calls within a step: copy before modifying them.
        """
        if self._priv is None:
            self._priv = self._compute_privileged_state()
        return dict(self._priv)

    def _compute_privileged_state(self) -> dict[str, np.ndarray]:
        d, sc = self.data, self.scene
        core = self._core_state()
        yaw = yaw_from_quat(d.qpos[3:7])
        c, s = math.cos(yaw), math.sin(yaw)
        v = d.qvel[0:3]
        probe = np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1], v[2]])
        out = {
            "base_pos": d.qpos[0:3].copy(),
            "base_quat": d.qpos[3:7].copy(),
            "base_lin_vel_world": v.copy(),
            "base_ang_vel_body": core["base_ang_vel_body"],
            "joint_pos": d.qpos[sc.qpos_adr].copy(),
            "joint_vel": d.qvel[sc.dof_adr].copy(),
            "foot_contacts": core["foot_contacts"].astype(np.float64),
            "foot_pos_world": d.geom_xpos[sc.foot_geom_ids].copy(),
            "command": self.command.copy(),
            "gait_phase": np.array(self.gait_phase()),
            "time_s": np.array(self.time_s),
            "probe": probe.astype(np.float32),
            "value_features": value_features(
                core,
                self.gait_phase(),
                self.domain,
                sc.terrain.params(),
                d,
                sc,
                self.time_s / self.config.episode_length_s,
            ),
        }
        out.update({k: np.array(v) for k, v in sc.terrain.params().items()})
        out.update({f"domain_{k}": np.array(v) for k, v in self.domain.items()})
        return out

    def set_command(self, command: np.ndarray) -> None:
        """Replace the episode's velocity command (vx m/s, vy m/s, yaw rate rad/s), e.g. from ``cmd_vel``.

        Raises:
            ValueError: wrong shape or non-finite values.
        """
        command = np.asarray(command, dtype=np.float64)
        if command.shape != (GO2.command_dim,) or not np.all(np.isfinite(command)):
            raise ValueError(f"command must be {GO2.command_dim} finite floats (vx, vy, yaw_rate), got {command}")
        self.command = command.copy()
        self._priv = self._core = None

    def terrain_height(self, x_m: np.ndarray, y_m: np.ndarray) -> np.ndarray:
        """Exact terrain height (m) at world points (privileged; used by the expert)."""
        return self.scene.terrain.height(x_m, y_m)

    def metrics(self) -> dict[str, float]:
        """Episode metrics so far.

        ``forward_progress_m``: base displacement along the initial commanded direction; ``fell``: the episode
        reached a fall; ``falls``: fall events (upright -> fallen transitions; > 1 only if stepping continues
        after termination); ``duration_s``; ``foot_slip_m``: summed horizontal travel of feet that stayed in
        contact over a control step (a slip measure); ``commanded_m``: the distance the velocity command asked for
        over the steps taken (its planar speed times the time), so ``forward_progress_m`` can be read as command
        tracking, where walking faster than commanded also raises the progress; ``max_heading_change_rad``: the
        largest heading change from the episode's start (a commanded yaw rate turns it on purpose).
        """
        delta = self.data.qpos[0:2] - self._start_xy
        progress = delta[0] * math.cos(self._progress_dir) + delta[1] * math.sin(self._progress_dir)
        metrics = {
            "forward_progress_m": float(progress),
            "fell": self._fell,
            "falls": float(self._falls),
            "duration_s": self.time_s,
            "foot_slip_m": self._foot_slip_m,
            "commanded_m": self._commanded_m,
            "max_heading_change_rad": self._max_heading_change,
        }
        if self._odometry is not None and self._steps:
            metrics["base_vel_rmse_m_s"] = math.sqrt(self._vel_sq_error_sum / self._steps)
        return metrics


VALUE_FEATURE_DIM = len(VALUE_FEATURE_NAMES)


def _with_kind(terrain: TerrainConfig, kind: str) -> TerrainConfig:
    import dataclasses

    return dataclasses.replace(terrain, kind=kind)  # type: ignore[arg-type]


def _quat_mul(a: list[float] | np.ndarray, b: list[float] | np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )
