"""What each robot looks like to the learning stack: observation and action layout.

This is the contract shared by simulation, data, models, planner and ROS nodes. One registry
table maps a robot name to its ``RobotSpec``; everything else (encoder type, history length,
control rate) is read from here instead of if-chains on robot names.

Observation of one control step (what the real robot's sensors give), a ``dict[str, ndarray]``:
    ``proprio``    float32 (P,)            see ``proprio_fields`` for the layout
    ``command``    float32 (C,)            task command (Go2: vx, vy, yaw rate; UR5e: registered fixture
                                           pose x, y in the base frame and yaw); absent if C == 0
    ``height_map`` float32 (Hm, Wm)        Go2 only: terrain height relative to the base, metres
    ``image``      uint8   (Hi, Wi, 3)     UR5e only: RGB camera(s), cameras stacked along width

Model input (a window of history), a ``dict[str, Tensor]`` with batch first, built by
``simdist_core.data.history.ObservationHistory`` online and by the dataset sampler offline:
    ``proprio``      (B, T, P)     oldest first, the last row is the current step
    ``prev_actions`` (B, T, A)     action applied *before* each proprio row (zeros at start)
    ``command``      (B, C)
    ``height_map``   (B, Hm, Wm)
    ``image``        (B, 3, Hi, Wi) uint8

Actions are always normalised to [-1, 1]^A in core (model, planner, data). Each robot's env /
driver maps them to physical commands with ``action_scale`` (see the robot's sim module).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class RobotSpec:
    """Observation/action layout of one robot, shared by every layer of the stack."""

    name: str
    """Registry name, e.g. ``"go2"``."""
    encoder: str
    """Encoder kind in ``simdist_core.models.encoders.ENCODERS`` (``"proprio_heightmap"``, ``"proprio_image"``)."""
    proprio_fields: tuple[tuple[str, int], ...]
    """Ordered (name, width) slices of the proprio vector."""
    action_dim: int
    """A: number of normalised action components."""
    action_names: tuple[str, ...]
    """Name of each action component, MuJoCo order."""
    command_dim: int
    """C: task command width (0 = no command)."""
    command_offset: tuple[float, ...] = ()
    command_scale: tuple[float, ...] = ()
    """The encoder feeds ``(command - offset) / scale`` (empty = 0 and 1): fixed constants, not fitted, so
    the command's meaning never depends on a dataset. UR5e's fixture pose varies by centimetres around
    a point half a metre away: unscaled, that variation would be invisible next to the offset."""
    history: int
    """T: proprio/action history length fed to the encoder."""
    horizon: int
    """H: planning horizon in control steps."""
    control_hz: float
    """Rate at which actions are decided."""
    height_map_shape: tuple[int, int] | None = None
    """(rows, cols) of the height map, or None."""
    height_map_resolution_m: float = 0.1
    """Grid spacing of the height map."""
    image_shape: tuple[int, int] | None = None
    """(height, width) of the RGB observation, or None."""
    probe: str = "base_velocity"
    """What the model's ``probe`` head decodes from a latent, for visualising predicted rollouts:
    ``"base_velocity"`` = (vx, vy, vz) of the base in the yaw-aligned frame, m/s, integrated over
    the horizon to draw positions (Go2); ``"tcp_position"`` = tool tip (x, y, z) in the robot base
    frame, metres (UR5e). The env's ``privileged_state()["probe"]`` is the (3,) training target."""

    command_frame: str | None = None
    """How the encoder may express the robot's pose in the command's frame when the model asks for it
    (``WorldModelConfig.command_frame``; kinds in ``simdist_core.models.encoders.COMMAND_FRAMES``): ``"fixture"``
    = the tool tip's offset from the commanded hole in the fixture's axes and its yaw error (UR5e); None = the
    command is not a pose (Go2's is a velocity)."""

    def __post_init__(self) -> None:
        if self.action_dim != len(self.action_names):
            raise ValueError(f"{self.name}: action_dim={self.action_dim} but {len(self.action_names)} action_names")
        if self.history < 1 or self.horizon < 1:
            raise ValueError(f"{self.name}: history and horizon must be >= 1, got {self.history=}, {self.horizon=}")
        if self.control_hz <= 0:
            raise ValueError(f"{self.name}: control_hz must be > 0, got {self.control_hz=}")
        for name in ("command_offset", "command_scale"):
            if getattr(self, name) and len(getattr(self, name)) != self.command_dim:
                raise ValueError(f"{self.name}: {name} needs {self.command_dim} values, got {getattr(self, name)}")
        if any(not s > 0 for s in self.command_scale):
            raise ValueError(f"{self.name}: command_scale must be > 0, got {self.command_scale}")

    @property
    def proprio_dim(self) -> int:
        """P: width of one proprio row."""
        return sum(width for _, width in self.proprio_fields)

    @property
    def control_dt(self) -> float:
        """Seconds between two actions."""
        return 1.0 / self.control_hz

    def proprio_slice(self, field: str) -> slice:
        """Where ``field`` lives in the proprio vector.

        Raises:
            KeyError: unknown field (the message lists the valid ones).
        """
        start = 0
        for name, width in self.proprio_fields:
            if name == field:
                return slice(start, start + width)
            start += width
        raise KeyError(f"{self.name} has no proprio field {field!r}; fields: {[n for n, _ in self.proprio_fields]}")


_GO2_LEGS = ("FL", "FR", "RL", "RR")  # MuJoCo actuator order (the Unitree SDK uses FR, FL, RR, RL)
_GO2_JOINTS = tuple(f"{leg}_{j}" for leg in _GO2_LEGS for j in ("hip", "thigh", "calf"))

GO2 = RobotSpec(
    name="go2",
    encoder="proprio_heightmap",
    proprio_fields=(
        ("base_lin_vel", 3),
        ("base_ang_vel", 3),
        ("projected_gravity", 3),
        ("joint_pos", 12),  # relative to the default pose, MuJoCo order
        ("joint_vel", 12),
        ("gait_phase", 2),  # cos, sin
    ),
    action_dim=12,
    action_names=_GO2_JOINTS,
    command_dim=3,
    history=25,
    horizon=25,
    control_hz=50.0,
    height_map_shape=(21, 15),
    height_map_resolution_m=0.1,
)

UR5E = RobotSpec(
    name="ur5e",
    encoder="proprio_image",
    proprio_fields=(
        ("joint_pos", 6),
        ("joint_vel", 6),
        ("tcp_pos", 3),  # tool tip in the robot base frame, metres
        ("tcp_yaw", 2),  # cos, sin
        ("wrench", 6),  # force (N) and torque (N m) at the wrist, scaled in the env
    ),
    action_dim=4,
    action_names=("dx", "dy", "dz", "dyaw"),
    command_dim=3,  # registered fixture pose: hole centre x, y (m, base frame), yaw (rad); see sim.ur5e_env
    command_offset=(0.15, -0.5, 0.0),  # the nominal fixture (FixtureConfig.center_m)
    command_scale=(0.02, 0.02, 0.2),  # the narrow grid's half-range and the yaw range
    history=25,
    horizon=25,
    control_hz=20.0,
    image_shape=(64, 64),
    probe="tcp_position",
    command_frame="fixture",
)

ROBOTS: dict[str, RobotSpec] = {spec.name: spec for spec in (GO2, UR5E)}


def get_robot(name: str) -> RobotSpec:
    """Look up a robot spec by name.

    Raises:
        KeyError: unknown robot; the message lists the valid names.
    """
    try:
        return ROBOTS[name]
    except KeyError:
        raise KeyError(f"unknown robot {name!r}; valid robots: {sorted(ROBOTS)}") from None
