"""Closed-loop rollouts of a planner in a simulated task (shared by ``simdist eval`` and the benchmark).

One episode = reset the env, feed observations through ``ObservationHistory`` (the same window
layout the dataset sampler builds offline), ask the planner for an action each control step,
optionally add exploration noise, step the env, and hand every transition to an optional
``on_step`` callback (the adaptation benchmark records them as experience).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from simdist_core.data.history import ObservationHistory
from simdist_core.eval.late_link import LateLink
from simdist_core.planning.command_ramp import ramp_for
from simdist_core.planning.heading_hold import hold_for
from simdist_core.planning.in_flight import InFlightCommands, plan_to_send
from simdist_core.planning.mppi import MPPIPlanner
from simdist_core.sim.base import DelayLine, RobotEnv, StepResult
from simdist_core.sim.go2_obs import yaw_from_quat

StepCallback = Callable[[dict[str, np.ndarray], np.ndarray, StepResult], None]
"""``on_step(obs_before, action_executed, step_result)``."""


@dataclass
class EpisodeStats:
    """What one closed-loop episode measured."""

    steps: int
    """Control steps executed."""
    metrics: dict[str, float]
    """``env.metrics()`` at the end (Go2: forward_progress_m, fell; UR5e: success)."""
    plan_ms: list[float] = field(default_factory=list)
    """Wall time of each ``planner.plan`` call, milliseconds."""
    fallbacks: int = 0
    """Planner ticks that returned a safe fallback instead of a plan."""
    total_reward: float = 0.0
    """Sum of env rewards."""


def first_action(plan_out: Any) -> tuple[np.ndarray, bool]:
    """Extract (action (A,), fallback flag) from what ``planner.plan`` returns.

    Accepts a tensor/array action or an object/dict with ``action`` (and optionally ``fallback``).
    """
    fallback = False
    if isinstance(plan_out, dict):
        fallback = bool(plan_out.get("fallback", False))
        plan_out = plan_out["action"]
    elif hasattr(plan_out, "action"):
        fallback = bool(getattr(plan_out, "fallback", False))
        plan_out = plan_out.action
    if isinstance(plan_out, torch.Tensor):
        plan_out = plan_out.detach().cpu().numpy()
    action = np.asarray(plan_out, dtype=np.float32).reshape(-1)
    return action, fallback


def run_episode(
    env: RobotEnv,
    planner: Any,
    *,
    seed: int,
    max_steps: int,
    exploration_std: float = 0.0,
    rng: np.random.Generator | None = None,
    on_step: StepCallback | None = None,
    on_reset: Callable[[dict[str, np.ndarray]], None] | None = None,
    on_plan: Callable[[Any], None] | None = None,
    device: str = "cpu",
    action_delay: int = 0,
    compensate_delay: bool = False,
    command_ramp_s: float = 0.0,
    robot_latency_steps: int = 0,
    link: LateLink | None = None,
    heading_hold: bool = False,
) -> EpisodeStats:
    """Run one planner-controlled episode.

    Args:
        env: a task from ``simdist_core.sim.base.make_env``.
        planner: object with ``reset()`` and ``plan(model_input) -> action (A,)``.
        seed: env reset seed.
        max_steps: control-step cap (the env may end earlier).
        exploration_std: std of Gaussian noise added to the planned action (then clipped to [-1, 1]).
        rng: noise generator (required when ``exploration_std > 0``).
        on_step: receives each transition (observation before, executed action, step result).
        on_reset: receives the first observation, right after ``env.reset`` (the env is in that state).
        on_plan: receives what ``planner.plan`` returned, before the step it acts on (the env is in the
            state it was planned from); must not change the env (videos record here).
        device: where model inputs are placed.
        action_delay: control periods between an observation and the step its action acts on (0: the
            action acts on the state it was planned from). A live graph whose command misses its step
            has delay 1; the steps before the first delayed action hold the default pose (zeros).
        compensate_delay: pass the planner the ``action_delay`` + ``robot_latency_steps`` actions already in
            flight (``committed``, oldest first), so it plans the action for the state it will act on
            (``MPPIPlanner.plan_latent``).
        robot_latency_steps: control periods the robot itself takes to apply a command (its actuator latency,
            which the env simulates, e.g. a UR5e task's ``shift.latency_steps``); only ``compensate_delay``
            reads it: the action sent now meets the state after the actions sent in those periods. On a robot
            it is measured (``executed_command`` against the commands sent), not told.
        link: a late command link between planner and env (``simdist_core.eval.late_link``) instead of
            ``action_delay``: each command's delay changes from step to step and some steps get no fresh command.
            With ``compensate_delay`` the planner plans around the median delay of the last steps, as the planner
            node does (``simdist_core.planning.in_flight``). Reset here at the episode's start.
        heading_hold: (Go2) the command the planner sees gets a yaw rate that holds the episode's starting heading,
            from the IMU's orientation (``simdist_core.planning.heading_hold``); applied after the ramp.
        command_ramp_s: ramp the velocity command the planner sees from rest to the task's over this long
            (``simdist_core.planning.command_ramp``; 0: the task's command at once). The observations the
            planner, ``on_reset`` and ``on_step`` get carry the ramped command, as the live graph's encoder
            node writes it; the env's reward still tracks the task's command.

    Returns:
        The episode's metrics, planner timings and fallback count.
    """
    if exploration_std > 0 and rng is None:
        raise ValueError("run_episode: exploration_std > 0 needs an rng")
    if action_delay < 0 or robot_latency_steps < 0:
        raise ValueError(f"run_episode: action_delay and robot_latency_steps must be >= 0, got {action_delay}, "
                         f"{robot_latency_steps}")
    if link is not None and (action_delay or robot_latency_steps or exploration_std > 0):
        raise ValueError("run_episode: a late link brings its own delay; action_delay, robot_latency_steps and "
                         "exploration_std must be 0 with it")
    in_flight = DelayLine(action_delay, env.spec.action_dim, np.float32)  # the pipeline delay the robot measures
    reported = InFlightCommands()  # with a link: the commands sent and the delays the robot reported
    # The actions sent in the last ``lookahead`` periods act on the steps before this tick's action can; the robot's
    # own latency queue starts with the default pose (zeros), as ``waiting`` below does.
    lookahead = action_delay + robot_latency_steps if compensate_delay else 0
    sent: deque[np.ndarray] = deque(maxlen=max(lookahead, 1))
    history = ObservationHistory(env.spec)
    obs = env.reset(seed=seed)
    ramp = ramp_for(env.spec, command_ramp_s)
    if ramp is not None:
        obs = _with_command(obs, ramp.reset(obs["command"]))
    hold = hold_for(env.spec, heading_hold)  # refuses to hold the heading of a command that is no velocity
    if hold is not None:
        yaw = yaw_from_quat(env.sensors()["imu_quat"])
        hold.reset(yaw)
        obs = _with_command(obs, hold.command(obs["command"], yaw))
    if on_reset is not None:
        on_reset(obs)
    history.reset(obs)
    planner.reset()
    if link is not None:
        link.reset()
    stats = EpisodeStats(steps=0, metrics={})
    # Nobody looks at the plan's own predicted rollout unless ``on_plan`` does: skip that model call.
    plan_kwargs = {"predict_mean": False} if on_plan is None and isinstance(planner, MPPIPlanner) else {}
    for _ in range(max_steps):
        start = time.perf_counter()
        with torch.no_grad():
            if link is not None:
                committed = reported.committed(planner.cfg.horizon) if compensate_delay else None
                plan_out = planner.plan(history.model_input(device), committed=committed, **plan_kwargs)
            elif lookahead:
                waiting = [np.zeros(env.spec.action_dim, np.float32)] * (lookahead - len(sent))
                plan_out = planner.plan(history.model_input(device), committed=np.stack([*waiting, *sent]),
                                        **plan_kwargs)
            else:
                plan_out = planner.plan(history.model_input(device), **plan_kwargs)
            action, fallback = first_action(plan_out)
        stats.plan_ms.append(1e3 * (time.perf_counter() - start))
        if on_plan is not None:
            on_plan(plan_out)
        stats.fallbacks += int(fallback)
        if exploration_std > 0:
            action = action + exploration_std * rng.standard_normal(action.shape).astype(np.float32)
        action = np.clip(action, -1.0, 1.0).astype(np.float32)
        if link is not None:
            reported.sent(action)
            action, delay = link.step(action, plan_to_send(plan_out))
            reported.reported(-1.0 if delay is None else float(delay))
        else:
            sent.append(action)
            action = in_flight.push(action)
        result = env.step(action)
        if ramp is not None:
            result = dataclasses.replace(result, obs=_with_command(result.obs, ramp.step(result.obs["command"])))
        if hold is not None:
            command = hold.command(result.obs["command"], yaw_from_quat(env.sensors()["imu_quat"]))
            result = dataclasses.replace(result, obs=_with_command(result.obs, command))
        if on_step is not None:
            on_step(obs, action, result)
        history.record_action(action if link is None else link.executed)  # what the robot reports
        history.push(result.obs)
        obs = result.obs
        stats.steps += 1
        stats.total_reward += float(result.reward)
        if result.terminated or result.truncated:
            break
    stats.metrics = {k: float(v) for k, v in env.metrics().items()}
    return stats


def _with_command(obs: dict[str, np.ndarray], command: np.ndarray) -> dict[str, np.ndarray]:
    return {**obs, "command": command}


def summarise(episodes: list[EpisodeStats]) -> dict[str, float]:
    """Mean of each task metric over episodes plus planner latency percentiles (ms) and fallbacks."""
    if not episodes:
        raise ValueError("summarise: no episodes")
    keys = sorted({k for ep in episodes for k in ep.metrics})
    out = {k: float(np.mean([ep.metrics.get(k, np.nan) for ep in episodes])) for k in keys}
    plan_ms = np.concatenate([np.asarray(ep.plan_ms, dtype=np.float64) for ep in episodes])
    out["plan_ms_p50"] = float(np.percentile(plan_ms, 50)) if plan_ms.size else float("nan")
    out["plan_ms_p99"] = float(np.percentile(plan_ms, 99)) if plan_ms.size else float("nan")
    out["fallbacks"] = float(sum(ep.fallbacks for ep in episodes))
    out["steps"] = float(sum(ep.steps for ep in episodes))
    out["mean_return"] = float(np.mean([ep.total_reward for ep in episodes]))
    return out
