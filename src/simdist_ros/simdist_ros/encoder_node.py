"""Encoder node: sensor topics -> observation history -> FROZEN encoder -> latent at the control rate.

Graph role (topics relative, see ``simdist_ros.topics``):
    in   ``joint_states``, ``imu``, ``odom`` (Go2: base twist; UR5e: TCP pose in the base frame),
         ``height_map`` (Go2), ``camera/image_raw`` + ``wrench`` (UR5e) — all qos.SENSOR;
         ``executed_command`` (qos.COMMAND: the action that preceded each observation), the task command
         (qos.RELIABLE: ``cmd_vel`` Twist for Go2, ``fixture_pose`` PoseStamped for UR5e),
         ``episode_start`` (std_msgs/Header, qos.EPISODE_START: resets announced by the simulated robot)
    out  ``latent`` (Float32MultiArray, qos.LATENT: ``z[D]`` + ``context[S,W]`` + ``episode_start[1]`` (1 on the
         first latent of an episode, when the history restarted) + ``episode[1]`` (how many episodes this node
         has started, so a planner that missed the first latent of one, which the keep-last-1 latent QoS allows
         when it plans slower than the control rate, still sees it start) + ``applied_delay[1]`` (control periods
         from the observation the command executed in the last step answered to the state it acted on, from the
         stamp the robot puts on ``executed_command``; -1 unknown) + the observation stamp),
         ``observation`` (Float32MultiArray, qos.OBSERVATION, only while someone subscribes: the observation the
         history got + the executed action before it + episode start/counter, ``msgs.make_observation``; the
         replay buffer records it, so the finetuning data are exactly what was encoded),
         ``/diagnostics``

Design choice: the full context (S x W floats, 51 x 64 = 13 KB for the reference Go2 model) is published
every tick instead of only z, so the planner needs no copy of the encoder or the history and the
encoder node is the only place observations become latents. 13 KB per tick is small for loopback DDS
(~1 ms round trips for small messages measured here; not measured separately for latents).

Timing: the node encodes as soon as a step's sensor bundle is complete (every sensor topic has a message
stamped at or after the newest ``joint_states`` not yet encoded; with ``wait_for_exteroception`` false the
height map / camera need only be within their age limit, for robots whose exteroception runs slower than
the control rate), so the planner, which plans on each latent, answers an observation within one control
period. A watchdog (``runtime.Watchdog``: a thread that wakes the executor only when it is due, where a
control-rate ROS timer cost ~4 % of a core) catches a step whose bundle never completes (a sensor that
stopped): 1.5 periods after the last complete bundle, then once a period, it encodes the newest
``joint_states`` sample with whatever else is fresh enough, or says why it cannot.

Subscriptions only store the newest raw message; the tick validates and converts them. Any missing,
late (older than ``max_input_age_ticks`` periods; ``max_image_age_ticks`` for the height map / camera, which
real robots often produce at a lower rate), non-finite or mis-shaped input skips the tick: no
latent is published from bad input, the reason is logged (throttled) and counted in diagnostics. A tick
with no new ``joint_states`` sample skips quietly so that the history gets exactly one row per sample.

Episodes: a :class:`simdist_core.data.episodes.EpisodeTracker` (the rule the bag converter uses too; the
replay buffer takes the episode starts this node publishes on ``observation``) decides where an episode
starts: an announced ``episode_start``, a joint or base/TCP jump (``reset_jump_rad`` / ``reset_jump_m``: a
real robot picked up and put down), a gap of more than 2.5 ticks, a stamp going backwards, or a dropped
sample. The history then restarts (``history_restarts``) and the Go2 gait clock counts from that sample, so
the replayed data sees the same gait phase as the model.

The encoder is frozen during adaptation (only dynamics are finetuned), so this node never reloads.
Memory bound: 450 MiB RSS (soak peak 281 MiB Go2, 315 MiB UR5e: torch + the frozen model). What it holds:
one message per topic, ``spec.history`` history rows, ``runtime.STAT_WINDOW`` latencies.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import Image, Imu, JointState
from simdist_core.data.episodes import EpisodeConfig, EpisodeTracker, header_stamp_ns
from simdist_core.data.history import ObservationHistory
from simdist_core.planning.command_ramp import ramp_for
from simdist_core.planning.heading_hold import hold_for
from simdist_core.sim.go2_obs import yaw_from_quat
from std_msgs.msg import Float32MultiArray, Float64MultiArray, Header

from simdist_ros import msgs, qos, topics
from simdist_ros.model_swap import load_model
from simdist_ros.params import P, TunableParams, declare_table
from simdist_ros.runtime import (
    TickStats,
    Watchdog,
    manifest_get,
    process_counts,
    resolve_checkpoint,
    run_node,
    setup_torch,
)
from simdist_ros.sensors import SENSOR_TOPICS, joint_names, obs_from_messages


@dataclass(frozen=True, kw_only=True)
class EncoderParams:
    """Runtime settings of the encoder node (the encoder itself comes from the checkpoint)."""

    robot: str
    """Robot name; must match the checkpoint."""
    checkpoint: str
    """Checkpoint directory (empty = ``<repo>/checkpoints/<robot>``)."""
    device: str
    """Torch device."""
    control_hz: float
    """Tick rate; 0 = the robot spec's control rate."""
    max_input_age_ticks: float
    """A proprioceptive sample older than this many control periods is late -> skip."""
    max_image_age_ticks: float
    """Height map / camera age limit in control periods (exteroception may run slower)."""
    wait_for_exteroception: bool
    """Encode a step only once its height map / camera with the same stamp has arrived (a simulator that
    publishes every sensor per step); false: use the newest one within its age limit (a slower camera)."""
    reset_jump_rad: float
    """A joint moving more than this between two samples means an episode reset: restart the history."""
    reset_jump_m: float
    """The base (Go2) or tool tip (UR5e) moving more than this between two samples: restart the history."""
    gait_period_s: float
    """Go2 gait clock period (must match the data the model was trained on)."""
    default_command: tuple[float, ...]
    """Task command used until one arrives (Go2 ``cmd_vel``: vx, vy, yaw rate; UR5e ``fixture_pose``: the
    registered hole x, y in the base frame and yaw; set it in the robot's config YAML)."""
    command_ramp_s: float
    """Go2: ramp the velocity command the model sees from rest to the operator's over this long whenever it changes
    and at every episode start (``simdist_core.planning.command_ramp``; 0: the command at once). The recorded
    observations carry the ramped command, so finetuning learns from what the planner was asked for."""
    heading_hold: bool
    """Go2: give the command the model sees a yaw rate that holds the heading the robot had at the episode's start
    (from the IMU's orientation), advanced by the operator's yaw rate (``simdist_core.planning.heading_hold``; after
    the ramp). For models pretrained with yaw-rate commands; the recorded observations carry the held command."""
    diagnostics_period_s: float
    """Seconds between two diagnostics messages."""
    torch_threads: int
    """torch intra-op threads."""

    def __post_init__(self) -> None:
        if not np.all(np.isfinite(self.default_command)):
            raise ValueError(f"default_command must be finite, got {self.default_command=}")


