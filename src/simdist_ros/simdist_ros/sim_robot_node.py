"""Simulated robot node: a MuJoCo task behind exactly the topics a real driver exposes.

Graph role (topics relative, see ``simdist_ros.topics``):
    in   ``joint_command`` (Float64MultiArray normalised action, qos.DRIVER_COMMAND, as a real driver),
         ``estop`` (Bool: True latches)
    srv  ``estop``, ``reset_estop`` (std_srvs/Trigger)
    out  sensors (qos.SENSOR): ``joint_states``, ``imu``, ``odom``, ``height_map`` (32FC1), ``foot_contacts`` (Go2);
         ``joint_states``, ``odom`` (TCP pose), ``wrench``, ``camera/image_raw`` (rgb8) (UR5e);
         ``executed_command`` (qos.executed: reliable, 2 s of history), the task's command as an operator
         would give it (qos.RELIABLE: ``cmd_vel`` Twist for Go2, ``fixture_pose`` PoseStamped for UR5e; when it
         changes and once a simulated second),
         ``episode_start`` (std_msgs/Header, qos.EPISODE_START: every reset, before its sensors),
         ``episode_result`` (std_msgs/String JSON, qos.EPISODE_RESULT: every finished episode),
         ``/clock``, ``/diagnostics`` (Go2 also ``progress_m`` and ``commanded_m``: forward distance over all
         episodes and the distance the commands asked for, so a monitor needs no 50 Hz odometry); for RViz
         (``robot_tf``): ``robot_description`` (URDF), ``/tf_static``, and
         ``/tf`` with every sensor sample (joint frames; Go2 ``odom`` -> ``base_link`` / ``base_yaw``)

The node owns simulated time: it runs on wall time itself (``use_sim_time`` false), steps the env one
control period per loop in a worker thread, and publishes ``/clock`` so every other node can follow with
``use_sim_time:=true``. ``real_time_factor`` paces the loop (1 = real time, 0 = as fast as the CPU allows);
with ``real_time_factor_floor`` > 0 the pace follows the control loop (``simdist_core.sim.pacing``): it drops
(down to the floor) while fewer than 95 % of the steps get a fresh command and climbs back while the loop keeps
up, as a simulator that cannot keep real time slows down (``real_time_factor_now`` in diagnostics);
``lockstep`` additionally waits for a command after every step, so a slow planner slows sim time instead of
being overrun by it (results independent of the CPU).

Timing, measured: a planner command carries the stamp of the observation it answers
(``msgs.make_command``). Each step counts whether it applied a command that arrived since the previous
step (``fresh_command_steps``) and how many control periods old the answered observation is when the
command starts acting (``command_delay_periods_<n>``: 0 = it answers the state the step starts from, as in
the in-process evaluation; 1 = one period late; ...). In lockstep mode a step waits for the command that
answers the newest observation, so the delay is 0 by construction. A command that carries the plan (the planner's
``send_plan``) is applied at the row for its delay (``play_plan``, counted in ``plan_row_steps``): a step that gets
no fresh command plays the plan on instead of repeating an action planned for an older state.

Safety, as in a real driver: a command older than ``command_timeout_s`` of sim time (or none at all)
-> hold the default pose (zero action), counted and logged; out-of-range commands are clamped and
counted. A fall (or the episode time limit) resets the task and says so in the log and diagnostics, and
on ``episode_start``: its stamp is the stamp of the new episode's first observation, its ``frame_id`` the
reason (``start``, ``fell``, ``time_limit``, ``success``, ``sim_error``). The encoder and the replay buffer
cut the episode there, even where the reset pose is close to the last one (see
``simdist_core.data.episodes``); real drivers announce nothing, their resets are caught by the jump rule.
Every finished episode is also reported on ``episode_result`` (JSON: index, reset seed, cause, start and
end in sim seconds, the task's own metrics): the simulator's verdict, which a benchmark or a user's
evaluation script can compare episode by episode with ``simdist eval`` (``simdist bench parity`` does).

Memory bound: 600 MiB RSS (soak peak 321 MiB Go2, 437 MiB UR5e with its renderer). What it holds: the env,
one latest command, fixed-size counters.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, Imu, JointState
from simdist_core.config import parse_overrides
from simdist_core.planning.in_flight import plan_row
from simdist_core.robots import get_robot
from simdist_core.sim.base import RobotEnv, make_env
from simdist_core.sim.pacing import RealTimeGovernor
from simdist_core.sim.robot_frames import RobotFrames, layout
from std_msgs.msg import Bool, Float64MultiArray, Header, String
from std_srvs.srv import Trigger

from simdist_ros import msgs, qos, topics
from simdist_ros.params import P, TunableParams, declare_table
from simdist_ros.robot_tf import RobotTf
from simdist_ros.runtime import process_counts, run_node
from simdist_ros.sensors import PUBLISHED_SENSORS, joint_names, sensors_to_messages, tf_inputs

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering (UR5e camera) on a machine without a display

DELAY_BINS = 5
"""Observation-to-command delays are counted per whole control period 0..4, and 5 or more."""
TASK_COMMAND_REPEAT_NS = 1_000_000_000
"""The task's command goes out when it changes and again after this much sim time (for late subscribers)."""


