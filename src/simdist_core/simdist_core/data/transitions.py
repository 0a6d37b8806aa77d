"""Sensor messages -> per-step dataset records: the assembly path for recorded bags.

Used by :func:`simdist_core.data.bag.bag_to_dataset` (rosbags messages) and by tests with rclpy messages;
both flavours have the same field names, so the extractors below read attributes only and never import a
ROS package (``simdist_core`` stays ROS-free). The live replay buffer records the encoder's own observation
stream instead (:mod:`simdist_core.data.observed_steps`): the observations here are built with the same
core proprio function the encoder uses, so the two paths agree (tested bit for bit).

Assembly rule (identical live and offline, messages taken in arrival / log-time order):
    * every sensor message updates the latest value of its kind (stamp = ``header.stamp``);
    * every ``executed_command`` (the action the driver really applied) closes one step: the record is
      the observation built from the latest sensors + that action, stamped with the newest sensor stamp;
    * a step is dropped (and the episode broken) when a required sensor is missing or older than
      ``max_staleness_s`` relative to the newest one, or when an extractor rejects a message;
    * a new episode starts where :class:`simdist_core.data.episodes.EpisodeTracker` says so (the rule the
      encoder node uses too): after a dropped step, a stamp that does not increase, an announced
      ``episode_start`` boundary (:meth:`TransitionAssembler.on_episode_start`), a joint or base / tool tip
      jump, or a gap of more than ``max_gap_s``; the Go2 gait clock restarts with every episode.

Labels: the robot cannot observe the expert's reward/value or the privileged probe. Dynamics-only
finetuning needs only observations and actions (latent consistency), so these records store no
``reward``, ``value``, ``clean_expert`` or ``priv/probe`` field at all: the window sampler then
returns zeros/False for them and lists them in ``WindowSampler.missing`` (never fake labels).
Fields: ``obs/proprio``, ``obs/command``, ``obs/height_map`` [Go2], ``obs/image`` [UR5e],
``action``, ``episode_id`` (int64), ``t_ns`` (int64, observation stamp).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simdist_core.data.episodes import EpisodeConfig, EpisodeTracker
from simdist_core.robots import RobotSpec

log = logging.getLogger(__name__)

# Sensor kinds (one per topic in simdist_ros.topics) a robot needs to build its observation.
REQUIRED_SENSORS: dict[str, tuple[str, ...]] = {
    "go2": ("joint_states", "imu", "odom", "height_map"),
    "ur5e": ("joint_states", "odom", "wrench", "camera_image"),  # odom = TCP pose in the base frame
}
COMMAND_SENSOR: dict[str, str] = {"go2": "cmd_vel", "ur5e": "fixture_pose"}
"""The sensor kind that carries the task command: Go2's velocity command (``geometry_msgs/Twist``), UR5e's
registered fixture pose (``geometry_msgs/PoseStamped`` in the robot base frame -> x, y, yaw)."""
OPTIONAL_SENSORS: dict[str, tuple[str, ...]] = {name: (kind,) for name, kind in COMMAND_SENSOR.items()}
DEFAULT_COMMAND: dict[str, tuple[float, ...]] = {"go2": (0.5, 0.0, 0.0), "ur5e": (0.15, -0.5, 0.0)}
"""Task command before the first command message: the ``default_command`` of the robot's config YAML
(Go2: the encoder node's parameter default; UR5e: the nominal fixture, ``FixtureConfig.center_m``)."""


class SensorError(ValueError):
    """A sensor message could not be turned into arrays (names the field and the problem)."""


def _stamp_ns(msg: Any) -> int:  # noqa: ANN401  (rclpy or rosbags message)
    if not hasattr(msg, "header"):  # cmd_vel (Twist) has no stamp; commands are optional and never staleness-checked
        return 0
    stamp = msg.header.stamp
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _finite(name: str, arr: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(arr)):
        raise SensorError(f"{name} has non-finite values: {arr.ravel()[:6]}")
    return arr


def _joint_states(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    pos, vel = np.asarray(msg.position, np.float64), np.asarray(msg.velocity, np.float64)
    names = list(msg.name)
    if len(names) != pos.size or vel.size != pos.size:
        raise SensorError(f"joint_states: {len(names)} names, {pos.size} positions, {vel.size} velocities")
    effort = np.asarray(msg.effort, np.float64) if len(msg.effort) == pos.size else np.zeros(pos.size)
    return {"joint_names": np.asarray(names), "joint_pos_rad": _finite("joint_states.position", pos),
            "joint_vel_rad_s": _finite("joint_states.velocity", vel), "joint_effort_nm": effort}


def _vec3(v: Any) -> list[float]:  # noqa: ANN401
    return [float(v.x), float(v.y), float(v.z)]


def _quat_wxyz(name: str, q: Any) -> np.ndarray:  # noqa: ANN401
    quat = np.array([q.w, q.x, q.y, q.z], np.float64)
    norm = float(np.linalg.norm(quat))
    if not 0.9 < norm < 1.1:
        raise SensorError(f"{name} has norm {norm:.3f}, expected a unit quaternion")
    return quat / norm


def _imu(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    return {"imu_quat_wxyz": _quat_wxyz("imu.orientation", msg.orientation),
            "imu_ang_vel_rad_s": _finite("imu.angular_velocity", np.array(_vec3(msg.angular_velocity))),
            "imu_lin_acc_m_s2": _finite("imu.linear_acceleration", np.array(_vec3(msg.linear_acceleration)))}


def _odom(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    twist = msg.twist.twist
    return {"odom_pos_m": _finite("odom.position", np.array(_vec3(msg.pose.pose.position))),
            "odom_quat_wxyz": _quat_wxyz("odom.orientation", msg.pose.pose.orientation),
            "odom_lin_vel_m_s": _finite("odom.twist.linear", np.array(_vec3(twist.linear))),
            "odom_ang_vel_rad_s": _finite("odom.twist.angular", np.array(_vec3(twist.angular)))}


def _image(msg: Any, shape: tuple[int, int], encoding: str, bytes_px: int) -> np.ndarray:  # noqa: ANN401
    if msg.encoding != encoding or (int(msg.height), int(msg.width)) != tuple(shape):
        raise SensorError(f"image {msg.encoding} {msg.height}x{msg.width}, expected {encoding} {shape[0]}x{shape[1]}")
    row = int(msg.width) * bytes_px
    data = np.frombuffer(bytes(msg.data), np.uint8)
    if int(msg.step) < row or data.size != int(msg.step) * int(msg.height):
        raise SensorError(f"image step {msg.step} / {data.size} bytes do not fit {msg.height}x{msg.width}")
    return np.ascontiguousarray(data.reshape(int(msg.height), int(msg.step))[:, :row])


def _height_map(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    assert spec.height_map_shape is not None
    raw = _image(msg, spec.height_map_shape, "32FC1", 4)
    arr = raw.view(">f4" if msg.is_bigendian else "<f4").reshape(spec.height_map_shape).astype(np.float32)
    return {"height_map_m": _finite("height_map", arr)}


def _camera(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    assert spec.image_shape is not None
    return {"image_rgb": _image(msg, spec.image_shape, "rgb8", 3).reshape(*spec.image_shape, 3)}


def _wrench(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    w = msg.wrench
    return {"wrench": _finite("wrench", np.array(_vec3(w.force) + _vec3(w.torque)))}


def _cmd_vel(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    return {"command": _finite("cmd_vel", np.array([msg.linear.x, msg.linear.y, msg.angular.z], np.float32))}


def _fixture_pose(msg: Any, spec: RobotSpec) -> dict[str, np.ndarray]:  # noqa: ANN401
    """UR5e task command (3,) float32: the registered hole centre x, y (m, base frame) and its yaw (rad)."""
    p, q = msg.pose.position, msg.pose.orientation
    w, x, y, z = (float(v) for v in (q.w, q.x, q.y, q.z))
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if not 0.5 < norm < 1.5:  # NaN fails this too
        raise SensorError(f"fixture_pose orientation is not a unit quaternion (norm {norm})")
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return {"command": _finite("fixture_pose", np.array([p.x, p.y, yaw], np.float32))}


EXTRACTORS: dict[str, Callable[[Any, RobotSpec], dict[str, np.ndarray]]] = {
    "joint_states": _joint_states, "imu": _imu, "odom": _odom, "height_map": _height_map,
    "camera_image": _camera, "wrench": _wrench, "cmd_vel": _cmd_vel, "fixture_pose": _fixture_pose,
}
"""Sensor kind -> extractor (message -> named arrays). Kinds match the names in simdist_ros.topics."""


GO2_GAIT_PERIOD_S = 0.3
"""Gait clock period: ``simdist_core.sim.go2_config``'s default and the encoder node's ``gait_period_s``."""


def _go2_observation(sensors: Mapping[str, np.ndarray], t_clock_s: float) -> dict[str, np.ndarray]:
    from simdist_core.sim import go2_obs

    command = np.asarray(sensors.get("command", np.zeros(3)), np.float32)
    core = {"base_lin_vel": sensors["odom_lin_vel_m_s"], "imu_gyro": sensors["imu_ang_vel_rad_s"],
            "imu_quat": sensors["imu_quat_wxyz"], "joint_pos": sensors["joint_pos_rad"],
            "joint_vel": sensors["joint_vel_rad_s"]}
    phase = go2_obs.gait_phase_rad(t_clock_s, GO2_GAIT_PERIOD_S)
    proprio = go2_obs.proprio_from_sensors(core, command, phase)
    return {"proprio": proprio, "command": command, "height_map": sensors["height_map_m"]}


def _ur5e_observation(sensors: Mapping[str, np.ndarray], t_clock_s: float) -> dict[str, np.ndarray]:
    from simdist_core.sim import ur5e

    # The UR5e driver publishes the TCP pose in the robot base frame on odom (simdist_ros.sensors).
    core = {"joint_pos": sensors["joint_pos_rad"], "joint_vel": sensors["joint_vel_rad_s"],
            "tcp_pos": sensors["odom_pos_m"], "tcp_quat": sensors["odom_quat_wxyz"], "wrench": sensors["wrench"]}
    command = np.asarray(sensors.get("command", DEFAULT_COMMAND["ur5e"]), np.float32)
    return {"proprio": ur5e.proprio_from_sensors(core), "command": command, "image": sensors["image_rgb"]}


OBSERVATIONS: dict[str, Callable[[Mapping[str, np.ndarray], float], dict[str, np.ndarray]]] = {
    "go2": _go2_observation, "ur5e": _ur5e_observation,
}
"""Robot -> (sensor arrays, seconds on the gait clock) -> observation, via the robot's core proprio function."""


def observation_from_sensors(spec: RobotSpec, sensors: Mapping[str, np.ndarray], t_clock_s: float
                             ) -> dict[str, np.ndarray]:
    """Build the model observation from sensor arrays with the robot's core function.

    Go2: ``simdist_core.sim.go2_obs.proprio_from_sensors`` (the function the env and encoder use); like the
    encoder node, the gait clock ``t_clock_s`` counts from the episode's first step. UR5e:
    ``simdist_core.sim.ur5e.proprio_from_sensors`` with the TCP pose from odom.

    Raises:
        SensorError: missing sensors or the core function rejects the input.
    """
    try:
        return OBSERVATIONS[spec.name](sensors, t_clock_s)
    except (KeyError, ValueError) as exc:
        raise SensorError(f"{spec.name}: cannot build the observation: {exc}") from exc


@dataclass(frozen=True, kw_only=True)
class AssemblerConfig:
    """Rules that cut the message stream into steps and episodes."""

    max_staleness_s: float = 0.1
    """A required sensor older than this (vs. the newest one) drops the step."""
    max_gap_s: float = 0.1
    """Consecutive steps further apart than this start a new episode."""
    joint_jump_rad: float = EpisodeConfig.joint_jump_rad
    """A joint jump larger than this between steps starts a new episode (= the encoder's ``reset_jump_rad``)."""
    base_jump_m: float = EpisodeConfig.base_jump_m
    """A base / tool tip jump larger than this starts a new episode (= the encoder's ``reset_jump_m``)."""
    default_command: tuple[float, ...] | None = None
    """Task command until the first command message (the encoder node's ``default_command``); None =
    :data:`DEFAULT_COMMAND` of the robot."""

    def __post_init__(self) -> None:
        if not self.max_staleness_s > 0:
            raise ValueError(f"max_staleness_s must be > 0, got {self.max_staleness_s=}")
        self.episode_config()  # validates the episode thresholds

    def episode_config(self) -> EpisodeConfig:
        """The episode rule these settings describe."""
        return EpisodeConfig(max_gap_s=self.max_gap_s, joint_jump_rad=self.joint_jump_rad,
                             base_jump_m=self.base_jump_m)


class TransitionAssembler:
    """Turns a stream of sensor and executed-command messages into dataset records.

    Memory is bounded: it keeps only the latest arrays of each sensor kind and counters.

    Args:
        spec: the robot.
        config: staleness and episode rules (default :class:`AssemblerConfig` scaled to the spec's rate).
        observe: ``(spec, sensors, t_s) -> obs``; default :func:`observation_from_sensors`.
        first_episode_id: episode id of the first step (a resumed replay buffer continues after the
            ids already on disk, so episodes never merge across a restart).
    """

    def __init__(self, spec: RobotSpec, config: AssemblerConfig | None = None,
                 observe: Callable[[RobotSpec, Mapping[str, np.ndarray], float], dict[str, np.ndarray]] | None = None,
                 first_episode_id: int = 0) -> None:
        self.spec = spec
        self.config = config or AssemblerConfig(max_staleness_s=2.5 * spec.control_dt, max_gap_s=2.5 * spec.control_dt)
        self.observe = observe or observation_from_sensors
        self.required = REQUIRED_SENSORS[spec.name]
        self._latest: dict[str, tuple[int, dict[str, np.ndarray]]] = {}
        self.tracker = EpisodeTracker(self.config.episode_config())
        """Episode boundaries and the gait clock origin (the encoder node's rule)."""
        default = self.config.default_command
        self._default_command = np.asarray(default if default is not None else DEFAULT_COMMAND[spec.name], np.float32)
        self.episode_id = first_episode_id
        self.steps = 0
        self.dropped: dict[str, int] = {}

    def _drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        self.tracker.break_episode()

    def on_episode_start(self, t_ns: int) -> bool:
        """An announced reset: a new episode starts at the first step stamped ``>= t_ns``.

        The announcement is untrusted: a malformed stamp is counted (``dropped["bad_episode_start"]``) and
        ignored, and a forged one can only split an episode. Returns True if the boundary was kept.
        """
        before = self.tracker.counts["announce_rejected"]
        kept = self.tracker.announce(t_ns)
        if self.tracker.counts["announce_rejected"] != before:
            self.dropped["bad_episode_start"] = self.dropped.get("bad_episode_start", 0) + 1
            log.warning("episode_start rejected: stamp %r", t_ns)
        return kept

    def on_sensor(self, kind: str, msg: Any) -> None:  # noqa: ANN401  (rclpy or rosbags message)
        """Remember the latest message of one sensor kind (rejected messages are counted, not stored)."""
        try:
            self._latest[kind] = (_stamp_ns(msg), EXTRACTORS[kind](msg, self.spec))
        except (SensorError, AttributeError, TypeError, ValueError) as exc:  # anything on DDS may be malformed
            self._drop(f"bad_{kind}")
            log.warning("sensor %s rejected: %s", kind, exc)

    def on_executed_command(self, action: Any) -> dict[str, np.ndarray] | None:  # noqa: ANN401
        """Close one step with the executed action ``(A,)``; returns the record or None if dropped."""
        act = np.asarray(action, np.float32).ravel()
        if act.shape != (self.spec.action_dim,) or not np.all(np.isfinite(act)):
            self._drop("bad_action")
            return None
        missing = [k for k in self.required if k not in self._latest]
        if missing:
            self._drop("missing_sensor")
            return None
        stamps = {k: self._latest[k][0] for k in self.required}
        t_ns = max(stamps.values())
        if (t_ns - min(stamps.values())) * 1e-9 > self.config.max_staleness_s:
            self._drop("stale_sensor")
            return None
        sensors: dict[str, np.ndarray] = {}
        for kind in (*self.required, *OPTIONAL_SENSORS[self.spec.name]):
            if kind in self._latest:
                sensors.update(self._latest[kind][1])
        # The joints and the base (Go2 odom) / tool tip (UR5e odom) feed the jump rule, like the encoder's.
        new_episode = self.tracker.step(t_ns, sensors["joint_pos_rad"], sensors["odom_pos_m"]) is not None
        if "command" not in sensors and self.spec.command_dim:
            sensors["command"] = self._default_command
        try:
            obs = self.observe(self.spec, sensors, self.tracker.clock_s(t_ns))
        except SensorError as exc:
            log.warning("observation rejected: %s", exc)
            self._drop("bad_observation")
            return None
        if new_episode and self.steps > 0:
            self.episode_id += 1
        self.steps += 1
        return make_record(self.spec, obs, act, t_ns, self.episode_id)


def next_episode_id(shard_dir: Path) -> int:
    """First unused ``episode_id`` of a shard (0 if empty), so a resumed writer never merges episodes.

    Raises:
        simdist_core.data.chunks.CorruptChunkError: a sealed chunk's meta is unreadable.
    """
    from simdist_core.data.chunks import list_chunks, read_meta

    ids = [max(read_meta(chunk).get("episode_ids") or [-1]) for _, chunk in list_chunks(Path(shard_dir))]
    return max(ids, default=-1) + 1


def make_record(spec: RobotSpec, obs: Mapping[str, np.ndarray], action: np.ndarray, t_ns: int,
                episode_id: int) -> dict[str, np.ndarray]:
    """One unlabelled step in the dataset's field layout (see the module docstring for the labels)."""
    record: dict[str, np.ndarray] = {"obs/proprio": np.asarray(obs["proprio"], np.float32)}
    if spec.command_dim:
        record["obs/command"] = np.asarray(obs["command"], np.float32)
    if spec.height_map_shape:
        record["obs/height_map"] = np.asarray(obs["height_map"], np.float32)
    if spec.image_shape:
        record["obs/image"] = np.asarray(obs["image"], np.uint8)
    record.update({
        "action": np.asarray(action, np.float32),
        "episode_id": np.int64(episode_id),
        "t_ns": np.int64(t_ns),
    })
    return record
