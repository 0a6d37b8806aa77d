"""Frozen configs of the Go2 tasks (override any field with ``make_env(task, {"a.b": "value"})``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from simdist_core.robots import GO2
from simdist_core.sim.go2_lowlevel import LowLevelConfig
from simdist_core.sim.terrains import TERRAIN_KINDS, TerrainConfig


def _check_range(name: str, value: tuple[float, float], lo: float, hi: float) -> None:
    if len(value) != 2 or not lo <= value[0] <= value[1] <= hi:
        raise ValueError(f"{name} must be (low, high) with {lo} <= low <= high <= {hi}, got {name}={value}")


@dataclass(frozen=True, kw_only=True)
class CommandConfig:
    """Velocity command (base frame), drawn once per episode."""

    vx_range_m_s: tuple[float, float] = (0.3, 1.0)
    """Forward velocity command =U(lo, hi) in m/s."""
    vy_range_m_s: tuple[float, float] = (0.0, 0.0)
    """Sideways velocity command =U(lo, hi) in m/s (0: walk straight)."""
    yaw_rate_range_rad_s: tuple[float, float] = (0.0, 0.0)
    """Turn-rate command =U(lo, hi) in rad/s (0: no turning)."""

    def __post_init__(self) -> None:
        _check_range("vx_range_m_s", self.vx_range_m_s, -1.5, 1.5)
        _check_range("vy_range_m_s", self.vy_range_m_s, -1.0, 1.0)
        _check_range("yaw_rate_range_rad_s", self.yaw_rate_range_rad_s, -2.0, 2.0)


@dataclass(frozen=True, kw_only=True)
class RewardConfig:
    """Weights of the named reward terms (a term with weight 0 is still logged, as 0)."""

    tracking_lin_vel: float = 1.0
    """exp(-|v_xy - cmd_xy|^2 / sigma^2), base frame."""
    tracking_ang_vel: float = 0.5
    """exp(-(w_z - cmd_yaw)^2 / sigma^2)."""
    lin_vel_z: float = -2.0
    """Weight of the squared vertical base velocity (bouncing)."""
    ang_vel_xy: float = -0.05
    """Weight of the squared roll and pitch rates (rocking)."""
    orientation: float = -1.0
    """|projected gravity xy|^2 relative to the terrain's slope."""
    base_height: float = -10.0
    """(height above terrain - nominal)^2."""
    torques: float = -2e-4
    """Weight of the sum of squared joint torques (effort)."""
    action_rate: float = -0.01
    """Weight of the squared change of the action between steps (jerk)."""
    gait: float = 0.2
    """Fraction of feet whose contact state matches the gait clock's stance schedule."""
    fall: float = -5.0
    """On the step that terminates by a fall."""
    tracking_sigma_m_s: float = 0.25
    """Width of the velocity-tracking kernel. Narrower than the command range (0.3-1.0 m/s) on purpose:
    at 0.5 m/s, standing still under a 0.3 m/s command kept 70 % of the tracking reward, and on foam a
    planner whose model had learnt the floor's dynamics chose stepping in place (0.68 reward/step)
    over its own wobbly walking (0.43/step). At 0.25 m/s standing still keeps at most 24 %."""

    def __post_init__(self) -> None:
        if not self.tracking_sigma_m_s > 0:
            raise ValueError(f"tracking_sigma_m_s must be > 0, got {self.tracking_sigma_m_s=}")


