"""Planner node: MPPI on each new latent as it arrives, with live model hot swap.

Graph role (topics relative, see ``simdist_ros.topics``):
    in   ``latent`` (Float32MultiArray, qos.LATENT), ``model/update`` (String JSON, qos.ANNOUNCE; a doorbell:
         updates load only from ``update_dir`` and need the finetuner's tag, see ``model_swap``)
    out  ``joint_command`` (Float64MultiArray, qos.COMMAND, stamped with the observation it answers),
         ``plan`` (JointTrajectory: Go2 joint targets in rad, as the driver converts the command; UR5e normalised
         Cartesian steps, see ``simdist_core.planning.targets``), ``predicted_rollout`` (MarkerArray: the plan
         and ``num_rollouts`` sampled candidates coloured by predicted return, in ``frame_id``; stamped with the
         observation they answer, so TF places them where the robot was), ``/diagnostics`` (DiagnosticArray)

Timing: the planner plans when a latent arrives (the encoder encodes when a step's sensors are complete),
so a command answers the newest observation as soon as the CPU allows: the delay from observation to
command is encode + plan + two DDS hops, under one 20 ms control period on this project's 2-core machine,
which is the delay the in-process evaluation has (none: the action acts on the state it was planned from).
Planning on a free-running timer instead let the timer phase add up to a period (the command answered the
previous step's latent) that the model never saw in training. A watchdog (``runtime.Watchdog``) remains:
if no latent started a tick for 1.5 periods it plans on the latest latent or, when that is stale, holds,
then once a period until latents return.

Threads: one single-threaded executor (``runtime.run_node``) runs the latent callback, the watchdog's
callback and diagnostics; the watchdog's thread only decides when that callback is due (a control-rate
ROS timer cost ~4 % of a core to find nothing to do); a ``ModelSwapper`` worker thread verifies and loads
announced checkpoints. A tick never blocks on I/O: it swaps a reference between two plans.

Episodes: a latent of a new episode (the encoder restarted its history: an announced reset, a jump or a gap;
its ``episode`` counter changed, or, from an encoder without it, the latent is marked ``episode_start``) clears
the planner's warm start before it plans, as ``simdist eval`` does at every reset, and restarts its sampling noise
from a seed of the episode's own (reproducible in lockstep; see ``_on_latent``). Without it the
live graph carried the last episode's plan into the next one, and on ``go2/foam`` the zero-shot model fell in
the first 3 s of 12/60 episodes through the graph against 30/60 in-process (a warm start from a walking plan
gets the gait going); the two must start episodes the same way to be compared.

Safety: no latent yet, a latent older than ``stale_ticks`` control periods, a planner exception or a
non-finite action -> the hold action (zeros = default pose / no motion), counted and reported.

Memory bound: 450 MiB RSS (soak peak 296 MiB Go2 after 16 swaps, 309 MiB UR5e). What it holds:
one latest latent (~13 KB), a deque of ``runtime.STAT_WINDOW`` latencies, one pending
announcement and at most two models (running + verified candidate) at a time.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from simdist_core.planning.adapted_tie import AdaptedTie
from simdist_core.planning.deadline import SampleBudget, SampleBudgetConfig
from simdist_core.planning.in_flight import InFlightCommands, plan_to_send
from simdist_core.planning.mppi import episode_noise_seed
from simdist_core.planning.targets import plan_joint_targets
from std_msgs.msg import Float32MultiArray, Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from simdist_ros import msgs, qos, topics
from simdist_ros.model_swap import ModelSwapper, build_planner, load_model
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
from simdist_ros.sensors import PATH_FRAME


@dataclass(frozen=True, kw_only=True)
class PlannerParams:
    """Runtime settings of the planner node (model and planner config come from the checkpoint)."""

    robot: str
    """Robot name; must match the checkpoint. Used to find ``checkpoints/<robot>`` when checkpoint is empty."""
    checkpoint: str
    """Checkpoint directory (empty = ``<repo>/checkpoints/<robot>``)."""
    device: str
    """Torch device of the planner."""
    control_hz: float
    """Tick rate; 0 = the robot spec's control rate."""
    stale_ticks: float
    """A latent older than this many control periods is stale -> hold action."""
    reset_on_episode_start: bool
    """Clear the warm start on a latent marked ``episode_start`` (as ``simdist eval`` does at every reset)."""
    seed: int
    """Planner sampling seed."""
    planner_preset: str
    """``simdist_core.planning.mppi.PRESETS`` name, ``checkpoint`` (the config stored with the weights), or
    ``auto`` (the stored config if there is one, else the ``cpu`` preset)."""
    planner_overrides: tuple[str, ...]
    """``key=value`` overrides of the chosen planner config (e.g. ``num_samples=64``)."""
    reference_checkpoint: str
    """With ``reference_returns`` in ``planner_overrides``: the checkpoint whose dynamics also score each plan (the
    model the running one was finetuned from, e.g. the shipped one when the node starts from an adapted checkpoint);
    empty = the model this node starts with."""
    adapted_prior_weight: float
    """The tie to the policy prior for a model finetuned on this robot (``adapted_tie.AdaptedTie``); negative =
    every model keeps the configured ``prior_weight``."""
    adapted_after_data_steps: int
    """Steps of this robot's data a swapped-in model must have been finetuned on to get ``adapted_prior_weight``."""
    rollout_every_n: int
    """Publish plan + predicted rollout markers every n ticks (0 = never)."""
    num_rollouts: int
    """Sampled candidates drawn next to the plan (by predicted return, best to worst); their rollouts cost one
    extra model prediction on the ticks that publish."""
    diagnostics_period_s: float
    """Seconds between two diagnostics messages."""
    frame_id: str
    """Frame of the rollout markers; empty = ``sensors.PATH_FRAME`` (Go2: yaw-aligned ``base_yaw``; UR5e: ``base``)."""
    torch_threads: int
    """torch intra-op threads (1 keeps the timer's jitter low on a shared CPU)."""
    compensate_delay: bool
    """Plan for the state the command will act on: estimate the delay d (periods from the observation to the step
    the command will act on, from the latent's age and the plans' own duration) and start every candidate with the
    last d commands sent, executing the plan's step d (``MPPIPlanner.plan_latent``'s ``committed``)."""
    send_plan: bool
    """Send the plan's mean with each command (``msgs.make_command``), so a robot that applies it late plays the
    row for the step it acts on instead of repeating the action (the simulated robot's ``play_plan``). Emulated
    with the commands of a graph on one busy core, repeating kept 0.70 of the on-time distance on Go2 foam and
    playing the plan 0.98 (``bench_results/GO2_LATE_LINK.md``). Off for a robot that reads a command's data as
    one action (a plain forward-command controller)."""
    plan_time_fraction: float
    """Share of the control period a plan may take; the Gaussian sample count steps down when the plans' p90
    exceeds it and back up (never above the preset's) when there is room (``deadline.SampleBudget``). 0 = fixed."""
    update_dir: str
    """The only folder model updates are loaded from (the finetuner's ``output_dir``); empty = no updates."""
    update_key_file: str
    """Key file shared with the finetuner (owner-only, made by the launcher); empty = no updates."""

    def __post_init__(self) -> None:
        if self.stale_ticks < 1.0:
            raise ValueError(f"stale_ticks must be >= 1, got {self.stale_ticks=}")