ROWS = (
    P("robot", "go2", "Robot name (must match the checkpoint)", read_only=True),
    P("checkpoint", "", "Checkpoint directory; empty = <repo>/checkpoints/<robot>", read_only=True),
    P("device", "cpu", "Torch device", read_only=True),
    P("control_hz", 0.0, "Tick rate in Hz; 0 = the robot spec's rate", lo=0.0, hi=1000.0, read_only=True),
    P("max_input_age_ticks", 3.0, "Proprio age limit (control periods)", lo=1.0, hi=100.0),
    P("max_image_age_ticks", 10.0, "Height map / camera age limit (control periods)", lo=1.0, hi=1000.0),
    P("wait_for_exteroception", True, "Encode only once the step's height map / camera arrived (false: "
      "the newest within its age limit, for slower exteroception)"),
    P("reset_jump_rad", 0.5, "Joint jump (rad) between samples that restarts the history", lo=0.01, hi=10.0),
    P("reset_jump_m", 0.3, "Base/TCP jump (m) between samples that restarts the history", lo=0.001, hi=100.0),
    P("gait_period_s", 0.3, "Go2 gait clock period in seconds", lo=0.15, hi=1.5, read_only=True),
    P("default_command", (0.5, 0.0, 0.0),
      "Task command until one arrives (Go2 cmd_vel: vx m/s, vy m/s, yaw rad/s; UR5e fixture_pose: x m, y m, yaw rad)"),
    P("command_ramp_s", 0.0, "Go2: seconds the velocity command the model sees takes to reach a new cmd_vel, and "
      "from rest at each episode start (0: at once)", lo=0.0, hi=30.0, read_only=True),
    P("heading_hold", False, "Go2: the command the model sees holds the episode's start heading (IMU yaw) with a "
      "yaw rate (for models pretrained with yaw-rate commands)", read_only=True),
    P("diagnostics_period_s", 1.0, "Diagnostics period in seconds", lo=0.05, hi=60.0, read_only=True),
    P("torch_threads", 1, "torch intra-op threads", lo=1, hi=64, read_only=True),
)

