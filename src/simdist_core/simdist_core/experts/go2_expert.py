"""Privileged model-based trot expert for the Go2, its weaker variants, and a measuring helper.

Each control step (50 Hz) the expert, reading ``env.privileged_state()`` and the exact terrain height:

1. Reads the env's gait clock (diagonal trot FL+RR / FR+RL, period ``gait_period_s``, duty ``gait_duty``).
2. Moves a velocity reference towards the command within what the feet can push for. With the true foot
   friction mu and the steepest terrain slope theta, the friction margin ``m = mu cos(theta) - sin(theta)``
   is the acceleration (in g) the ground can give along the incline. The reference accelerates at most at
   ``accel_friction_fraction * g * m``, its speed is capped at ``speed_per_margin_m_s * m``, and below
   ``full_margin`` the base may lag a reference point moving at it by proportionally less (the lag is turned
   into extra speed demand). On rigid ground with mu 0.8 this only ramps the start (about 0.25 s to 1 m/s);
   on the 8 deg, mu 0.22 PTFE incline (m = 0.079) it caps the speed at 0.71 m/s and ramps over ~2 s.
   Without it the trot asked for the command at once from standing, the stance feet saturated the friction
   cone, slid and the base rolled over within 1-2 s (2 of 3 episodes, commands 0.66 and 0.75 m/s).
3. Builds the *desired* body frame: current xy advanced by the target velocity over a look-ahead, height
   ``body_height_m`` above the terrain, yaw = heading target, pitch = terrain slope along the heading.
4. Stance feet stay where they are in the world; swing feet follow a lift-and-place arc to a Raibert
   target ``hip + v T_stance / 2 + k (v - v_target)`` on the terrain surface.
5. Expresses all feet in the desired body frame and solves analytic IK (``go2_kinematics``).
6. Adds the stance legs' gravity share as a target offset ``J^T f / kp`` and converts the joint targets to
   the normalised action of the fixed low-level PD (``Go2LowLevel.action_from_targets``). So the expert's
   whole intent is a joint target: exactly what the planner outputs and the dataset records.

Weaker variants (``make_go2_expert(env, skill)``, skill in [0, 1]; 1 = the expert). With ``b = 1 - skill``:
feedback gains (reference tracking, Raibert, heading) scale by ``1 - 0.7 b``; the expert's gait clock runs
with period ``x (1 + 0.3 b)`` against the env's clock (mistimed gait); state is read ``round(3 b)`` control
steps late (delayed estimator); touchdown targets get Gaussian noise of ``0.04 b`` m; the gravity share
scales by ``1 - 0.4 b``. Measured on go2/flat (3 x 10 s, vx ~U(0.3, 1)): skill 1 -> 0.64 m/s, 0 falls/min;
0.75 -> 0.61 m/s, 0 falls/min; 0.5 -> 0.24 m/s, 15 falls/min; 0.25 -> -0.05 m/s, 27 falls/min. On go2/ptfe_slope
(2 x 6 s, vx 0.6): skill 1 -> 2.9 m, 0.75 -> 2.2 m, both without falls; 0.4 -> -0.5 m, 25 falls/min.

Expert on each task (``python -m simdist_core.experts.go2_expert``, 3 x 20 s, the seeds of ``simdist bench
generate``), progress per episode / falls per minute: flat 12.6 m / 0; slope 10 deg 12.5 m / 0; rough 10.9 m / 0;
foam 12.7 m / 0; ptfe_slope 11.6 m / 0 (a fixed trot without the friction-aware reference: 3.3 m / 5.1).
It walks up and down the PTFE incline but not across it: started 25-90 deg off the fall line at mu 0.22 it
slides sideways and falls within ~1 s (at mu 0.4 from 45 deg), so yaw-rate commands of +-0.5 rad/s there give
6 falls/min. The tasks command no turning and start on the fall line (pretraining: within +-17 deg).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import mujoco
import numpy as np

from simdist_core.config import apply_overrides, parse_overrides
from simdist_core.experts.go2_kinematics import foot_ik
from simdist_core.sim.go2_constants import FOOT_RADIUS_M, HIP_OFFSETS_M, LEG_SIDE, THIGH_Y_OFFSET_M
from simdist_core.sim.go2_obs import yaw_from_quat
from simdist_core.sim.go2_rewards import PAIR_OFFSET

_GRAVITY_M_S2 = 9.81
_NOMINAL_FEET_XY_M = HIP_OFFSETS_M + np.outer(LEG_SIDE, [0.0, THIGH_Y_OFFSET_M, 0.0])
"""Foot xy under each thigh joint (base frame, z = 0), (4, 3): feet at y = +-0.142 m as in the home pose."""


@dataclass(frozen=True, kw_only=True)
class Go2ExpertConfig:
    """Gains and gait of the trot expert.

    The defaults walk 0.3-1.0 m/s on flat ground and 10 deg slopes, and up the 8 deg, mu 0.22 incline at up to
    0.71 m/s (the friction-aware speed cap).
    """

    body_height_m: float = 0.27
    swing_height_m: float = 0.08
    lookahead_s: float = 0.06
    """How far ahead the joint targets are placed (the PD lags its target)."""
    raibert_gain_s: float = 0.05
    raibert_clip_m: float = 0.15
    reference_gain: float = 2.0
    """Velocity correction (1/s) per metre that the base lags a reference point moving at the command."""
    reference_lead_clamp_m: float = 0.15
    """Largest lag of the base behind the reference point (anti wind-up)."""
    heading_gain: float = 1.0
    gravity_share: float = 1.0
    accel_friction_fraction: float = 0.5
    """Share of the friction-limited acceleration ``g (mu cos(slope) - sin|slope|)`` the velocity reference uses."""
    speed_per_margin_m_s: float = 9.0
    """Speed cap (m/s) per unit of friction margin ``mu cos(slope) - sin|slope|`` (0.71 m/s on mu 0.22, 8 deg)."""
    full_margin: float = 0.3
    """Friction margin at and above which the reference lead clamp is not reduced; below, it shrinks in
    proportion (a lead asks for extra speed the feet cannot push for on a slippery incline)."""
    accel_friction_cap: float = 0.0
    """If > 0, the acceleration limit and the lead clamp use ``min(mu, accel_friction_cap)`` instead of the true
    friction mu (0: the true friction; the speed cap always uses it). Why: a learner that imitates the expert
    without seeing the friction cannot tell how fast the expert will speed up from a stand, and learns the average,
    which on low grip saturates the stance feet and rolls the base over within 1-2 s (the failure the friction-aware
    reference was made against). With the cap at the lowest friction of the training range, the expert speeds up
    the same way on every ground it is trained on."""
    skill: float = 1.0
    """1 = expert; lower values degrade it (module docstring); 0 is the weakest variant."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.skill <= 1.0:
            raise ValueError(f"skill must be in [0, 1], got {self.skill=}")
        if not 0.15 <= self.body_height_m <= 0.35:
            raise ValueError(f"body_height_m must be in [0.15, 0.35], got {self.body_height_m=}")
        if not 0.0 <= self.swing_height_m <= 0.2:
            raise ValueError(f"swing_height_m must be in [0, 0.2], got {self.swing_height_m=}")
        for name in ("accel_friction_fraction", "speed_per_margin_m_s", "full_margin"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be > 0, got {name}={getattr(self, name)}")
        if not 0.0 <= self.accel_friction_cap <= 3.0:
            raise ValueError(f"accel_friction_cap must be in [0, 3] (0: off), got {self.accel_friction_cap=}")


class Go2TrotExpert:
    """Implements ``experts.base.Policy`` for ``Go2Env``."""

    def __init__(self, config: Go2ExpertConfig | None = None) -> None:
        self.config = config if config is not None else Go2ExpertConfig()
        b = 1.0 - self.config.skill
        self._period_scale = 1.0 + 0.3 * b
        self._delay_steps = int(round(3 * b))
        self._placement_noise_m = 0.04 * b
        self._gain_scale = 1.0 - 0.7 * b
        self._gravity_scale = self.config.gravity_share * (1.0 - 0.4 * b)
        self._rng = np.random.default_rng(0)

    def reset(self, env: Any, rng: np.random.Generator) -> None:  # env: Go2Env
        """Start a new episode: heading target, integrator, swing bookkeeping."""
        self._rng = rng
        state = env.privileged_state()
        self._heading = yaw_from_quat(state["base_quat"])
        self._ref_xy = state["base_pos"][:2].copy()
        self._v_ref = np.zeros(2)  # world xy velocity the reference point moves at; ramps towards the command
        self._liftoff = state["foot_pos_world"].copy()  # (4, 3)
        self._was_swing = np.zeros(4, dtype=bool)
        self._noise = np.zeros((4, 2))
        self._history: deque[dict[str, np.ndarray]] = deque(maxlen=self._delay_steps + 1)
        self._jacp = np.zeros((3, env.model.nv))

    def act(self, env: Any) -> np.ndarray:  # env: Go2Env
        """Normalised joint-target action (12,) float32."""
        c, dt = self.config, env.control_dt_s
        self._history.append(env.privileged_state())
        s = self._history[0]  # delayed by up to ``_delay_steps`` control steps at low skill
        yaw = yaw_from_quat(s["base_quat"])
        cmd = s["command"]
        period = env.config.gait_period_s * self._period_scale
        duty = env.config.gait_duty
        leg_phase = (float(s["time_s"]) / period + PAIR_OFFSET) % 1.0  # (4,)
        stance = leg_phase < duty
        # Heading hold on a moving heading target; velocity from a friction-aware reference (module docstring).
        self._heading += cmd[2] * dt
        yaw_rate = cmd[2] + c.heading_gain * self._gain_scale * _wrap(self._heading - yaw)
        v_world = self._reference_velocity(env, s, yaw, dt)
        # Desired body frame at t + lookahead.
        base = s["base_pos"] + v_world * c.lookahead_s
        ground = float(env.terrain_height(base[0], base[1]))
        slope = _slope_along(env, base, yaw)
        yaw_des = yaw + yaw_rate * c.lookahead_s
        rot_des = _rot_zy(yaw_des, -slope)
        base[2] = ground + c.body_height_m / max(math.cos(slope), 0.5)
        v_world[2] = math.tan(slope) * np.linalg.norm(v_world[:2])
        feet = s["foot_pos_world"].copy()  # (4, 3) current foot-sphere centres
        self._plan_swing(env, s, yaw, v_world, cmd, stance, leg_phase, duty, period, feet)
        feet_body = (feet - base) @ rot_des  # (4, 3) in the desired body frame
        q_des = foot_ik(feet_body).ravel()  # (12,)
        q_des += self._gravity_offsets(env, stance)
        return env.low_level.action_from_targets(q_des)

    def _reference_velocity(self, env: Any, s: dict[str, np.ndarray], yaw: float, dt: float) -> np.ndarray:
        """World velocity target (3,) (z = 0): the ramped, capped reference plus its point-tracking correction.

        A reference point moves at the reference velocity and the base is pulled towards it (PI-like velocity
        control); its lead over the base is clamped so a stalled robot does not wind it up.
        """
        c, cmd = self.config, s["command"]
        cy, sy = math.cos(yaw), math.sin(yaw)
        v_cmd = np.array([cy * cmd[0] - sy * cmd[1], sy * cmd[0] + cy * cmd[1]])
        mu, slope = float(s.get("domain_friction", 0.8)), _steepest_slope(env, s["base_pos"])
        speed, cap = float(np.linalg.norm(v_cmd)), c.speed_per_margin_m_s * _friction_margin(mu, slope)
        if speed > cap:
            v_cmd *= cap / speed
        if c.accel_friction_cap > 0.0:  # speed up as on the most slippery ground trained on (config docstring)
            mu = min(mu, c.accel_friction_cap)
        margin = _friction_margin(mu, slope)
        dv = v_cmd - self._v_ref
        max_dv = c.accel_friction_fraction * _GRAVITY_M_S2 * margin * dt
        norm_dv = float(np.linalg.norm(dv))
        self._v_ref = v_cmd if norm_dv <= max_dv else self._v_ref + dv * (max_dv / norm_dv)
        v_world = np.array([self._v_ref[0], self._v_ref[1], 0.0])
        self._ref_xy += self._v_ref * dt
        lead = self._ref_xy - s["base_pos"][:2]
        limit = c.reference_lead_clamp_m * self._gain_scale
        if float(lead @ self._v_ref) > 0.0:  # behind the reference: catching up needs traction, slowing down does not
            limit *= min(1.0, margin / c.full_margin)
        norm = float(np.linalg.norm(lead))
        if norm > limit:
            lead *= limit / norm
        self._ref_xy = s["base_pos"][:2] + lead
        v_world[:2] += c.reference_gain * self._gain_scale * lead
        return v_world

    def _plan_swing(
        self,
        env: Any,
        s: dict[str, np.ndarray],
        yaw: float,
        v_world: np.ndarray,
        cmd: np.ndarray,
        stance: np.ndarray,
        leg_phase: np.ndarray,
        duty: float,
        period: float,
        feet: np.ndarray,
    ) -> None:
        """Overwrite the swing legs' rows of ``feet`` (4, 3) with their arc targets at t + lookahead."""
        c = self.config
        swing = ~stance
        started = swing & ~self._was_swing
        self._liftoff[started] = s["foot_pos_world"][started]
        self._noise[started] = self._rng.normal(0.0, self._placement_noise_m, (int(started.sum()), 2))
        self._was_swing = swing
        if not swing.any():
            return
        t_swing = (1.0 - duty) * period
        progress = np.clip((leg_phase - duty) / (1.0 - duty) + c.lookahead_s / t_swing, 0.0, 1.0)  # (4,)
        remaining = (1.0 - progress) * t_swing
        v_actual = s["base_lin_vel_world"]
        hips = s["base_pos"] + _NOMINAL_FEET_XY_M @ _rot_z(yaw).T  # (4, 3) under the thighs, level heading
        hip_td = hips + v_world * remaining[:, None]
        step = v_world[:2] * (duty * period) / 2 + c.raibert_gain_s * self._gain_scale * (v_actual[:2] - v_world[:2])
        step = np.clip(step, -c.raibert_clip_m, c.raibert_clip_m)
        target_xy = hip_td[:, :2] + step + self._noise
        target_z = env.terrain_height(target_xy[:, 0], target_xy[:, 1]) + FOOT_RADIUS_M - 0.01
        blend = 0.5 - 0.5 * np.cos(np.pi * progress)  # smooth start and stop
        arc = c.swing_height_m * np.sin(np.pi * progress)
        xy = self._liftoff[:, :2] + (target_xy - self._liftoff[:, :2]) * blend[:, None]
        z = self._liftoff[:, 2] + (target_z - self._liftoff[:, 2]) * blend + arc
        feet[swing, :2] = xy[swing]
        feet[swing, 2] = z[swing]

    def _gravity_offsets(self, env: Any, stance: np.ndarray) -> np.ndarray:
        """Joint-target offsets (12,) = J^T f / kp for the stance legs' share of the weight."""
        out = np.zeros(12)
        n_stance = int(stance.sum())
        if n_stance == 0 or self._gravity_scale == 0.0:
            return out
        m, d, sc = env.model, env.data, env.scene
        mass = float(np.sum(m.body_mass))
        force = np.array([0.0, 0.0, -mass * _GRAVITY_M_S2 / n_stance]) * self._gravity_scale  # foot on ground
        kp = env.low_level.config.kp_nm_per_rad
        for leg in np.flatnonzero(stance):
            geom = sc.foot_geom_ids[leg]
            mujoco.mj_jac(m, d, self._jacp, None, d.geom_xpos[geom], m.geom_bodyid[geom])
            dofs = sc.dof_adr[3 * leg : 3 * leg + 3]
            out[3 * leg : 3 * leg + 3] = self._jacp[:, dofs].T @ force / kp
        return out


def make_go2_expert(
    env: Any = None,
    skill: float = 1.0,
    rng: np.random.Generator | None = None,
    config: Go2ExpertConfig | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Go2TrotExpert:
    """The trot expert (skill=1) or a systematically weaker variant (skill < 1), reset on ``env`` if given.

    ``overrides``: ``Go2ExpertConfig`` fields as strings (``simdist dagger --expert KEY=VALUE``), applied to
    ``config``. Raises ValueError for an unknown key or a bad value.
    """
    config = apply_overrides(config if config is not None else Go2ExpertConfig(), overrides or {})
    expert = Go2TrotExpert(replace(config, skill=skill))
    if env is not None:
        expert.reset(env, rng if rng is not None else np.random.default_rng())
    return expert


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


def _slope_along(env: Any, base: np.ndarray, yaw: float) -> float:
    """Terrain inclination (rad) along the heading, from heights 0.3 m ahead and behind."""
    c, s = 0.3 * math.cos(yaw), 0.3 * math.sin(yaw)
    ahead = float(env.terrain_height(base[0] + c, base[1] + s))
    behind = float(env.terrain_height(base[0] - c, base[1] - s))
    return math.atan2(ahead - behind, 0.6)


def _friction_margin(mu: float, slope: float) -> float:
    """Friction-limited acceleration in g on an incline of ``slope`` rad: ``mu cos(slope) - sin|slope|`` (>= 0.02)."""
    return max(mu * math.cos(slope) - math.sin(slope), 0.02)


def _steepest_slope(env: Any, base: np.ndarray) -> float:
    """Terrain inclination (rad) along the steepest direction, from heights 0.3 m around ``base``.

    Standing across a slope loads the friction cone as much as along it, so the margin uses this.
    """
    x, y = float(base[0]), float(base[1])
    h = env.terrain_height(np.array([x + 0.3, x - 0.3, x, x]), np.array([y, y, y + 0.3, y - 0.3]))
    return math.atan(math.hypot(h[0] - h[1], h[2] - h[3]) / 0.6)


def _rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _rot_zy(yaw: float, pitch: float) -> np.ndarray:
    """Rotation yaw about z then pitch about the new y (body to world)."""
    c, s = math.cos(pitch), math.sin(pitch)
    return _rot_z(yaw) @ np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def measure_expert(
    task: str,
    seconds: float = 20.0,
    episodes: int = 3,
    skill: float = 1.0,
    seed: int = 0,
    overrides: dict[str, str] | None = None,
    expert_overrides: dict[str, str] | None = None,
) -> dict[str, float]:
    """Run the expert (or a ``skill`` variant) on ``task`` and summarise its walking.

    Each episode lasts ``seconds`` of simulated time or until a fall. Returns the mean
    ``forward_progress_m`` per episode, ``falls_per_min`` (falls per simulated minute), ``speed_m_s``
    (total progress / total time), ``foot_slip_m_per_s``, ``sim_seconds`` and ``transitions_per_s``
    (wall clock, expert + env step incl. height map; depends on machine load).
    """
    import time

    from simdist_core.sim.base import make_env

    if seconds <= 0 or episodes < 1:
        raise ValueError(f"need seconds > 0 and episodes >= 1, got {seconds=}, {episodes=}")
    overrides = {"episode_length_s": str(max(seconds, 1.0)), **(overrides or {})}
    env = make_env(task, overrides)
    rng = np.random.default_rng(seed)
    progress, falls, total_s, slip = [], 0, 0.0, 0.0
    start = time.perf_counter()
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        expert = make_go2_expert(env, skill, rng, overrides=expert_overrides)
        for _ in range(int(round(seconds * env.spec.control_hz))):
            result = env.step(expert.act(env))
            if result.terminated or result.truncated:
                break
        metrics = env.metrics()
        progress.append(metrics["forward_progress_m"])
        falls += int(metrics["fell"])
        total_s += metrics["duration_s"]
        slip += metrics["foot_slip_m"]
    return {
        "forward_progress_m": float(np.mean(progress)),
        "falls_per_min": falls / (total_s / 60.0),
        "speed_m_s": float(np.sum(progress)) / total_s,
        "foot_slip_m_per_s": slip / total_s,
        "sim_seconds": total_s,
        "transitions_per_s": total_s * env.spec.control_hz / (time.perf_counter() - start),
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m simdist_core.experts.go2_expert``: print (and optionally save) the expert's table per task."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument(
        "--tasks", nargs="+", default=["go2/flat", "go2/slope", "go2/rough", "go2/ptfe_slope", "go2/foam"]
    )
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--skill", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="first episode seed")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="task config override, e.g. terrain.friction=0.3")
    parser.add_argument("--expert", action="append", default=[], metavar="KEY=VALUE",
                        help="Go2ExpertConfig field, e.g. accel_friction_cap=0.25")
    parser.add_argument("--json", default=None, help="write the results to this JSON file")
    args = parser.parse_args(argv)
    overrides, expert_overrides = parse_overrides(args.overrides), parse_overrides(args.expert)
    results = {task: measure_expert(task, args.seconds, args.episodes, args.skill, args.seed, overrides,
                                    expert_overrides) for task in args.tasks}
    print(f"{'task':<16} {'progress_m':>10} {'falls/min':>9} {'speed_m_s':>9} {'slip_m_s':>8} {'trans/s':>8}")
    for task, r in results.items():
        print(
            f"{task:<16} {r['forward_progress_m']:>10.2f} {r['falls_per_min']:>9.2f} {r['speed_m_s']:>9.3f} "
            f"{r['foot_slip_m_per_s']:>8.3f} {r['transitions_per_s']:>8.0f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"skill": args.skill, "seconds": args.seconds, "episodes": args.episodes, "seed": args.seed,
                       "overrides": overrides, "expert_overrides": expert_overrides, "results": results}, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