@dataclass(frozen=True, kw_only=True)
class SimRobotParams:
    """Runtime settings of the simulated robot."""

    task: str
    """Task id ``<robot>/<task>`` in ``simdist_core.sim.base.TASKS``."""
    overrides: tuple[str, ...]
    """``key=value`` env config overrides, e.g. ``terrain.friction=0.2``."""
    seed: int
    """Seed of the first reset (later resets continue the env's generator, unless ``episode_seeds``)."""
    episode_seeds: bool
    """Reset episode k (from 0) with ``seed + k``, as ``simdist eval`` does, so the graph and the in-process
    evaluation can be compared on the same episodes (``simdist bench parity``)."""
    real_time_factor: float
    """Sim seconds per wall second; 0 = as fast as possible."""
    real_time_factor_floor: float
    """0: pace at ``real_time_factor``; > 0: slow down to this while the control loop misses commands."""
    command_timeout_s: float
    """Sim seconds after which a command is stale (watchdog -> default pose)."""
    play_plan: bool
    """A stamped command that carries the plan (the planner's ``send_plan``): apply the row for the step it acts
    on, d periods after its observation, instead of repeating its action while no newer command has arrived
    (``simdist_core.planning.in_flight.plan_row``)."""
    lockstep: bool
    """After each step wait (wall clock) for the next command before stepping again: sim time then runs as
    fast as the slowest node allows, so results do not depend on the CPU (``real_time_factor`` still caps it)."""
    lockstep_timeout_s: float
    """Wall seconds to wait for a command in lockstep mode before stepping anyway (watchdog applies)."""
    reset_on_fall: bool
    """Reset the task when the robot falls (else keep stepping the fallen robot)."""
    publish_task_command: bool
    """Publish the task's command as an operator would: Go2 velocity on ``cmd_vel``, UR5e registered fixture
    pose on ``fixture_pose`` (the env's estimate, a few mm off the true hole)."""
    diagnostics_period_s: float
    """Wall seconds between two diagnostics messages."""
    publish_tf: bool
    """Publish the robot description and its frames (``/tf``, ``/tf_static``) for RViz."""

    def __post_init__(self) -> None:
        if "/" not in self.task:
            raise ValueError(f"task must be '<robot>/<task>', e.g. 'go2/flat', got {self.task=!r}")