ROWS = (
    P("robot", "go2", "Robot name (must match the checkpoint)", read_only=True),
    P("checkpoint", "", "Checkpoint directory; empty = <repo>/checkpoints/<robot>", read_only=True),
    P("device", "cpu", "Torch device", read_only=True),
    P("control_hz", 0.0, "Tick rate in Hz; 0 = the robot spec's rate", lo=0.0, hi=1000.0, read_only=True),
    P("stale_ticks", 3.0, "Latent age (control periods) beyond which the planner holds", lo=1.0, hi=100.0),
    P("reset_on_episode_start", True, "Clear the warm start when a latent starts an episode"),
    P("seed", 0, "Planner sampling seed", lo=0, hi=2**31 - 1, read_only=True),
    P(
        "planner_preset",
        "auto",
        "MPPI config: auto (checkpoint's, else cpu), checkpoint, cpu, reference",
        read_only=True,
    ),
    P("planner_overrides", (), "key=value overrides of that planner config, e.g. num_samples=64", read_only=True),
    P("reference_checkpoint", "", "With reference_returns: the checkpoint whose dynamics also score each plan; "
      "empty = the model the node starts with", read_only=True),
    P("adapted_prior_weight", -1.0, "prior_weight for a model finetuned on this robot; negative = keep the config's",
      lo=-1.0, hi=1e9, read_only=True),
    P("adapted_after_data_steps", 0, "Robot data steps a model must be finetuned on to count as adapted", lo=0,
      hi=2**31 - 1, read_only=True),
    P("rollout_every_n", 5, "Publish plan + rollout markers every n ticks (0 = never)", lo=0, hi=1000),
    P("num_rollouts", 8, "Sampled rollouts drawn next to the plan, coloured by predicted return", lo=0, hi=64),
    P("diagnostics_period_s", 1.0, "Diagnostics period in seconds", lo=0.05, hi=60.0, read_only=True),
    P("frame_id", "", "Frame of the predicted rollout markers; empty = base_yaw (Go2), base (UR5e)"),
    P("torch_threads", 1, "torch intra-op threads", lo=1, hi=64, read_only=True),
    P("compensate_delay", True, "Plan for the state the command will act on (measured delay, commands in flight)"),
    P("send_plan", True, "Send the plan with each command, for a robot that plays it when a command is late"),
    P("plan_time_fraction", 0.6, "Share of the control period a plan may take (fewer samples past it); 0 = fixed",
      lo=0.0, hi=1.0, read_only=True),
    P("update_dir", "", "Folder model updates load from (= finetuner output_dir); empty = accept no updates",
      read_only=True),
    P("update_key_file", "", "Owner-only key file shared with the finetuner; empty = accept no updates",
      read_only=True),
)