@dataclass(frozen=True, kw_only=True)
class RandomizationConfig:
    """Domain randomisation, drawn at every reset. Off for the "real world" tasks (PTFE, foam)."""

    enabled: bool = False
    """Draw terrain, friction, gains, mass and noise per episode from the ranges below (``go2/pretrain``)."""
    terrain_kinds: tuple[str, ...] = ("flat", "slope", "rough")
    """Kinds the pretraining mixture draws from (uniformly)."""
    slope_deg_range: tuple[float, float] = (-12.0, 12.0)
    """Incline of drawn ``slope`` terrain =U(lo, hi) in degrees (negative: downhill)."""
    friction_range: tuple[float, float] = (0.4, 1.2)
    """Foot friction =U(lo, hi): kept above the PTFE band (~0.2) so PTFE is out of distribution."""
    damping_ratio_range: tuple[float, float] = (0.5, 1.0)
    """Rigid contact damping ratio =U (restitution)."""
    kp_scale_range: tuple[float, float] = (0.9, 1.1)
    """PD proportional gain multiplied by =U(lo, hi)."""
    kd_scale_range: tuple[float, float] = (0.9, 1.1)
    """PD derivative gain multiplied by =U(lo, hi)."""
    joint_friction_scale_range: tuple[float, float] = (0.5, 1.5)
    """Joint friction loss multiplied by =U(lo, hi)."""
    base_mass_offset_kg_range: tuple[float, float] = (-1.0, 3.0)
    """Mass added to the trunk =U(lo, hi) in kg (a payload, or a lighter robot)."""
    init_joint_noise_rad: float = 0.1
    """Initial joint angles off the default pose by =U(-x, x) rad."""
    init_yaw_rad: float = 0.3
    """Initial heading =U(-x, x) rad."""
    proprio_noise_std: float = 0.02
    """Gaussian noise added to every proprio entry of the observation."""
    height_map_noise_std_m: float = 0.01
    """Gaussian noise added to every height-map sample, in metres."""
    action_delay_steps_range: tuple[int, int] = (0, 0)
    """Control periods between an action and the step it acts on, drawn per episode =U{lo..hi} (the live graph's
    pipeline delay on a slow machine; (0, 0): every action acts on the next step, as before)."""

    def __post_init__(self) -> None:
        bad = [k for k in self.terrain_kinds if k not in TERRAIN_KINDS or k == "foam"]
        if not self.terrain_kinds or bad:
            raise ValueError(f"terrain_kinds must be non-empty and from flat/slope/rough, got {self.terrain_kinds=}")
        _check_range("slope_deg_range", self.slope_deg_range, -25.0, 25.0)
        _check_range("friction_range", self.friction_range, 0.01, 3.0)
        _check_range("damping_ratio_range", self.damping_ratio_range, 0.1, 2.0)
        _check_range("kp_scale_range", self.kp_scale_range, 0.1, 3.0)
        _check_range("kd_scale_range", self.kd_scale_range, 0.1, 3.0)
        _check_range("joint_friction_scale_range", self.joint_friction_scale_range, 0.0, 5.0)
        _check_range("base_mass_offset_kg_range", self.base_mass_offset_kg_range, -5.0, 10.0)
        lo, hi = self.action_delay_steps_range
        if not (float(lo).is_integer() and float(hi).is_integer() and 0 <= lo <= hi <= 10):
            raise ValueError(f"action_delay_steps_range must be whole steps 0 <= lo <= hi <= 10, got "
                             f"{self.action_delay_steps_range=}")
        for name in ("init_joint_noise_rad", "init_yaw_rad", "proprio_noise_std", "height_map_noise_std_m"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {name}={getattr(self, name)}")


@dataclass(frozen=True, kw_only=True)
class Go2EnvConfig:
    """One Go2 velocity-tracking task."""

    terrain: TerrainConfig = field(default_factory=TerrainConfig)
    """The floor."""
    low_level: LowLevelConfig = field(default_factory=LowLevelConfig)
    """Joint PD controller shared with the expert and the real driver."""
    command: CommandConfig = field(default_factory=CommandConfig)
    """Velocity command drawn per episode."""
    rewards: RewardConfig = field(default_factory=RewardConfig)
    """Reward weights."""
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    """Domain randomisation (pretraining only)."""
    episode_length_s: float = 20.0
    """Simulated seconds before an episode is truncated."""
    physics_dt_s: float = 0.002
    """MuJoCo time step; the control period must be a whole number of them."""
    control_hz: float = GO2.control_hz
    """Control rate; fixed by the robot contract (a different value is refused)."""
    gait_period_s: float = 0.3
    """Period of the gait clock in the proprio (and of the expert's trot)."""
    gait_duty: float = 0.6
    """Stance fraction of the gait clock's schedule (used by the gait reward and the expert)."""
    fall_height_m: float = 0.14
    """Terminate when the base is lower than this above the terrain (standing: ~0.27 m)."""
    fall_tilt_rad: float = 1.0
    """Terminate when the base z axis tilts more than this from the world vertical."""
    target_ramp_s: float = 0.0
    """Blend each new joint target in linearly over this long instead of stepping to it (0: step, as every dataset
    and model was made). The Go2 hardware driver's ``interpolation_s``; here to measure what it costs."""
    base_velocity_source: str = "true"
    """Where the proprio's base linear velocity comes from: ``true`` (the simulator's, as every dataset and model
    was made) or ``leg_odometry`` (the hardware driver's estimate, ``go2_leg_odometry.LegOdometry``, updated once
    per control period from the simulated joints, IMU and foot touch forces) or ``imu_leg_fusion`` (the same feet
    fused with every physics step's accelerometer sample, ``go2_imu_leg_fusion.ImuLegFusion``); here to measure
    what each costs."""
    imu_acc_bias_m_s2: float = 0.0
    """With ``imu_leg_fusion``: magnitude of the accelerometer's emulated bias, constant over an episode, in a random
    direction (base frame); it stands for the sensor's bias and the attitude estimate's tilt error (1 deg: 0.17)."""
    imu_acc_noise_m_s2: float = 0.0
    """With ``imu_leg_fusion``: standard deviation of the accelerometer's emulated white noise per 2 ms sample."""
    leg_odometry_filter_alpha: float = 0.2
    """With ``leg_odometry``: the estimator's ``filter_alpha`` (the driver's default 0.2; 1 = no filtering)."""
    target_max_step_rad: float = 0.0
    """Limit the change of each joint target per physics step (0: none, as every dataset and model was made). The
    hardware driver's ``max_step_rad`` (per 2 ms tick); here to measure what it costs."""
    target_max_tracking_error_rad: float = 0.0
    """Keep each joint target within this of the measured joint, every physics step (0: none). The hardware
    driver's ``max_tracking_error_rad``; here to measure what it costs."""

    def __post_init__(self) -> None:
        if not 1.0 <= self.episode_length_s <= 3600.0:
            raise ValueError(f"episode_length_s must be in [1, 3600], got {self.episode_length_s=}")
        if not 0.0005 <= self.physics_dt_s <= 0.005:
            raise ValueError(f"physics_dt_s must be in [0.0005, 0.005], got {self.physics_dt_s=}")
        if self.control_hz != GO2.control_hz:
            raise ValueError(f"control_hz must equal robots.GO2.control_hz={GO2.control_hz}, got {self.control_hz=}")
        steps = 1.0 / (self.control_hz * self.physics_dt_s)
        if abs(steps - round(steps)) > 1e-6:
            raise ValueError(f"1/(control_hz*physics_dt_s) must be an integer, got {steps} ({self.physics_dt_s=})")
        if not 0.15 <= self.gait_period_s <= 1.5:
            raise ValueError(f"gait_period_s must be in [0.15, 1.5], got {self.gait_period_s=}")
        if not 0.3 <= self.gait_duty <= 0.8:
            raise ValueError(f"gait_duty must be in [0.3, 0.8], got {self.gait_duty=}")
        if not 0.05 <= self.fall_height_m <= 0.25:
            raise ValueError(f"fall_height_m must be in [0.05, 0.25], got {self.fall_height_m=}")
        if not 0.0 <= self.target_ramp_s <= 0.2:
            raise ValueError(f"target_ramp_s must be in [0, 0.2], got {self.target_ramp_s=}")
        if self.base_velocity_source not in ("true", "leg_odometry", "imu_leg_fusion"):
            raise ValueError(f"base_velocity_source must be 'true', 'leg_odometry' or 'imu_leg_fusion', got "
                             f"{self.base_velocity_source!r}")
        for name in ("imu_acc_bias_m_s2", "imu_acc_noise_m_s2"):
            if not 0.0 <= getattr(self, name) <= 10.0:
                raise ValueError(f"{name} must be in [0, 10], got {getattr(self, name)!r}")
        if not 0.0 < self.leg_odometry_filter_alpha <= 1.0:
            raise ValueError(f"leg_odometry_filter_alpha must be in (0, 1], got {self.leg_odometry_filter_alpha=}")
        for name in ("target_max_step_rad", "target_max_tracking_error_rad"):
            if not 0.0 <= getattr(self, name) <= 3.0:
                raise ValueError(f"{name} must be in [0, 3] (0: no limit), got {getattr(self, name)!r}")
        if not 0.2 <= self.fall_tilt_rad <= 3.0:
            raise ValueError(f"fall_tilt_rad must be in [0.2, 3], got {self.fall_tilt_rad=}")