ROWS = (
    P("task", "go2/flat", "Task id <robot>/<task> (simdist_core.sim.base.TASKS)", read_only=True),
    P("overrides", (), "Env config overrides key=value, e.g. terrain.friction=0.2", read_only=True),
    P("seed", 0, "Seed of the first reset", lo=0, hi=2**31 - 1, read_only=True),
    P("episode_seeds", False, "Reset episode k with seed + k (as simdist eval does)", read_only=True),
    P("real_time_factor", 1.0, "Sim seconds per wall second; 0 = as fast as possible", lo=0.0, hi=1000.0),
    P("real_time_factor_floor", 0.0, "0 = fixed pace; > 0 = slow down to this while the loop misses commands",
      lo=0.0, hi=1000.0, read_only=True),
    P("command_timeout_s", 0.2, "Sim seconds after which a command is stale (watchdog)", lo=0.0, hi=10.0),
    P("play_plan", True, "Apply the row of a plan-carrying command for the step it acts on (else its action)"),
    P("lockstep", False, "Wait for a command after every step (CPU-independent sim time)"),
    P("lockstep_timeout_s", 2.0, "Lockstep: wall seconds to wait for a command", lo=0.001, hi=600.0),
    P("reset_on_fall", True, "Reset the task when the robot falls"),
    P("publish_task_command", True, "Publish the task's command (Go2 cmd_vel, UR5e fixture_pose)"),
    P("diagnostics_period_s", 1.0, "Diagnostics period in wall seconds", lo=0.05, hi=60.0, read_only=True),
    P("publish_tf", True, "Publish robot_description, /tf and /tf_static for RViz", read_only=True),
)

_SENSOR_TYPES = {"joint_states": JointState, "imu": Imu, "odom": Odometry, "height_map": Image,
                 "camera": Image, "wrench": WrenchStamped, "foot_contacts": Float64MultiArray}  # fmt: skip
_SENSOR_TOPIC = {"camera": topics.CAMERA_IMAGE}