class PlannerNode(Node):
    """Thin adapter: latent message -> ``MPPIPlanner.plan_latent`` -> command, plan, markers."""

    def __init__(self, node_name: str = "planner") -> None:
        super().__init__(node_name)
        params = declare_table(self, ROWS, PlannerParams)
        self._tunable = TunableParams(self, ROWS, params)
        setup_torch(params.torch_threads)
        path = resolve_checkpoint(params.checkpoint, params.robot)
        model, manifest = load_model(path, params.device)
        self.spec = model.spec
        if params.robot and params.robot != self.spec.name:
            raise ValueError(f"parameter robot={params.robot!r} but checkpoint {path} is for {self.spec.name!r}")
        reference = load_model(params.reference_checkpoint, params.device)[0] if params.reference_checkpoint else None
        self.planner = build_planner(
            model, manifest, params.planner_preset, params.planner_overrides, params.device, params.seed, reference
        )
        if reference is not None and not self.planner.cfg.reference_returns:
            raise ValueError("reference_checkpoint is set but planner_overrides has no reference_returns=min|mean")
        self.model_version = str(manifest_get(manifest, "version", "unknown"))
        self._tie = AdaptedTie(params.adapted_prior_weight, params.adapted_after_data_steps)
        self._deployed_prior_weight = self.planner.cfg.prior_weight
        self.control_hz = params.control_hz or self.spec.control_hz
        self.period_ns = int(round(1e9 / self.control_hz))
        self.stats = TickStats(1.0 / self.control_hz)
        # A plan that overruns its share of the period makes the command answer an older observation than the
        # model was trained on; fewer samples on time measured better than more samples late (planning/deadline.py).
        self.budget = (
            SampleBudget(self.planner.cfg.num_samples, 1.0 / self.control_hz,
                         SampleBudgetConfig(target_fraction=params.plan_time_fraction,
                                            min_samples=self.planner.min_num_samples))
            if params.plan_time_fraction > 0 else None
        )  # fmt: skip
        self._device = params.device
        self._hold = np.zeros(self.spec.action_dim)
        self._latent_dim, self._width = model.cfg.latent_dim, model.cfg.width
        self._latest: tuple[dict[str, np.ndarray], int] | None = None
        self._planned_obs_ns: int | None = None  # observation stamp the last plan answered
        self._episode_seen: float | None = None  # the encoder's episode counter on the last latent
        self._in_flight = InFlightCommands()  # commands sent, delays the robot reported: what a plan starts with
        self._plan_ros_s = 0.0  # running mean of a plan's duration on the ROS clock (sim time under use_sim_time)
        self._lock = threading.Lock()
        self.counts = dict.fromkeys(
            ("commands", "plans", "watchdog_ticks", "holds_no_latent", "holds_stale", "planner_errors",
             "planner_fallbacks", "bad_latents", "latent_deadline_missed", "command_deadline_missed",
             "warm_start_resets"),
            0,
        )  # fmt: skip
        self._last_hold_reason = ""
        self._latent_age_s = float("nan")

        # Groups only matter to a multi-threaded executor (kept selectable for the benchmark): one
        # group for everything that touches the planner, one for announcements and diagnostics.
        control_group, io_group = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        self._cmd_pub = self.create_publisher(
            Float64MultiArray, topics.COMMAND, qos.command(self.control_hz),
            event_callbacks=PublisherEventCallbacks(deadline=lambda _e: self._count("command_deadline_missed")),
        )  # fmt: skip
        self._plan_pub = self.create_publisher(JointTrajectory, topics.PLAN, qos.RELIABLE)
        self._marker_pub = self.create_publisher(MarkerArray, topics.PREDICTED_ROLLOUT, qos.RELIABLE)
        self._diag_pub = self.create_publisher(msgs.DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        self.create_subscription(
            Float32MultiArray, topics.LATENT, self._on_latent, qos.LATENT(self.control_hz),
            callback_group=control_group,
            event_callbacks=SubscriptionEventCallbacks(deadline=lambda _e: self._count("latent_deadline_missed")),
        )  # fmt: skip
        self.swapper = ModelSwapper(model, manifest, self.get_logger(), params.device, **_update_source(params))
        self._set_tie(self.swapper.data_steps)  # a checkpoint finetuned here before this start counts too
        if not self.swapper.enabled:
            self.get_logger().warning("update_dir or update_key_file is empty: every model/update will be refused")
        self.create_subscription(String, topics.MODEL_UPDATE, self._on_update, qos.ANNOUNCE, callback_group=io_group)
        self._watchdog = Watchdog(self, self.period_ns, self._on_watchdog, callback_group=control_group)
        self.create_timer(params.diagnostics_period_s, self._publish_diagnostics, callback_group=io_group)
        self.get_logger().info(
            f"planner for {self.spec.name} at {self.control_hz:g} Hz, checkpoint {path} (version {self.model_version})"
        )

    # ---- inputs ------------------------------------------------------------------------------------
    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def _on_latent(self, msg: Float32MultiArray) -> None:
        try:
            blocks, obs_t_ns = msgs.latent_to_arrays(msg, {"z": (self._latent_dim,)})
            context = blocks.get("context")
            if context is None or context.ndim != 2 or context.shape[1] != self._width:
                got = None if context is None else context.shape
                raise msgs.MessageError(f"latent: block 'context' has shape {got}, expected (S, {self._width})")
        except msgs.MessageError as exc:
            self._count("bad_latents")
            self.get_logger().warning(f"dropping latent: {exc}", throttle_duration_sec=1.0)
            return
        if self._starts_episode(blocks) and self._tunable.current.reset_on_episode_start:
            # A new episode: the last one's plan is no warm start for it. The noise restarts too, from a seed of
            # the episode's own: the planner's seed mixed with a checksum of the episode's first latent, which the
            # same start state reproduces bit for bit whatever came before (not a count of episodes: a warm-up can
            # restart the encoder's history more or fewer times). So an episode's plans do not depend on how many
            # ticks came before it (without it two identical lockstep runs differed on 2 of 10 UR5e episodes), and
            # episodes do not all share one draw of noise (one seed for every episode did; an episode bootstrap
            # cannot see that).
            first_latent = zlib.crc32(np.ascontiguousarray(blocks["z"], np.float32).tobytes())
            self.planner.reset(noise_seed=episode_noise_seed(self.planner.seed, first_latent))
            self._in_flight.new_episode()  # nor are its commands the ones the new episode's first steps will meet
            self._count("warm_start_resets")
        applied = blocks.get("applied_delay")
        if applied is not None and applied.size == 1 and np.isfinite(applied).all():
            self._in_flight.reported(float(applied.reshape(-1)[0]))
        self._latest = (blocks, obs_t_ns)  # one reference assignment: the tick reads either old or new
        self._tick(obs_t_ns)

    def _starts_episode(self, blocks: dict[str, np.ndarray]) -> bool:
        """Whether this latent belongs to an episode the planner has not planned in yet.

        The encoder's episode counter changes with every restart of its history; comparing it catches an
        episode whose first latent (the one marked ``episode_start``) was replaced in the keep-last-1 queue
        while the planner was still busy: on a 2-core VM planning slower than the control rate, 11 of 60
        foam episodes started without a reset. Latents without the counter fall back to the mark.
        """
        episode = blocks.get("episode")
        if episode is None or episode.size != 1 or not np.isfinite(episode).all():
            return float(blocks.get("episode_start", np.zeros(1)).reshape(-1)[0]) > 0.5
        index = float(episode.reshape(-1)[0])
        new = index != self._episode_seen
        self._episode_seen = index
        return new

    def _on_update(self, msg: String) -> None:
        self.swapper.submit(msg.data, self.get_clock().now().nanoseconds)

    # ---- the control tick --------------------------------------------------------------------------
    def _on_watchdog(self) -> None:
        """No latent started a tick for 1.5 periods: plan on the latest one if it is fresh enough, else hold."""
        self._count("watchdog_ticks")
        self._tick(None)

    def _tick(self, obs_t_ns: int | None) -> None:
        """One control step: on a new latent (``obs_t_ns``: its observation stamp) or from the watchdog (None).

        Missed ticks are counted on the observation clock for latent-driven ticks (a skipped observation
        is a missed tick, whatever the executor's timing) and on ROS time for watchdog ticks.
        """
        now_ns = self.get_clock().now().nanoseconds
        if obs_t_ns is not None:
            self._watchdog.ticked(now_ns, obs_t_ns)
        missed = self.stats.start(now_ns if obs_t_ns is None else obs_t_ns)
        swapped = self.swapper.take(self.planner, missed)
        if swapped is not None:
            self.model_version = swapped
            self.get_logger().info(f"hot-swapped model to version {swapped}")
            self._set_tie(self.swapper.data_steps)
        params = self._tunable.current
        visualise = bool(params.rollout_every_n) and self.stats.ticks % params.rollout_every_n == 0
        action, result = self._decide(now_ns, params)
        answered = self._planned_obs_ns if result is not None else None
        if answered is None:
            self._cmd_pub.publish(msgs.make_float64_array(action))
        else:
            plan = plan_to_send(result) if params.send_plan else None
            self._cmd_pub.publish(msgs.make_command(action, answered, plan))
        self._in_flight.sent(action)
        self._count("commands")
        if result is not None and visualise:  # after the command: the sampled rollouts cost one more prediction
            self._publish_plan(result, answered, params)
        self.stats.stop()

    def _set_tie(self, data_steps: int | None) -> None:
        """The running model's tie to the policy prior: looser once it has been finetuned on enough robot data."""
        weight = self._tie.prior_weight_for(self._deployed_prior_weight, data_steps)
        if weight != self.planner.cfg.prior_weight:
            self.planner.cfg = dataclasses.replace(self.planner.cfg, prior_weight=weight)
            self.get_logger().info(f"prior_weight {weight:g} for model version {self.model_version} "
                                   f"(finetuned on {data_steps} steps of robot data)")

    def _decide(self, now_ns: int, params: PlannerParams) -> tuple[np.ndarray, Any]:
        latest = self._latest
        if latest is None:
            return self._hold_action("holds_no_latent", "no latent received yet"), None
        blocks, obs_t_ns = latest
        age_ns = now_ns - obs_t_ns
        self._latent_age_s = age_ns * 1e-9
        self._planned_obs_ns = obs_t_ns
        if age_ns > params.stale_ticks * self.period_ns:
            self.planner.reset()  # the warm start belongs to a world that has moved on
            return self._hold_action("holds_stale", f"latent is {age_ns * 1e-9:.3f} s old"), None
        try:
            from simdist_core.models import Latent

            committed = self._committed(age_ns, params)
            t0 = time.perf_counter()
            # The mean's predicted rollout is only drawn: it is made after the command is out (``_publish_plan``).
            result = self.planner.plan_latent(Latent.from_numpy(blocks["z"], blocks["context"], self._device),
                                              committed, predict_mean=False)  # fmt: skip
            if self.budget is not None:
                self.planner.set_num_samples(self.budget.observe(time.perf_counter() - t0))
            plan_ros_s = (self.get_clock().now().nanoseconds - now_ns) * 1e-9
            self._plan_ros_s += 0.1 * (plan_ros_s - self._plan_ros_s)  # ~10-tick running mean
            action = np.asarray(_numpy(result.action), np.float64).reshape(-1)
        except Exception as exc:  # noqa: BLE001  (callback boundary: hold, log throttled, report; never die)
            self.get_logger().error(f"planner failed, holding: {exc}", throttle_duration_sec=1.0)
            return self._hold_action("planner_errors", f"planner error: {exc}"), None
        if action.shape != self._hold.shape or not np.all(np.isfinite(action)):
            self.get_logger().error(f"planner returned a bad action {action}, holding", throttle_duration_sec=1.0)
            return self._hold_action("planner_errors", "non-finite or mis-shaped action"), None
        if getattr(result, "fallback", None):
            self._count("planner_fallbacks")
            self.get_logger().warning(f"planner fallback (hold action): {result.fallback}", throttle_duration_sec=1.0)
        self._last_hold_reason = ""
        self._count("plans")
        return np.clip(action, -1.0, 1.0), result

    def _committed(self, age_ns: int, params: PlannerParams) -> np.ndarray | None:
        """The commands already sent that will act before this tick's command can (None: no delay expected).

        d, the periods from the planned-from state to the step the command will act on, is the median delay the
        robot reported for its last 25 steps (``simdist_core.planning.in_flight``; the encoder's ``applied_delay``,
        from the stamp on ``executed_command``; a lockstep simulator reports 0). A robot that does not stamp gives
        no report; then d = floor((age + plan) / period) on the ROS clock (the latent's age and a running mean of
        the plans' duration), which under a simulator's stepped ``/clock`` reads low: on a 2-core VM it gave 0 on
        91 % of ticks while the robot measured 1 or more on 96 % of steps. The d steps in between are driven by the
        last d commands sent (one per tick).
        """
        if not params.compensate_delay:
            return None
        # A robot that does not stamp its executed commands reports nothing: then the estimate stands in.
        estimate = int((age_ns * 1e-9 + self._plan_ros_s) / (self.period_ns * 1e-9))
        return self._in_flight.committed(self.planner.cfg.horizon, estimate)

    def _hold_action(self, counter: str, reason: str) -> np.ndarray:
        self._count(counter)
        if reason != self._last_hold_reason:
            self.get_logger().warning(f"holding default pose: {reason}", throttle_duration_sec=1.0)
        self._last_hold_reason = reason
        return self._hold

    def _publish_plan(self, result: Any, t_ns: int, params: PlannerParams) -> None:  # noqa: ANN401  (PlanResult)
        """Plan and markers, stamped ``t_ns`` (the observation planned from: the frame's pose at that time).

        Each is built only while someone subscribes (RViz, a recorder): it runs in the planner's executor, and
        when the sampled rollouts still re-predicted their latents it cost the 2-core graph, with nobody
        watching, 90.2 % of steps with a fresh command and delay 0 on 69.8 %, against 93.0 % and 82.5 % with
        ``num_rollouts`` 0 (``bench_results/graph_go2_flat_num_rollouts.json``). They now decode the latents
        the plan already predicted, and the plan's own rollout is predicted here, after the command, not in the tick.
        """
        dt_s = 1.0 / self.control_hz
        if self._plan_pub.get_subscription_count() > 0:
            mean = np.asarray(_numpy(result.mean), np.float64)
            names, positions = plan_joint_targets(self.spec.name, mean) or (self.spec.action_names, mean)
            self._plan_pub.publish(msgs.make_plan(positions, names, dt_s, t_ns))
        if self._marker_pub.get_subscription_count() == 0:
            return
        probe = result.probe if result.probe is not None else self.planner.predict_last_mean()[1]
        probe = np.asarray(_numpy(probe), np.float64).reshape(-1, 3)
        rollout_probes, rollout_returns = self.planner.sampled_rollouts(params.num_rollouts)
        paths = [msgs.probe_to_positions(p, self.spec.probe, dt_s)
                 for p in (probe, *np.asarray(rollout_probes, np.float64))]  # fmt: skip
        frame = params.frame_id or PATH_FRAME[self.spec.name]
        self._marker_pub.publish(msgs.make_rollout_markers(paths, frame, t_ns, rollout_returns))

    # ---- diagnostics -------------------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        p50, p99 = self.stats.percentiles_ms()
        with self._lock:
            counts = dict(self.counts)
        counts.update(self.swapper.counts())
        values: dict[str, object] = {
            "model_version": self.model_version,
            "tick_latency_p50_ms": p50,
            "tick_latency_p99_ms": p99,
            "ticks": self.stats.ticks,
            "deadline_misses": self.stats.deadline_misses,
            "missed_ticks": self.stats.missed_ticks,
            "input_age_s": self._latent_age_s,
            "control_hz": self.control_hz,
            "num_samples": self.planner.cfg.num_samples,
            "prior_weight": self.planner.cfg.prior_weight,
            **{f"compensated_delay_{d}": n for d, n in enumerate(self._in_flight.counts)},
            **self._budget_values(),
            **counts,
            **process_counts(),
        }
        level = "warn" if self._last_hold_reason else "ok"
        message = self._last_hold_reason or f"planning at {self.control_hz:g} Hz"
        status = msgs.make_status(f"{self.get_name()}: planner", level, message, values, self.spec.name)
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def _budget_values(self) -> dict[str, object]:
        if self.budget is None:
            return {}
        return {"samples_reductions": self.budget.reductions, "samples_increases": self.budget.increases,
                "plan_time_q90_ms": self.budget.last_quantile_s * 1e3}  # fmt: skip

    def close(self) -> None:
        """Stop and join the watchdog thread and the swap worker (before rclpy shuts down)."""
        self._watchdog.close()
        self.swapper.close()


def _update_source(params: PlannerParams) -> dict[str, Any]:
    """``update_dir`` and the shared ``key`` for the swapper (both None unless both are set).

    Raises:
        KeyFileError: the key file is missing, a symlink, or readable by others (the node does not start).
    """
    from simdist_core.checkpoint_auth import read_key

    if not params.update_dir or not params.update_key_file:
        return {"update_dir": None, "key": None}
    return {"update_dir": Path(params.update_dir).expanduser().absolute(),
            "key": read_key(Path(params.update_key_file).expanduser())}


def _numpy(x: Any) -> np.ndarray:  # noqa: ANN401  (tensor or array)
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def main(args: list[str] | None = None) -> int:
    """Entry point ``planner_node`` (``--ros-args -p checkpoint:=... -p use_sim_time:=true``)."""
    return run_node(PlannerNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
