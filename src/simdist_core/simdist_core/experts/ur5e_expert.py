"""Scripted privileged expert for UR5e peg insertion and table-leg threading.

It aims at the registered fixture pose, the task command the model sees too (``env.fixture_estimate``,
1.5 mm off the true hole by default), plus a further error at lower skill, so the tip lands on the lip
and must find the hole with an Archimedean spiral search while pressing lightly: the demos contain
contact dynamics, not only free-space motion. Where it aims comes only from what the robot observes
(the command, its own pose and the wrist wrench); the true pose still decides when the part is in
(depth > 3 mm) and centres the table leg once it is. Phases: approach -> descend -> (search) -> insert
-> (thread: clockwise turns while following the thread pitch down).

The expert commands the low-level TCP *target* (``env.sim.lowlevel``): each action moves the target
toward the phase's desired target, so pressing ``press_m`` below the surface gives a bounded force
(~4 kN/m servo stiffness) and the compliance of the arm does the rest.

Weaker variants (``skill`` < 1, see ``ExpertConfig.from_skill``): larger pose and yaw error, a
slower spiral (none below skill 0.3), higher and noisier ("jerky") gains.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from simdist_core.config import apply_overrides
from simdist_core.sim.ur5e import quarter_turn
from simdist_core.sim.ur5e_env import UR5eInsertEnv


@dataclass(frozen=True, kw_only=True)
class ExpertConfig:
    """Behaviour of the scripted expert (defaults = full skill)."""

    pose_error_m: float = 0.0
    """Aim = the registered fixture pose + this, in a random direction drawn per episode."""
    yaw_error_rad: float = 0.0
    """Further peg yaw error =U(-r, r) per episode, on top of the registered yaw's."""
    hover_m: float = 0.01
    """Approach height of the tip above the fixture top."""
    descend_speed: float = 0.6
    """Normalised |action| while descending (x max_step_m per step)."""
    touch_speed: float = 0.2
    """Normalised |action| within 4 mm of the fixture top (softer impact)."""
    touch_force_n: float = 8.0
    """Upward wrist force that ends the descent (switch to search) before the target winds up."""
    press_m: float = 0.002
    """Target this far below the tip while searching (~8 N with the default servos)."""
    spiral_pitch_m: float = 0.0008
    spiral_speed_m: float = 0.0015
    """Arc length per control step of the spiral (0 = no search: keep pressing in place)."""
    spiral_max_radius_m: float = 0.006
    gain: float = 0.5
    """Action = gain * (desired - target) / max_step. 1.0 would be deadbeat without delay but is only
    marginally stable with one step of latency; 0.5 keeps the closed loop stable up to two steps."""
    action_noise: float = 0.0
    """Gaussian noise std added to every action ("jerky")."""
    turn_speed: float = 0.8
    """Normalised clockwise yaw action while threading."""

    def __post_init__(self) -> None:
        for name in ("pose_error_m", "yaw_error_rad", "press_m", "spiral_speed_m", "action_noise"):
            if getattr(self, name) < 0:
                raise ValueError(f"ExpertConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("hover_m", "descend_speed", "touch_speed", "touch_force_n", "spiral_pitch_m",
                     "spiral_max_radius_m", "gain", "turn_speed"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ExpertConfig.{name} must be > 0, got {getattr(self, name)!r}")

    @classmethod
    def from_skill(cls, skill: float) -> ExpertConfig:
        """Degrade the expert linearly as ``skill`` goes from 1 (full) to 0.

        extra pose error 0 -> 4.5 mm, yaw error 0 -> 0.08 rad, spiral speed 1.5 -> 0 mm/step (none below 0.3),
        gain 0.5 -> 1.5 (overshoot), action noise 0 -> 0.4.

        Raises:
            ValueError: skill outside [0, 1].
        """
        if not 0.0 <= skill <= 1.0:
            raise ValueError(f"skill must be in [0, 1], got {skill=}")
        lack = 1.0 - skill
        return cls(pose_error_m=0.0045 * lack, yaw_error_rad=0.08 * lack,
                   spiral_speed_m=0.0015 * skill if skill >= 0.3 else 0.0, gain=0.5 + 1.0 * lack,
                   action_noise=0.4 * lack)


class UR5eExpert:
    """Privileged scripted controller; ``Policy`` protocol: ``reset(env, rng)``, ``act(env)``."""

    def __init__(self, cfg: ExpertConfig | None = None) -> None:
        self.cfg = cfg or ExpertConfig()
        self.rng = np.random.default_rng()
        self.phase = "approach"
        self._hole_xy = np.zeros(2)
        self._yaw_goal = 0.0
        self._theta = 0.0
        self._stall = 0
        self._prev_z = 0.0

    def reset(self, env: UR5eInsertEnv, rng: np.random.Generator | None = None) -> None:
        """Draw this episode's pose error and plan the approach (call after ``env.reset``)."""
        self.rng = rng if rng is not None else np.random.default_rng()
        state = env.privileged_state()
        estimate = env.fixture_estimate.astype(np.float64)  # (x, y, yaw): the task command
        angle = self.rng.uniform(0, 2 * math.pi)  # error direction =U(0, 2 pi)
        self._hole_xy = estimate[:2] + self.cfg.pose_error_m * np.array([math.cos(angle), math.sin(angle)])
        self._yaw_goal = float(env.sim.lowlevel.target_yaw)
        if env.cfg.task == "peg":  # turn the shortest way to the nearest quarter-turn match of the registered yaw
            off = quarter_turn(float(state["tcp_yaw"]) - estimate[2])
            self._yaw_goal -= off - self.rng.uniform(-1, 1) * self.cfg.yaw_error_rad
        self.phase = "approach"
        self._theta = 0.0
        self._stall = 0
        self._prev_z = float(state["tcp_pos"][2])

    def resume(self, env: UR5eInsertEnv, rng: np.random.Generator | None = None) -> None:
        """Take over mid-episode: plan as ``reset`` does, then start in the phase the state is in.

        Why: the value fit's continuations (``data.rollout.branch_expert_episodes``) need the expert's
        value of a state another policy reached. ``reset`` restarts the approach, so from a tip already
        at the hole the expert would first lift to hover height and the state would be labelled with a
        retract-and-retry value. Here a part already in (depth > 3 mm) goes on inserting, a tip low over
        the hole (within hover height and the spiral's radius of the aim) descends, which turns into the
        search once it feels the lip; anything else approaches.
        """
        self.reset(env, rng)
        state = env.privileged_state()
        tcp = state["tcp_pos"]
        top_z = float(state["fixture_pos"][2]) + env.cfg.scene.fixture_height_m
        if float(state["insertion_depth"]) > 0.003:
            self.phase = "insert"
            self._hole_xy = tcp[:2].copy()  # as in ``_desired``: the part found the hole, follow it
        elif (tcp[2] < top_z + self.cfg.hover_m + 0.003
              and np.linalg.norm(tcp[:2] - self._hole_xy) < self.cfg.spiral_max_radius_m):
            self.phase = "descend"

    def act(self, env: UR5eInsertEnv) -> np.ndarray:
        """Next normalised action (4,) float32 in [-1, 1]."""
        state = env.privileged_state()
        ll = env.sim.lowlevel
        top_z = float(state["fixture_pos"][2]) + env.cfg.scene.fixture_height_m
        tcp = state["tcp_pos"]
        depth = float(state["insertion_depth"])
        desired, yaw_rate, speed = self._desired(env, tcp, top_z, depth)
        step = np.array([ll.cfg.max_step_m] * 3)
        move = self.cfg.gain * (desired - ll.target_pos) / step
        norm = np.max(np.abs(move))
        if norm > speed:  # keep the direction when limiting the speed
            move *= speed / norm
        yaw = yaw_rate if yaw_rate is not None else self.cfg.gain * (self._yaw_goal - ll.target_yaw) / (
            ll.cfg.max_yaw_step_rad)
        action = np.append(move, yaw) + self.rng.normal(0.0, self.cfg.action_noise, size=4)
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def _desired(self, env: UR5eInsertEnv, tcp: np.ndarray, top_z: float,
                 depth: float) -> tuple[np.ndarray, float | None, float]:
        """Desired TCP target, yaw action override (threading) and speed limit for the current phase."""
        cfg, ecfg = self.cfg, env.cfg
        bottom_z = top_z - ecfg.scene.hole_depth_m - 0.003  # aim past the floor: the floor stops the part
        if self.phase == "approach":
            desired = np.array([*self._hole_xy, top_z + cfg.hover_m])
            if np.linalg.norm(desired - tcp) < 0.003 and np.linalg.norm(desired - env.sim.lowlevel.target_pos) < 1e-3:
                self.phase = "descend"
            return desired, None, 1.0
        if depth > 0.003 and self.phase in ("descend", "search"):
            self.phase = "insert"
            self._hole_xy = tcp[:2].copy()  # the part found the hole: follow it
        stalled = self._stalled(float(tcp[2]))
        if self.phase == "descend":
            touching = -env.sim.wrench()[2] > cfg.touch_force_n  # the wrist feels the lip: stop pushing at once
            if (stalled or touching) and tcp[2] < top_z + 0.003:
                self.phase = "search"
            near = tcp[2] < top_z + 0.004
            return np.array([*self._hole_xy, bottom_z]), None, cfg.touch_speed if near else cfg.descend_speed
        if self.phase == "search":
            return self._spiral(tcp), None, 1.0
        if ecfg.task == "peg":
            return np.array([*tcp[:2], bottom_z]), None, cfg.descend_speed
        # Table leg: centre in the hole, go to the helix depth, then turn clockwise while following it.
        helix_z = top_z - env.helix_depth_m()
        centre = env.privileged_state()["fixture_pos"][:2]
        if self.phase == "insert" and abs(tcp[2] - helix_z) < 0.5 * ecfg.thread.slip_tol_m:
            self.phase = "thread"
        lead = ecfg.thread.pitch_m * cfg.turn_speed * env.sim.lowlevel.cfg.max_yaw_step_rad / (2 * math.pi)
        if self.phase == "thread":
            return np.array([*centre, helix_z - lead]), -cfg.turn_speed, 1.0
        return np.array([*centre, helix_z]), None, cfg.touch_speed

    def _stalled(self, z: float) -> bool:
        """True once the tip has not gone down for 3 control steps."""
        self._stall = self._stall + 1 if self._prev_z - z < 2e-4 else 0
        self._prev_z = z
        return self._stall >= 3

    def _spiral(self, tcp: np.ndarray) -> np.ndarray:
        """Next point of an Archimedean spiral around the hole estimate, pressing ``press_m`` down."""
        cfg = self.cfg
        b = cfg.spiral_pitch_m / (2 * math.pi)
        radius = b * self._theta
        self._theta += cfg.spiral_speed_m / max(radius, cfg.spiral_pitch_m)  # constant arc speed
        if b * self._theta > cfg.spiral_max_radius_m:
            self._theta = 0.0  # start the spiral over
        offset = b * self._theta * np.array([math.cos(self._theta), math.sin(self._theta)])
        return np.array([*(self._hole_xy + offset), tcp[2] - cfg.press_m])


def make_ur5e_expert(env: UR5eInsertEnv | None = None, skill: float = 1.0,
                     rng: np.random.Generator | None = None,
                     overrides: Mapping[str, str] | None = None) -> UR5eExpert:
    """The scripted expert at ``skill`` in [0, 1] (1 = full; see ``ExpertConfig.from_skill``).

    ``env`` and ``rng`` are accepted for the expert-registry signature; the expert is bound to an
    env at ``reset(env, rng)``. ``overrides``: ``ExpertConfig`` fields as strings, applied after the skill.
    """
    expert = UR5eExpert(apply_overrides(ExpertConfig.from_skill(skill), overrides or {}))
    if rng is not None:
        expert.rng = rng
    return expert


def measure_expert(task_id: str, episodes: int, overrides: Mapping[str, str] | None = None, *,
                   skill: float = 1.0, seed: int = 0) -> dict[str, float]:
    """Closed-loop success of the expert over ``episodes`` seeded episodes (rendering off unless overridden).

    Returns:
        success_rate, mean_duration_s (successful episodes), mean_peak_force_n, episodes, env_steps.

    Raises:
        ValueError: ``episodes`` < 1 or a bad override.
    """
    from simdist_core.sim.base import make_env

    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes=}")
    env = make_env(task_id, {"render": "false", **(overrides or {})})
    expert = make_ur5e_expert(env, skill)
    successes, durations, peaks, steps = 0, [], [], 0
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        expert.reset(env, np.random.default_rng(seed + 10_000 + episode))
        peak, done = 0.0, False
        while not done:
            result = env.step(expert.act(env))
            peak = max(peak, float(result.info["contact_force_n"]))
            done = result.terminated or result.truncated
            steps += 1
        metrics = env.metrics()
        successes += int(metrics["success"])
        if metrics["success"]:
            durations.append(metrics["duration_s"])
        peaks.append(peak)
    env.close()
    return {"success_rate": successes / episodes, "mean_duration_s": float(np.mean(durations)) if durations else
            float("nan"), "mean_peak_force_n": float(np.mean(peaks)), "episodes": float(episodes),
            "env_steps": float(steps)}


__all__ = ["ExpertConfig", "UR5eExpert", "make_ur5e_expert", "measure_expert"]