class SimRobotNode(Node):
    """Thin adapter: command message -> ``RobotEnv.step`` -> sensor messages + ``/clock``."""

    def __init__(self, node_name: str = "sim_robot") -> None:
        super().__init__(node_name)
        params = declare_table(self, ROWS, SimRobotParams)
        self._tunable = TunableParams(self, ROWS, params)
        self.env: RobotEnv | None = None
        self.spec = get_robot(params.task.split("/")[0])
        self.names = joint_names(self.spec.name)
        self.dt_ns = int(round(1e9 / self.spec.control_hz))
        self.sim_ns = 0
        self._command: tuple[np.ndarray, int, int | None, int, np.ndarray | None] | None = None
        """(action, sim time received, stamp of the observation it answers or None, arrival number, plan or None)."""
        self._applied_arrival = -1
        self._lock = threading.Lock()
        self._env_lock = threading.Lock()  # the sim thread steps, the diagnostics timer reads metrics
        self._cmd_cond = threading.Condition()  # lockstep: the sim thread waits for the next command
        self.counts = {"steps": 0, "episodes": 1, "falls": 0, "successes": 0, "time_limits": 0, "watchdog_holds": 0,
                       "clamped_commands": 0, "bad_commands": 0, "commands": 0, "estop_holds": 0,
                       "fresh_command_steps": 0, "unstamped_command_steps": 0, "plan_row_steps": 0,
                       **{_delay_key(n): 0 for n in range(DELAY_BINS + 1)}}  # fmt: skip
        self._watchdog_active = True
        self._governor: RealTimeGovernor | None = None  # made by the sim thread when the pace may follow the loop
        self._rtf_window = (time.monotonic(), 0)
        # Running totals over all episodes (diagnostics ``progress_m`` / ``commanded_m``): a monitor reads the
        # distance at the diagnostics rate instead of subscribing to 50 Hz odometry (~0.4 ms of a core per message).
        self._finished_progress_m = 0.0
        self._commanded_m = 0.0
        self._task_command_sent: tuple[np.ndarray, int] | None = None  # (command, sim time) last published

        self._pubs = {}
        for key in PUBLISHED_SENSORS[self.spec.name]:  # this robot's sensors only (least privilege)
            msg_type = _SENSOR_TYPES[key]
            topic = _SENSOR_TOPIC[key] if key in _SENSOR_TOPIC else getattr(topics, key.upper())
            self._pubs[key] = self.create_publisher(msg_type, topic, qos.SENSOR)
        self._clock_pub = self.create_publisher(Clock, topics.CLOCK, QoSProfile(depth=10))
        self._exec_pub = self.create_publisher(
            Float64MultiArray, topics.EXECUTED_COMMAND, qos.executed(self.spec.control_hz)
        )
        command_topic, command_type = msgs.TASK_COMMAND_TOPICS[self.spec.name]
        self._task_command_pub = self.create_publisher(command_type, command_topic, qos.RELIABLE)
        self._episode_pub = self.create_publisher(Header, topics.EPISODE_START, qos.EPISODE_START)
        self._result_pub = self.create_publisher(String, topics.EPISODE_RESULT, qos.EPISODE_RESULT)
        self._episode_seed: int | None = params.seed  # the reset seed of the running episode (None: not known)
        self._episode_start_ns = 0
        self._diag_pub = self.create_publisher(msgs.DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        self.create_subscription(Float64MultiArray, topics.COMMAND, self._on_command, qos.DRIVER_COMMAND)
        self._estop_reason = ""
        self._applied_stamp_ns: int | None = None  # observation stamp of the command applied in the last step
        self.create_subscription(Bool, topics.ESTOP, self._on_estop, 10)
        self.create_service(Trigger, "estop", lambda _req, resp: self._estop_service(resp, latch=True))
        self.create_service(Trigger, "reset_estop", lambda _req, resp: self._estop_service(resp, latch=False))
        self.create_timer(params.diagnostics_period_s, self._publish_diagnostics)
        self._robot_tf: RobotTf | None = None  # made from the env's model once the sim thread has the env

        # The env lives in the simulation thread: an EGL renderer (UR5e camera) is bound to the thread that
        # created it. The constructor waits for the first reset so a broken task fails the process at start.
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, args=(params,), name="sim_loop", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            self._thread.join()
            raise RuntimeError(f"could not start task {params.task!r}: {self._start_error}") from self._start_error
        self.get_logger().info(
            f"simulating {params.task} at {self.spec.control_hz:g} Hz, real_time_factor {params.real_time_factor:g}"
            + (f", overrides {list(params.overrides)}" if params.overrides else "")
        )

    # ---- commands ----------------------------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray) -> None:
        try:
            action, plan = msgs.read_command(msg, self.spec.action_dim)
        except msgs.MessageError as exc:
            self._count("bad_commands")
            self.get_logger().warning(f"ignoring command: {exc}", throttle_duration_sec=1.0)
            return
        with self._lock:
            self.counts["commands"] += 1
            self._command = (action, self.sim_ns, msgs.command_stamp_ns(msg), self.counts["commands"], plan)
        with self._cmd_cond:
            self._cmd_cond.notify_all()

    def _count(self, key: str) -> None:
        with self._lock:
            self.counts[key] += 1

    def _on_estop(self, msg: Bool) -> None:
        if msg.data and not self._estop_reason:
            self._estop_reason = "estop topic"
            self.get_logger().error("e-stop latched (estop topic): holding the default pose until reset_estop")

    def _estop_service(self, response: Trigger.Response, latch: bool) -> Trigger.Response:
        if latch:
            self._estop_reason = self._estop_reason or "estop service"
            self.get_logger().error("e-stop latched (estop service): holding the default pose until reset_estop")
            response.message = "e-stop latched: default pose until reset_estop"
        else:
            self._estop_reason = ""
            self.get_logger().warning("e-stop reset: following commands again")
            response.message = "e-stop reset"
        response.success = True
        return response

    def _action(self) -> np.ndarray:
        """The command to apply now: the latest fresh one (clamped), else the default pose (watchdog, e-stop).

        The simulated e-stop holds the default pose: the env's low-level controller has no damping mode.
        """
        self._applied_stamp_ns = None  # the observation the applied command answers (None: hold or unstamped)
        if self._estop_reason:
            self._count("estop_holds")
            return np.zeros(self.spec.action_dim)
        timeout_ns = self._tunable.current.command_timeout_s * 1e9
        latest = self._command
        if latest is None or self.sim_ns - latest[1] > timeout_ns:
            self._count("watchdog_holds")
            if not self._watchdog_active:
                self.get_logger().warning("command watchdog: no fresh command, holding the default pose")
            self._watchdog_active = True
            return np.zeros(self.spec.action_dim)
        if self._watchdog_active:
            self.get_logger().info("command watchdog: fresh commands, following them")
        self._watchdog_active = False
        periods = self._count_timing(latest)
        self._applied_stamp_ns = latest[2]
        action, plan = latest[0], latest[4]
        if plan is not None and periods is not None and self._tunable.current.play_plan:
            action = plan_row(plan, periods)
            self._count("plan_row_steps")
        clipped = np.clip(action, -1.0, 1.0)
        if not np.array_equal(clipped, action):
            self._count("clamped_commands")
            self.get_logger().warning(f"clamped command to [-1, 1]: {action}", throttle_duration_sec=1.0)
        return clipped

    def _count_timing(self, command: tuple[np.ndarray, int, int | None, int, np.ndarray | None]) -> int | None:
        """Count a fresh command and the delay of the observation it answers (see the module docstring).

        Returns that delay in control periods (None: an unstamped command).
        """
        _, _, stamp_ns, arrival, _ = command
        with self._lock:
            if arrival != self._applied_arrival:
                self.counts["fresh_command_steps"] += 1
                self._applied_arrival = arrival
            if stamp_ns is None:
                self.counts["unstamped_command_steps"] += 1
                return None
            periods = max(0, int(round((self.sim_ns - stamp_ns) / self.dt_ns)))
            self.counts[_delay_key(min(periods, DELAY_BINS))] += 1
        return periods

    # ---- the simulation loop -----------------------------------------------------------------------
    def _loop(self, params: SimRobotParams) -> None:
        try:
            self.env = make_env(params.task, parse_overrides(params.overrides))
            if params.publish_tf:  # the simulator's own compiled model: TF and URDF are its kinematics
                self._robot_tf = RobotTf(self, self.spec.name, RobotFrames(self.env.model, layout(self.spec.name)))
            self.env.reset(seed=params.seed)
            self._announce_episode("start", self.sim_ns)
            self._publish_state(self._sensors(None))
        except Exception as exc:  # noqa: BLE001  (reported by the constructor, which fails the process)
            self._start_error = exc
            return
        finally:
            self._ready.set()
        next_wall = time.monotonic()
        while not self._stop.is_set():
            sim_before_ns = self.sim_ns
            steps_before, fresh_before = self.counts["steps"], self.counts["fresh_command_steps"]
            try:
                before = self.counts["commands"]
                self.step_once()
                self._wait_for_command(before)
            except (ValueError, RuntimeError, FloatingPointError) as exc:  # e.g. unstable physics: reset, say so
                self.get_logger().error(f"simulation step failed ({exc}); resetting the task")
                with self._env_lock:
                    self._report_episode("sim_error", {})  # the env's metrics may be what failed
                    self._reset_env()
                    # The reset state is not published: the next step's observation (one period on) opens the
                    # episode. Any stamp already published is <= sim_ns, so the boundary is never in the past.
                    self._episode_start_ns = self.sim_ns + self.dt_ns
                    self._announce_episode("sim_error", self._episode_start_ns)
            periods = max(1, (self.sim_ns - sim_before_ns) // self.dt_ns)
            rtf = self._pace(params, self.counts["steps"] - steps_before,
                             self.counts["fresh_command_steps"] - fresh_before)
            if rtf <= 0.0:
                next_wall = time.monotonic()
                continue
            # A reset takes one control period of sim time (its state has a stamp of its own), and the same
            # wall time, so the planner has a full period to answer the episode's first observation.
            next_wall += periods * self.dt_ns * 1e-9 / rtf
            delay = next_wall - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -0.5:  # far behind (a slow machine): do not try to catch up in a burst
                next_wall = time.monotonic()
        close = getattr(self.env, "close", None)
        if close is not None:
            close()  # in this thread: the renderer's GL context belongs to it

    def _pace(self, params: SimRobotParams, steps: int, fresh: int) -> float:
        """The real-time factor of the next step: the parameter's, or the governor's below it."""
        current = self._tunable.current  # real_time_factor and lockstep may change at run time
        asked = current.real_time_factor
        if params.real_time_factor_floor <= 0.0 or current.lockstep or asked <= 0.0:
            return asked  # fixed pace; lockstep already slows sim time to the planner's; 0 = unpaced
        if self._governor is None:
            self._governor = RealTimeGovernor(ceiling=asked, floor=min(params.real_time_factor_floor, asked),
                                              window_steps=max(1, int(round(5.0 * self.spec.control_hz))))
        elif asked != self._governor.ceiling:
            self._governor.set_ceiling(asked)
        reductions = self._governor.reductions
        rtf = self._governor.record(steps, min(fresh, steps))
        if self._governor.reductions > reductions:
            self.get_logger().warning(f"the control loop missed commands: real-time factor lowered to {rtf:.2f}")
        return rtf

    def _wait_for_command(self, count_before_step: int) -> None:
        """Lockstep: block until the command answering the newest observation arrives (or the timeout passes).

        A stamped command must answer an observation at least as new as the one just published; an
        unstamped one (a teleop tool) only has to be newer than the step.
        """
        params = self._tunable.current
        if not params.lockstep:
            return

        def answered() -> bool:
            latest = self._command
            if latest is None or latest[3] <= count_before_step:
                return False
            return latest[2] is None or latest[2] >= self.sim_ns

        with self._cmd_cond:
            self._cmd_cond.wait_for(lambda: answered() or self._stop.is_set(), params.lockstep_timeout_s)

    def step_once(self) -> None:
        """Advance the simulation one control period and publish everything."""
        with self._env_lock:
            self._step_locked()

    def _step_locked(self) -> None:
        action = self._action()
        result = self.env.step(action)
        self.sim_ns += self.dt_ns
        self._count("steps")
        self._commanded_m += self._commanded_speed() * self.dt_ns * 1e-9
        # Before the sensors (it precedes them), stamped with the observation it answered: the encoder tells the
        # planner the delay each step really had, which the planner plans around (``compensate_delay``).
        self._exec_pub.publish(msgs.make_executed(action, self._applied_stamp_ns))
        self._publish_state(self._sensors(result.obs))
        if result.terminated or result.truncated:
            params = self._tunable.current
            episode_metrics = self.env.metrics()
            # A task may terminate on success (UR5e insertion) as well as on failure (Go2 fall).
            succeeded = bool(episode_metrics.get("success", False))
            if succeeded:
                reason, counter, cause = "completed the task", "successes", "success"
            elif result.terminated:
                reason, counter, cause = "fell", "falls", "fell"
            else:
                reason, counter, cause = "reached the episode time limit", "time_limits", "time_limit"
            self._count(counter)
            if counter == "falls" and not params.reset_on_fall:
                return
            metrics = ", ".join(f"{k}={v:.3g}" for k, v in episode_metrics.items())
            log_episode_end(self.get_logger(), succeeded,
                            f"robot {reason} at t={self.sim_ns * 1e-9:.2f} s ({metrics}); resetting the task")
            self._report_episode(cause, episode_metrics)
            self._finished_progress_m += float(episode_metrics.get("forward_progress_m", 0.0))
            self._reset_env()
            self.sim_ns += self.dt_ns  # the reset takes one control period: its state gets a stamp of its own
            self._episode_start_ns = self.sim_ns
            self._announce_episode(cause, self.sim_ns)  # before the sensors it announces
            self._publish_state(self._sensors(None))

    def _commanded_speed(self) -> float:
        """Speed the task asks for along its progress direction (Go2: |vx, vy| of the episode's command; else 0)."""
        command = getattr(self.env, "command", None)
        if self.spec.name != "go2" or command is None:
            return 0.0
        return float(np.hypot(command[0], command[1]))

    def _reset_env(self) -> None:
        """Start the next episode: seed ``seed + k`` for episode k with ``episode_seeds``, else the env's generator."""
        params = self._tunable.current
        self._episode_seed = params.seed + self.counts["episodes"] if params.episode_seeds else None
        self.env.reset(seed=self._episode_seed)
        self._count("episodes")

    def _report_episode(self, cause: str, metrics: dict[str, float]) -> None:
        """Publish ``episode_result`` for the episode that just ended (``counts["episodes"]`` started so far)."""
        result = {"episode": self.counts["episodes"] - 1, "seed": self._episode_seed, "cause": cause,
                  "start_s": round(self._episode_start_ns * 1e-9, 6), "end_s": round(self.sim_ns * 1e-9, 6),
                  "metrics": {k: float(v) for k, v in metrics.items()}}  # fmt: skip
        self._result_pub.publish(String(data=json.dumps(result)))

    def _announce_episode(self, cause: str, t_ns: int) -> None:
        """Publish ``episode_start``: a new episode begins with the observation stamped ``t_ns``."""
        self._episode_pub.publish(Header(stamp=msgs.ns_to_stamp(t_ns), frame_id=cause))

    def _sensors(self, obs: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
        if self.spec.image_shape is None:
            return self.env.sensors()
        sensors = self.env.sensors(image=obs is None)  # reuse the image the step already rendered
        if obs is not None:
            sensors["image"] = obs["image"]
        return sensors

    def _publish_state(self, sensors: dict[str, np.ndarray]) -> None:
        # The task command goes out first (a new episode's command is in place when the encoder's sensor
        # bundle for the episode's first observation completes), then the sensors, then /clock (a node whose
        # timer fires on the clock update already has them).
        command = getattr(self.env, "command", None)
        if self.spec.command_dim and command is not None and self._tunable.current.publish_task_command:
            self._publish_task_command(np.asarray(command, np.float64))
        for key, msg in sensors_to_messages(self.spec.name, sensors, self.names, self.sim_ns).items():
            publisher = self._pubs[key]
            if publisher.get_subscription_count():  # a sensor nobody reads (foot_contacts) still cost ~0.2 ms
                publisher.publish(msg)
        if self._robot_tf is not None:
            self._robot_tf.publish(self.sim_ns, *tf_inputs(self.spec.name, sensors))
        self._clock_pub.publish(msgs.make_clock(self.sim_ns))

    def _publish_task_command(self, command: np.ndarray) -> None:
        """Publish the task's command when it changes, and again every ``TASK_COMMAND_REPEAT_NS`` of sim time.

        An operator's command changes rarely (here: at resets); sending it with every step cost a message per
        control period to the simulator and to every subscriber (~0.3 ms to publish and ~0.4 ms to receive one
        on the 2-core VM). The repeat reaches a subscriber that joined late (the topic is volatile, as
        ``cmd_vel`` from a teleop tool is); until then the encoder uses its ``default_command``.
        """
        last = self._task_command_sent
        if last is not None and np.array_equal(last[0], command) and self.sim_ns - last[1] < TASK_COMMAND_REPEAT_NS:
            return
        self._task_command_pub.publish(msgs.make_task_command(self.spec.name, command, self.sim_ns))
        self._task_command_sent = (command.copy(), self.sim_ns)

    # ---- diagnostics -------------------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        with self._env_lock:  # one consistent snapshot: no step or reset between the counters and the metrics
            with self._lock:
                counts = dict(self.counts)
            sim_ns = self.sim_ns
            metrics = self.env.metrics() if self.env is not None else {}
            finished_m, commanded_m = self._finished_progress_m, self._commanded_m
        wall0, steps0 = self._rtf_window
        now = time.monotonic()
        rtf = (counts["steps"] - steps0) * self.dt_ns * 1e-9 / max(now - wall0, 1e-9)
        self._rtf_window = (now, counts["steps"])
        p50, p99 = delay_percentiles({n: counts[_delay_key(n)] for n in range(DELAY_BINS + 1)})
        values: dict[str, object] = {"sim_time_s": sim_ns * 1e-9, "achieved_real_time_factor": rtf, **counts,
                                     "command_delay_p50_periods": float("nan") if p50 is None else p50,
                                     "command_delay_p99_periods": float("nan") if p99 is None else p99,
                                     **process_counts()}
        governor = self._governor
        if governor is not None:
            values.update(real_time_factor_now=governor.rtf, real_time_factor_reductions=governor.reductions)
        values.update({f"metric/{k}": float(v) for k, v in metrics.items()})
        if "forward_progress_m" in metrics:  # cumulative over episodes (a fall's reset is not progress)
            values["progress_m"] = finished_m + float(metrics["forward_progress_m"])
            values["commanded_m"] = commanded_m
        if self._estop_reason:
            level, message = "error", f"e-stop latched ({self._estop_reason}): default pose until reset_estop"
        elif self._watchdog_active:
            level, message = "warn", "watchdog: holding default pose"
        else:
            level, message = "ok", "following commands"
        status = msgs.make_status(f"{self.get_name()}: sim robot", level, message, values, self.spec.name)
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def close(self) -> None:
        """Stop and join the simulation thread (before rclpy shuts down)."""
        self._stop.set()
        with self._cmd_cond:
            self._cmd_cond.notify_all()  # wake a lockstep wait
        self._thread.join(timeout=10.0)


def delay_percentiles(histogram: dict[int, float], qs: tuple[float, ...] = (50.0, 99.0)) -> list[float | None]:
    """Percentiles (in whole control periods) of a histogram {periods: count}; None where it is empty."""
    total = sum(histogram.values())
    out: list[float | None] = []
    for q in qs:
        if total <= 0:
            out.append(None)
            continue
        need, seen = q / 100.0 * total, 0.0
        for periods in sorted(histogram):
            seen += histogram[periods]
            if seen >= need:
                out.append(float(periods))
                break
    return out


def _delay_key(periods: int) -> str:
    return f"command_delay_periods_{periods}" + ("plus" if periods >= DELAY_BINS else "")


def log_episode_end(logger: Any, succeeded: bool, text: str) -> None:  # noqa: ANN401  (an rclpy logger)
    """Info for a success, warning otherwise, each from its own line.

    rclpy refuses a call site whose severity changes between calls (ValueError "Logger severity cannot be
    changed between calls"): one line logging both made the first success after a failure raise inside the
    simulation step, which reset the task and reported the successful UR5e episode as a ``sim_error`` with no
    metrics (the lockstep parity run read 5 of 30 insertions through the graph against 11 in-process).
    """
    if succeeded:
        logger.info(text)
    else:
        logger.warning(text)


def main(args: list[str] | None = None) -> int:
    """Entry point ``sim_robot_node`` (``--ros-args -p task:=go2/flat -p real_time_factor:=1.0``)."""
    return run_node(SimRobotNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