_MSG_TYPES = {"joint_states": JointState, "imu": Imu, "odom": Odometry, "height_map": Image, "camera": Image,
              "wrench": WrenchStamped}  # fmt: skip


_EXTERO = ("height_map", "camera")


class SkipTick(Exception):  # noqa: N818  (control flow, not an error of the caller)
    """This tick publishes no latent; ``counter`` names the diagnostics counter, the text says why."""

    def __init__(self, counter: str, reason: str) -> None:
        super().__init__(reason)
        self.counter = counter


class EncoderNode(Node):
    """Thin adapter: sensor messages -> ``ObservationHistory`` -> ``WorldModel.encode`` -> latent message."""

    def __init__(self, node_name: str = "encoder") -> None:
        super().__init__(node_name)
        params = declare_table(self, ROWS, EncoderParams)
        self._tunable = TunableParams(self, ROWS, params, on_change=self._on_params)
        self._got_command = False
        setup_torch(params.torch_threads)
        path = resolve_checkpoint(params.checkpoint, params.robot)
        self.model, manifest = load_model(path, params.device)
        self.spec = self.model.spec
        if params.robot and params.robot != self.spec.name:
            raise ValueError(f"parameter robot={params.robot!r} but checkpoint {path} is for {self.spec.name!r}")
        if self.spec.command_dim and len(params.default_command) != self.spec.command_dim:
            raise ValueError(f"default_command has {len(params.default_command)} values, {self.spec.name} needs "
                             f"{self.spec.command_dim}")  # fmt: skip
        self.model_version = str(manifest_get(manifest, "version", "unknown"))
        self.control_hz = params.control_hz or self.spec.control_hz
        self.period_ns = int(round(1e9 / self.control_hz))
        self.history = ObservationHistory(self.spec)
        self._episodes = 0  # episodes started (history restarts), published with every latent
        self.joint_names = joint_names(self.spec.name)
        self.stats = TickStats(1.0 / self.control_hz)
        self._latest: dict[str, Any] = {}
        self._command = np.asarray(params.default_command[: self.spec.command_dim], np.float32)
        self._ramp = ramp_for(self.spec, params.command_ramp_s)  # refuses a ramp of a command that is no velocity
        self._hold = hold_for(self.spec, params.heading_hold)  # refuses to hold the heading of a fixture pose
        self._executed: np.ndarray = np.zeros(self.spec.action_dim, np.float32)
        self._executed_stamp_ns: int | None = None  # the observation the executed command answered, if stamped
        self._last_obs_ns: int | None = None
        self._bundle_stamp: Any = None  # stamp of the last bundle that triggered a tick
        self._tracker = EpisodeTracker(EpisodeConfig.for_rate(self.control_hz, joint_jump_rad=params.reset_jump_rad,
                                                                base_jump_m=params.reset_jump_m))
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {"latents": 0, "observations": 0}
        self._last_skip = ""
        self._last_skip_kind = ""
        self._input_age_s = float("nan")

        # The sensor callbacks encode, so they share the tick's group (relevant to a multi-threaded executor
        # only). The executed command, the task command and episode starts are subscribed FIRST: an executor
        # handles the messages one wait returns in subscription order, and the driver publishes the executed
        # action before the sensors it precedes, so the step's action is in place when its bundle completes.
        tick_group, io_group = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        self.create_subscription(Float64MultiArray, topics.EXECUTED_COMMAND, self._on_executed,
                                 qos.command(self.control_hz), callback_group=tick_group)  # fmt: skip
        if self.spec.command_dim:
            topic, msg_type = msgs.TASK_COMMAND_TOPICS[self.spec.name]
            self.create_subscription(msg_type, topic, self._on_task_command, qos.RELIABLE, callback_group=tick_group)
        self.create_subscription(Header, topics.EPISODE_START, self._on_episode_start, qos.EPISODE_START,
                                 callback_group=tick_group)  # before the sensors: a reset is known when they arrive
        for key in SENSOR_TOPICS[self.spec.name]:
            topic = topics.CAMERA_IMAGE if key == "camera" else getattr(topics, key.upper())
            self.create_subscription(_MSG_TYPES[key], topic, self._store(key), qos.SENSOR, callback_group=tick_group)
        self._latent_pub = self.create_publisher(Float32MultiArray, topics.LATENT, qos.LATENT(self.control_hz))
        self._observation_pub = self.create_publisher(Float32MultiArray, topics.OBSERVATION,
                                                      qos.OBSERVATION(self.control_hz))
        self._diag_pub = self.create_publisher(msgs.DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        # Catches a step whose bundle never completes (a sensor sample lost or stopped), 1.5 periods after the last.
        self._watchdog = Watchdog(self, self.period_ns, self._tick, callback_group=tick_group)
        self.create_timer(params.diagnostics_period_s, self._publish_diagnostics, callback_group=io_group)
        self.get_logger().info(f"encoder for {self.spec.name} at {self.control_hz:g} Hz, checkpoint {path}"
                               + (f", task command {self._command.tolist()} until one arrives" if self.spec.command_dim
                                  else ""))

    @property
    def params(self) -> EncoderParams:
        """Current parameter values (age limits and default command are live-tunable)."""
        return self._tunable.current

    # ---- inputs (store only) -----------------------------------------------------------------------
    def _store(self, key: str) -> Any:  # noqa: ANN401  (a subscription callback)
        def callback(msg: Any) -> None:  # noqa: ANN401
            self._latest[key] = msg
            if self._bundle_complete():
                self._bundle_stamp = self._latest["joint_states"].header.stamp  # one attempt per bundle
                self._watchdog.ticked(self.get_clock().now().nanoseconds, msgs.stamp_to_ns(self._bundle_stamp))
                self._tick()

        return callback

    def _bundle_complete(self) -> bool:
        """True when a new ``joint_states`` sample has arrived together with every other sensor of its step.

        Each bundle triggers one attempt: a bundle the tick rejects (a NaN, a wrong shape) is not retried on
        every later message of the same step. Stamps are read without validation (a malformed message
        never completes a bundle; the watchdog then reports it through the usual checks).
        """
        joints = self._latest.get("joint_states")
        if joints is None:
            return False
        try:
            t_ns = msgs.stamp_to_ns(joints.header.stamp)
            if t_ns == self._last_obs_ns or joints.header.stamp == self._bundle_stamp:
                return False
            lagging_ok = () if self.params.wait_for_exteroception else _EXTERO
            return all(key in self._latest and (key in lagging_ok
                                                or msgs.stamp_to_ns(self._latest[key].header.stamp) >= t_ns)
                       for key in SENSOR_TOPICS[self.spec.name])
        except (AttributeError, TypeError, ValueError):
            return False

    def _on_executed(self, msg: Float64MultiArray) -> None:
        try:
            self._executed = np.clip(msgs.command_to_array(msg, self.spec.action_dim), -1.0, 1.0)
            self._executed_stamp_ns = msgs.command_stamp_ns(msg)
        except msgs.MessageError as exc:
            self._skip_log("bad_executed_command", str(exc))

    def _on_params(self, params: EncoderParams) -> None:
        self._tracker.config = replace(self._tracker.config, joint_jump_rad=params.reset_jump_rad,
                                        base_jump_m=params.reset_jump_m)
        if not self._got_command and self.spec.command_dim:
            self._command = np.asarray(params.default_command[: self.spec.command_dim], np.float32)

    def _on_episode_start(self, msg: Header) -> None:
        """A reset announced by the simulated robot: the history restarts at the sample it names."""
        try:
            self._tracker.announce(header_stamp_ns(msg))
        except ValueError as exc:  # untrusted input: counted and ignored (a forged stamp could only split)
            self._count_and_log("bad_episode_start", f"ignoring episode_start: {exc}")

    def _on_task_command(self, msg: Any) -> None:  # noqa: ANN401  (Twist or PoseStamped)
        try:
            self._command = msgs.task_command_to_array(self.spec.name, msg)
            self._got_command = True
        except msgs.MessageError as exc:  # keep the last good command; anything on DDS may publish here
            with self._lock:
                self.counts["bad_task_command"] = self.counts.get("bad_task_command", 0) + 1
            self.get_logger().warning(f"task command rejected, keeping {self._command.tolist()}: {exc}",
                                      throttle_duration_sec=1.0)

    # ---- the tick ----------------------------------------------------------------------------------
    def _tick(self) -> None:
        now_ns = self.get_clock().now().nanoseconds
        self.stats.start(now_ns)
        try:
            obs, obs_t_ns, restart = self._observation(now_ns)
            restart = restart or not self.history.ready
            action_before = self._executed
            if restart:
                self.history.reset(obs)
                self._episodes += 1
            else:
                self.history.record_action(action_before)
                self.history.push(obs)
            latent = self._encode()
            z = latent.z[0].cpu().numpy()  # (D,)
            context = latent.context[0].cpu().numpy()  # (S, W)
            if not (np.all(np.isfinite(z)) and np.all(np.isfinite(context))):
                raise SkipTick("nonfinite_latent", "encoder produced a non-finite latent")
        except SkipTick as skip:
            if skip.counter != "no_new_sample":
                self._skip_log(skip.counter, str(skip))
            self.stats.stop()
            return
        # episode_start tells the planner to drop its warm start, as the in-process evaluation does at every reset.
        start = np.array([float(restart)], np.float32)
        episode = np.array([self._episodes], np.float32)  # exact up to 2**24 episodes
        blocks = {"z": z, "context": context, "episode_start": start, "episode": episode,
                  "applied_delay": np.array([self._applied_delay(obs_t_ns)], np.float32)}
        self._latent_pub.publish(msgs.make_latent(blocks, obs_t_ns))
        self.counts["latents"] += 1
        # After the latent (the planner waits for that one), and only for a subscriber (the replay buffer).
        if self._observation_pub.get_subscription_count():
            self._observation_pub.publish(msgs.make_observation(obs, action_before, obs_t_ns, episode_start=restart,
                                                                episode=self._episodes))
            self.counts["observations"] += 1
        self._last_skip, self._last_skip_kind = "", ""
        self.stats.stop()

    def _applied_delay(self, obs_t_ns: int) -> float:
        """Control periods between the observation the last executed command answered and the state it acted on.

        The step that ended at ``obs_t_ns`` started one period earlier; a command answering that state had delay 0.
        -1 when unknown (an unstamped command: a hold, a teleop tool, a driver that does not stamp).
        """
        stamp = self._executed_stamp_ns
        if stamp is None or stamp > obs_t_ns:
            return -1.0
        return float(max(0, round((obs_t_ns - self.period_ns - stamp) / self.period_ns)))

    def _encode(self) -> Any:  # noqa: ANN401  (simdist_core.models.Latent)
        try:
            with torch.inference_mode():
                return self.model.encode(self.history.model_input(self.params.device))
        except (ValueError, KeyError, RuntimeError) as exc:  # validated again by the model: report, skip
            raise SkipTick("encoder_error", f"encoder refused the window: {exc}") from None

    def _observation(self, now_ns: int) -> tuple[dict[str, np.ndarray], int, bool]:
        """Validate and convert the newest messages into one observation; raises SkipTick."""
        latest = dict(self._latest)
        missing = [k for k in SENSOR_TOPICS[self.spec.name] if k not in latest]
        if missing:
            raise SkipTick("waiting_for_input", f"no message yet on {missing}")
        stamps = {k: msgs.stamp_to_ns(m.header.stamp) for k, m in latest.items()}
        obs_t_ns = stamps["joint_states"]  # the latent's time is the proprio time (what dynamics step from)
        self._input_age_s = (now_ns - obs_t_ns) * 1e-9
        limits = {k: self.params.max_image_age_ticks if k in _EXTERO else self.params.max_input_age_ticks
                  for k in stamps}  # fmt: skip
        late = {k: round((now_ns - t) * 1e-9, 3) for k, t in stamps.items() if now_ns - t > limits[k] * self.period_ns}
        if late:
            raise SkipTick("late_input", f"inputs older than their age limit (s): {late}")
        if stamps["joint_states"] == self._last_obs_ns:
            raise SkipTick("no_new_sample", "no new joint_states sample")
        restart = self._new_episode(latest, obs_t_ns)
        phase_time_s = self._tracker.clock_s(obs_t_ns)  # the gait clock restarts with the episode, as in the env
        try:
            obs = obs_from_messages(self.spec, latest, self.joint_names, self._model_command(restart, latest),
                                    phase_time_s, self.params.gait_period_s)  # fmt: skip
        except ValueError as exc:  # MessageError is a ValueError, so is a core proprio check
            self._tracker.break_episode()  # a hole in the history, as a dropped step in the replay data
            raise SkipTick("bad_input", f"dropping observation: {exc}") from None
        self._last_obs_ns = stamps["joint_states"]
        return obs, obs_t_ns, restart

    def _model_command(self, restart: bool, latest: dict[str, Any]) -> np.ndarray:
        """The task command this observation carries: the operator's or its ramp, then the heading hold's yaw rate.

        The ramp starts from rest and the hold's target at the heading the robot has, with each episode.

        Raises:
            MessageError: the IMU orientation the heading hold needs is not a unit quaternion.
        """
        command = self._command
        if self._ramp is not None:
            command = self._ramp.reset(command) if restart else self._ramp.step(command)
        if self._hold is not None:
            yaw = yaw_from_quat(msgs.imu_to_arrays(latest["imu"])[0])
            if restart:
                self._hold.reset(yaw)
            command = self._hold.command(command, yaw)
        return command

    def _new_episode(self, latest: dict[str, Any], obs_t_ns: int) -> bool:
        """True if this sample starts an episode (:class:`EpisodeTracker`): first sample, announced reset, jump, gap.

        The history then restarts from this observation (first row repeated, zero actions), which is how
        training windows start an episode.
        """
        try:
            pos, _, _ = msgs.joint_state_to_arrays(latest["joint_states"], self.joint_names)
            base = msgs.odom_to_arrays(latest["odom"])[0]
        except msgs.MessageError as exc:
            self._tracker.break_episode()
            raise SkipTick("bad_input", f"dropping observation: {exc}") from None
        reason = self._tracker.step(obs_t_ns, pos, base)
        if reason is None:
            return False
        if self._tracker.episodes_started > 1:  # the first sample starts the history anyway
            joint_jump, base_jump = self._tracker.last_jump
            with self._lock:
                self.counts[f"episode_{reason}"] = self.counts.get(f"episode_{reason}", 0) + 1
            self._count_and_log("history_restarts", f"new episode ({reason}; joints moved {joint_jump:.2f} rad, base "
                                f"{base_jump:.2f} m): restarting the history")  # fmt: skip
        return True

    def _count_and_log(self, counter: str, message: str) -> None:
        with self._lock:
            self.counts[counter] = self.counts.get(counter, 0) + 1
        self.get_logger().warning(message, throttle_duration_sec=1.0)

    def _skip_log(self, counter: str, reason: str) -> None:
        with self._lock:
            self.counts[counter] = self.counts.get(counter, 0) + 1
        kind = f"{counter}:{reason[:40]}"
        if kind != self._last_skip_kind:  # a new kind of problem is logged at once, repeats throttled
            self.get_logger().warning(f"no latent this tick: {reason}")
        else:
            self.get_logger().warning(f"no latent this tick: {reason}", throttle_duration_sec=1.0)
        self._last_skip, self._last_skip_kind = reason, kind

    # ---- diagnostics -------------------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        p50, p99 = self.stats.percentiles_ms()
        with self._lock:
            counts = dict(self.counts)
        values: dict[str, object] = {
            "model_version": self.model_version,
            "tick_latency_p50_ms": p50,
            "tick_latency_p99_ms": p99,
            "ticks": self.stats.ticks,
            "deadline_misses": self.stats.deadline_misses,
            "input_age_s": self._input_age_s,
            **counts,
            **process_counts(),
        }
        level = "warn" if self._last_skip else "ok"
        message = self._last_skip or f"encoding at {self.control_hz:g} Hz"
        status = msgs.make_status(f"{self.get_name()}: encoder", level, message, values, self.spec.name)
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def close(self) -> None:
        """Stop the watchdog thread (before rclpy shuts down)."""
        self._watchdog.close()


def main(args: list[str] | None = None) -> int:
    """Entry point ``encoder_node`` (``--ros-args -p checkpoint:=... -p use_sim_time:=true``)."""
    return run_node(EncoderNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
