"""UR5e insertion env (peg insertion and table-leg threading) implementing ``sim.base.RobotEnv``.

One control step = one normalised action (dx, dy, dz, dyaw) at 20 Hz through ``UR5eLowLevel``.
The fixture pose is drawn per episode; "real world" shifts (latency, servo gain, part mass,
friction) are applied to the compiled model once, at construction.

Observation: ``proprio`` (23,), ``image`` (64, 64, 3) and ``command`` (3,), the fixture pose as a
cell's operator registers it (hole x, y in the base frame and yaw), ``fixture.estimate_error_m`` off
the true hole. Without it the model had to locate a 21 mm hole from a 64 px scene camera at
6.7 mm per pixel; the (retired) model trained that way never moved toward the hole (0/24 insertions).

Table-leg threading uses a force model of the thread instead of a screw joint: once the leg tip is
engaged (deeper than ``engage_depth_m - slip_tol_m``, inside the hole) the thread holds it on the
helix with an axial spring, centres it with a lateral spring and resists turning with a friction
torque, applied every physics step (so the wrist F/T sensor feels the thread). Thread progress counts
clockwise turns (seen from above) only while the leg tip is on the helix, i.e. its depth in the hole
is within ``thread.slip_tol_m`` of ``engage_depth_m + pitch_m * turns_so_far`` (too shallow: the
thread is not engaged; too deep: cross-threaded). Turning back unscrews. Success = ``thread.turns``
turns of progress. The round leg turns freely in its square hole, so the dynamics that matter are
holding depth and position under contact while turning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from simdist_core.robots import UR5E
from simdist_core.sim import ur5e_constants as consts
from simdist_core.sim.base import DelayLine, StepResult, draw_steps
from simdist_core.sim.ur5e import LowLevelConfig, UR5eSim, proprio_from_sensors, quarter_turn
from simdist_core.sim.ur5e_scene import SceneConfig, mujoco

GRID_HALF_RANGE_M = {"narrow": 0.02, "wide": 0.08}
"""Fixture (x, y) is drawn +U(-r, r) around ``fixture.center_m`` per axis."""


def _positive(obj: object, *names: str) -> None:
    for name in names:
        if not getattr(obj, name) > 0:
            raise ValueError(f"{type(obj).__name__}.{name} must be > 0, got {getattr(obj, name)!r}")


@dataclass(frozen=True, kw_only=True)
class FixtureConfig:
    """Where the hole is, per episode."""

    grid: Literal["narrow", "wide"] = "narrow"
    """Half-range of the (x, y) draw: narrow +-2 cm, wide +-8 cm."""
    center_m: tuple[float, float] = (0.15, -0.5)
    """Nominal hole centre (x, y) in the base frame."""
    yaw_range_rad: float = 0.2
    """Fixture yaw =U(-r, r)."""
    estimate_error_m: float = 0.0015
    """The task command (the fixture pose the operator registered, as on a real cell: taught point or
    CAD) misses the true hole centre by this much, in a direction =U(0, 2 pi) per episode. More than
    the 0.5 mm per side of clearance, so the last millimetres are a contact search, not a lookup."""
    estimate_yaw_error_rad: float = 0.01
    """Yaw of the registered pose = true yaw +U(-r, r)."""

    def __post_init__(self) -> None:
        if self.estimate_error_m < 0 or self.estimate_yaw_error_rad < 0:
            raise ValueError(f"fixture estimate errors must be >= 0, got {self.estimate_error_m=}, "
                             f"{self.estimate_yaw_error_rad=}")
        if self.grid not in GRID_HALF_RANGE_M:
            raise ValueError(f"fixture.grid must be one of {sorted(GRID_HALF_RANGE_M)}, got {self.grid=}")
        if not 0 <= self.yaw_range_rad <= math.pi / 4:
            raise ValueError(f"fixture.yaw_range_rad must be in [0, pi/4], got {self.yaw_range_rad=}")


@dataclass(frozen=True, kw_only=True)
class ShiftConfig:
    """Contact/actuation shift applied to the model ("real world" variants); defaults = nominal."""

    latency_steps: int = 0
    """Actions take effect this many control steps (50 ms each) late."""
    latency_steps_max: int = -1
    """Above ``latency_steps``: each episode draws its latency uniformly from ``latency_steps`` ..
    ``latency_steps_max`` (domain randomisation, so data show what a late command does; a real cell's latency is
    known only roughly). Below it (default): every episode has ``latency_steps``."""
    servo_gain_scale: float = 1.0
    """Arm servo stiffness kp *= this (damping kv unchanged)."""
    part_mass_scale: float = 1.0
    """Part mass and inertia *= this (the part is not gravity-compensated)."""
    friction_scale: float = 1.0
    """Sliding friction of part, fixture and table *= this."""

    def __post_init__(self) -> None:
        if not 0 <= self.latency_steps <= 20:
            raise ValueError(f"shift.latency_steps must be in [0, 20], got {self.latency_steps=}")
        if self.latency_steps_max > 20:
            raise ValueError(f"shift.latency_steps_max must be <= 20, got {self.latency_steps_max=}")
        _positive(self, "servo_gain_scale", "part_mass_scale", "friction_scale")


@dataclass(frozen=True, kw_only=True)
class RewardConfig:
    """Weights of the named reward terms (logged as ``reward/<term>``) and their length scales."""

    distance: float = 1.0
    """Cost of the tip's distance to its goal depth in the hole (0 there, down to -weight far away)."""
    alignment: float = 0.5
    """Cost of lateral and yaw misalignment with the hole (0 when aligned)."""
    insertion: float = 2.0
    """Cost of the depth still missing to the goal (0 at the goal)."""
    thread: float = 2.0
    """Table leg only: cost of the turns still missing (0 when threaded)."""
    success: float = 10.0
    """Reward on the step that succeeds (it ends the episode)."""
    contact_force: float = 0.5
    """Cost of part contact force above ``force_free_n``, per ``force_scale_n`` (capped at 5x the weight)."""
    distance_scale_m: float = 0.05
    """Length scale of the distance cost (tanh of distance over this)."""
    alignment_scale_m: float = 0.004
    """Length scale of the lateral alignment cost."""
    force_free_n: float = 15.0
    """Contact force below this is free (pressing into the hole is needed)."""
    force_scale_n: float = 50.0
    """Force above ``force_free_n`` that costs one ``contact_force`` weight."""

    def __post_init__(self) -> None:
        _positive(self, "distance_scale_m", "alignment_scale_m", "force_scale_n")


@dataclass(frozen=True, kw_only=True)
class ThreadConfig:
    """Kinematic thread criterion of the table-leg task (see the module docstring)."""

    turns: float = 1.5
    """Clockwise turns while engaged that count as success."""
    pitch_m: float = 0.002
    """Depth gained per turn (M12-like coarse thread is 1.75 mm)."""
    engage_depth_m: float = 0.012
    """Tip depth where the thread starts."""
    slip_tol_m: float = 0.002
    """Half-width of the depth band around the helix in which turns count."""
    axial_stiffness_n_per_m: float = 10_000.0
    """Spring pulling the engaged tip to the helix depth (thread flanks)."""
    lateral_stiffness_n_per_m: float = 3_000.0
    """Spring centring the engaged tip on the hole axis."""
    max_force_n: float = 80.0
    """Saturation of each thread spring force."""
    friction_torque_nm: float = 0.5
    """Thread friction torque against turning (scaled by ``shift.friction_scale``)."""

    def __post_init__(self) -> None:
        _positive(self, "turns", "pitch_m", "engage_depth_m", "slip_tol_m", "axial_stiffness_n_per_m",
                  "lateral_stiffness_n_per_m", "max_force_n")
        if self.friction_torque_nm < 0:
            raise ValueError(f"thread.friction_torque_nm must be >= 0, got {self.friction_torque_nm=}")


@dataclass(frozen=True, kw_only=True)
class UR5eTaskConfig:
    """Everything one UR5e insertion task needs; every field is overridable with ``--set``."""

    task: Literal["peg", "table_leg"] = "peg"
    """Which insertion: square ``peg`` or threaded ``table_leg``."""
    episode_s: float = 15.0
    """Simulated seconds before an episode is truncated."""
    success_depth_m: float = 0.02
    """Peg success: tip this deep in the hole (the hole is ``scene.hole_depth_m`` deep)."""
    start_height_m: float = 0.08
    """Part tip starts this far above the fixture top, over the nominal hole centre."""
    start_noise_m: float = 0.01
    """Start (x, y) +U(-r, r)."""
    start_yaw_noise_rad: float = 0.1
    """Start yaw +U(-r, r) around the hole's yaw."""
    start_wrist3_rad: float = 0.0
    """wrist_3 seed of the start pose (table leg: pre-rotated so 1.5 clockwise turns fit in +-2 pi)."""
    render: bool = True
    """False: obs image is zeros and ``info["image_rendered"]`` is False (fast expert measurements)."""
    scene: SceneConfig = field(default_factory=SceneConfig)
    """Geometry and contact of the part, fixture, table and camera."""
    lowlevel: LowLevelConfig = field(default_factory=LowLevelConfig)
    """Action scaling and IK (shared with the expert, planner and real driver)."""
    fixture: FixtureConfig = field(default_factory=FixtureConfig)
    """Where the fixture is placed per episode."""
    shift: ShiftConfig = field(default_factory=ShiftConfig)
    """Sim-to-real shift (latency, servo gains, part mass, friction)."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """Reward weights and scales."""
    thread: ThreadConfig = field(default_factory=ThreadConfig)
    """Thread criterion of the table-leg task."""

    def __post_init__(self) -> None:
        if self.task not in ("peg", "table_leg"):
            raise ValueError(f"task must be 'peg' or 'table_leg', got {self.task=}")
        _positive(self, "episode_s", "success_depth_m", "start_height_m")
        if self.success_depth_m > self.scene.hole_depth_m:
            raise ValueError(f"success_depth_m must be <= scene.hole_depth_m, got {self.success_depth_m=}, "
                             f"{self.scene.hole_depth_m=}")
        need = self.thread.engage_depth_m + self.thread.pitch_m * self.thread.turns
        if self.task == "table_leg" and need > self.scene.hole_depth_m:
            raise ValueError(f"thread needs {need=} m of hole but scene.hole_depth_m={self.scene.hole_depth_m}")


HOLE_REACH_HEIGHT_M = 0.005
"""The tip counts as at the hole when over its footprint and at most this far above the fixture top."""
ENTRY_DEPTH_M = 0.002
"""A peg counts as entered once its tip is this deep in the hole (more than contact compliance allows on top)."""


class UR5eInsertEnv:
    """Peg insertion / table-leg threading on the simulated UR5e (``RobotEnv`` protocol).

    Besides success, ``metrics`` reports how far an episode got, as a funnel (each 0 or 1; their means over
    episodes say where episodes fail): ``reached_hole`` (the tip over the hole's footprint, at most
    ``HOLE_REACH_HEIGHT_M`` above the fixture top), ``centred_at_hole`` (there with an offset small enough for
    the part to fit at the right yaw), ``aligned_at_hole`` (there with an offset and a yaw at which the square
    peg's outline lies inside the hole's; the round table leg: = centred),
    ``entered_hole`` (peg: ``ENTRY_DEPTH_M`` deep; table leg: engaged in the thread). A failed episode stopped
    at the first stage it did not reach.
    """

    spec = UR5E

    def __init__(self, task_id: str, cfg: UR5eTaskConfig) -> None:
        self.task = task_id
        self.cfg = cfg
        self.sim = UR5eSim(cfg.scene, cfg.lowlevel, render=cfg.render)
        self.model, self.data = self.sim.model, self.sim.data
        self.part_geom = self.model.geom("part_geom").id
        self.hole_half_m = cfg.scene.part_half_width_m + cfg.scene.clearance_m / 2
        self._funnel = {"reached_hole": False, "centred_at_hole": False, "aligned_at_hole": False,
                        "entered_hole": False}
        self.max_steps = round(cfg.episode_s * UR5E.control_hz)
        self._apply_shift(cfg.shift)
        self._rng = np.random.default_rng()
        self._delay = DelayLine(cfg.shift.latency_steps, UR5E.action_dim)
        self.fixture_pos = np.zeros(3)
        self.fixture_yaw = 0.0
        self.fixture_estimate = np.zeros(3, np.float32)
        self.steps = 0
        self.thread_progress_rad = 0.0
        self._prev_yaw = 0.0
        self._success = False
        self._max_depth_m = 0.0

    def _apply_shift(self, shift: ShiftConfig) -> None:
        """Scale servo gains, part mass and friction in the compiled model (no recompiling)."""
        m = self.model
        for act in self.sim.lowlevel.act_ids:
            m.actuator_gainprm[act, 0] *= shift.servo_gain_scale  # affine servo: force = kp*ctrl - kp*q - kv*qdot
            m.actuator_biasprm[act, 1] *= shift.servo_gain_scale
        m.body_mass[self.sim.part_body] *= shift.part_mass_scale
        m.body_inertia[self.sim.part_body] *= shift.part_mass_scale
        for gid in range(m.ngeom):
            if m.geom_contype[gid] & 2:  # part, fixture and table (contact bit 2)
                m.geom_friction[gid, 0] *= shift.friction_scale

    @property
    def latency_steps(self) -> int:
        """Control steps between a command and the step it acts on, this episode."""
        return self._delay.steps

    # -- episode -----------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Draw the fixture pose and the start pose, settle, and return the first observation."""
        self._rng = np.random.default_rng(seed)
        fx = self.cfg.fixture
        half = GRID_HALF_RANGE_M[fx.grid]
        self.fixture_pos = np.array([*fx.center_m, 0.0])
        self.fixture_pos[:2] += self._rng.uniform(-half, half, size=2)  # +U(-r, r)
        self.fixture_yaw = float(self._rng.uniform(-fx.yaw_range_rad, fx.yaw_range_rad))  # =U(-r, r)
        miss = self._rng.uniform(0.0, 2 * math.pi)  # direction of the registration error =U(0, 2 pi)
        self.fixture_estimate = np.array([
            self.fixture_pos[0] + fx.estimate_error_m * math.cos(miss),
            self.fixture_pos[1] + fx.estimate_error_m * math.sin(miss),
            self.fixture_yaw + self._rng.uniform(-fx.estimate_yaw_error_rad, fx.estimate_yaw_error_rad),  # +U(-r, r)
        ], np.float32)  # fmt: skip
        start = np.array([*fx.center_m, self.cfg.scene.fixture_height_m + self.cfg.start_height_m])
        start[:2] += self._rng.uniform(-self.cfg.start_noise_m, self.cfg.start_noise_m, size=2)  # +U(-r, r)
        dyaw = float(self._rng.uniform(-self.cfg.start_yaw_noise_rad, self.cfg.start_yaw_noise_rad))  # +U(-r, r)
        self.sim.reset_arm(self._solve_start(start, dyaw))
        self.sim.set_fixture(self.fixture_pos, self.fixture_yaw)
        # Drawn last, so a seed's other draws (fixture, start pose) are as without randomised latency.
        self._delay = DelayLine(draw_steps(self._rng, self.cfg.shift.latency_steps, self.cfg.shift.latency_steps_max),
                                UR5E.action_dim)  # =U{latency_steps..latency_steps_max}
        self.steps = 0
        self.thread_progress_rad = 0.0
        self._prev_yaw = self.sim.lowlevel.measured(self.data)[1]
        self._success = False
        self._max_depth_m = 0.0
        self._funnel = dict.fromkeys(self._funnel, False)
        return self._obs()

    def _solve_start(self, pos_m: np.ndarray, dyaw_rad: float) -> np.ndarray:
        """Joint angles (6,) putting the TCP at ``pos_m``, yaw = seed yaw + ``dyaw_rad`` (kinematic IK)."""
        ll = self.sim.lowlevel
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[ll.qpos_adr] = consts.HOME_QPOS_RAD
        self.data.qpos[ll.qpos_adr[5]] = self.cfg.start_wrist3_rad
        mujoco.mj_forward(self.model, self.data)
        ll.reset(self.data)
        ll.target_pos, ll.target_yaw = pos_m, ll.target_yaw + dyaw_rad
        for _ in range(100):  # Newton IK steps, the servo command taken as the next pose
            ll.ik_step(self.data, gain=1.0)
            self.data.qpos[ll.qpos_adr] = self.data.ctrl[ll.act_ids]
            mujoco.mj_forward(self.model, self.data)
        return self.data.qpos[ll.qpos_adr].copy()

    def step(self, action: np.ndarray) -> StepResult:
        """Apply one normalised action (4,) for 50 ms; returns obs, named rewards, termination.

        Raises:
            ValueError: action of the wrong shape or not finite.
        """
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (UR5E.action_dim,) or not np.all(np.isfinite(action)):
            raise ValueError(f"action must be finite with shape ({UR5E.action_dim},), got {action.shape} {action}")
        thread = self._thread_forces if self.cfg.task == "table_leg" else None
        self.sim.control_step(self._delay.push(np.clip(action, -1.0, 1.0)), thread)  # the latency shift
        self.steps += 1
        state = self._state()
        self._update_thread(state)
        self._success = self._success or self._is_success(state)
        self._update_funnel(state)
        terms = self._reward_terms(state)
        obs = self._obs()
        truncated = self.steps >= self.max_steps and not self._success
        info = {"success": self._success, "image_rendered": self.cfg.render, **state}
        return StepResult(obs=obs, reward=float(sum(terms.values())), reward_terms=terms,
                          terminated=self._success, truncated=truncated, info=info)

    # -- task state --------------------------------------------------------------------------------
    def _state(self) -> dict[str, float]:
        """Depth, lateral/yaw error in the fixture frame, part contact force (privileged)."""
        tcp, yaw = self.sim.lowlevel.measured(self.data)
        top = self.fixture_pos + np.array([0.0, 0.0, self.cfg.scene.fixture_height_m])
        c, s = math.cos(self.fixture_yaw), math.sin(self.fixture_yaw)
        rel = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]]) @ (tcp - top)  # tip in the fixture frame
        inside = bool(np.all(np.abs(rel[:2]) <= self.hole_half_m + 1e-3))
        depth = max(0.0, -rel[2]) if inside else 0.0
        if self.cfg.task == "peg":  # a square peg fits every quarter turn
            yaw_err = quarter_turn(yaw - self.fixture_yaw)
        else:
            yaw_err = 0.0
        self._max_depth_m = max(self._max_depth_m, depth)
        return {"rel_x_m": float(rel[0]), "rel_y_m": float(rel[1]), "rel_z_m": float(rel[2]), "yaw_err_rad": yaw_err,
                "lateral_m": float(np.hypot(rel[0], rel[1])), "depth_m": float(depth), "yaw_rad": float(yaw),
                "contact_force_n": self._part_contact_force()}

    def _update_funnel(self, state: dict[str, float]) -> None:
        """How far the episode got (see the class docstring); stages only ever switch on."""
        offset = max(abs(state["rel_x_m"]), abs(state["rel_y_m"]))
        at_hole = offset <= self.hole_half_m + 1e-3 and state["rel_z_m"] <= HOLE_REACH_HEIGHT_M
        centred = self.outline_excess_m(offset, 0.0) <= 0.0
        fits = self.outline_excess_m(offset, state["yaw_err_rad"]) <= 0.0
        if self.cfg.task == "peg":
            entered = state["depth_m"] >= ENTRY_DEPTH_M
        else:
            entered = state["depth_m"] >= self.cfg.thread.engage_depth_m - self.cfg.thread.slip_tol_m
        f = self._funnel
        f["reached_hole"] |= at_hole or entered
        f["centred_at_hole"] |= (at_hole and centred) or entered
        f["aligned_at_hole"] |= (at_hole and fits) or entered
        f["entered_hole"] |= entered

    def outline_excess_m(self, offset_m: float, yaw_err_rad: float) -> float:
        """How far the part's outline reaches beyond the hole's (<= 0: it fits), axis-aligned bound.

        ``offset_m``: the larger of the tip's x and y offsets from the hole axis, fixture frame. A square peg
        of half-width a turned by t spans a (|cos t| + |sin t|) from its axis; the round leg spans a.
        """
        a = self.cfg.scene.part_half_width_m
        span = a * (abs(math.cos(yaw_err_rad)) + abs(math.sin(yaw_err_rad))) if self.cfg.task == "peg" else a
        return offset_m + span - self.hole_half_m

    def _part_contact_force(self) -> float:
        """Sum of contact force magnitudes (N) on the part."""
        total, wrench = 0.0, np.zeros(6)
        for i in range(self.data.ncon):
            con = self.data.contact[i]
            if self.part_geom in (con.geom1, con.geom2):
                mujoco.mj_contactForce(self.model, self.data, i, wrench)
                total += float(np.linalg.norm(wrench[:3]))
        return total

    def _update_thread(self, state: dict[str, float]) -> None:
        """Clockwise turns count only while the tip follows the helix (engage depth + pitch per turn)."""
        turned = -(state["yaw_rad"] - self._prev_yaw)  # clockwise from above = negative yaw: screwing in
        self._prev_yaw = state["yaw_rad"]
        if self.cfg.task != "table_leg":
            return
        if abs(state["depth_m"] - self.helix_depth_m()) <= self.cfg.thread.slip_tol_m:
            self.thread_progress_rad = max(0.0, self.thread_progress_rad + turned)

    def _thread_forces(self) -> None:
        """Thread model, every physics step: springs to the helix and hole axis, friction torque."""
        th = self.cfg.thread
        tip = self.data.site_xpos[self.sim.lowlevel.site_id]
        c, s = math.cos(self.fixture_yaw), math.sin(self.fixture_yaw)
        d = tip - self.fixture_pos
        rel_x, rel_y = c * d[0] + s * d[1], -s * d[0] + c * d[1]
        depth = self.cfg.scene.fixture_height_m - d[2]
        xfrc = self.data.xfrc_applied[self.sim.part_body]
        inside = abs(rel_x) <= self.hole_half_m + 1e-3 and abs(rel_y) <= self.hole_half_m + 1e-3
        if not inside or depth < th.engage_depth_m - th.slip_tol_m:
            xfrc[:] = 0.0
            return
        force = np.array([-d[0], -d[1], 0.0]) * th.lateral_stiffness_n_per_m  # towards the hole axis
        force[2] = th.axial_stiffness_n_per_m * (depth - self.helix_depth_m())  # too deep: pushed up
        force = np.clip(force, -th.max_force_n, th.max_force_n)
        spin_rad_s = self.data.cvel[self.sim.part_body][2]  # angular velocity about world z
        torque_z = -th.friction_torque_nm * self.cfg.shift.friction_scale * math.tanh(spin_rad_s / 0.1)
        arm = tip - self.data.xipos[self.sim.part_body]  # the force acts at the tip, xfrc at the COM
        xfrc[:3] = force
        xfrc[3:] = np.cross(arm, force) + np.array([0.0, 0.0, torque_z])

    @property
    def command(self) -> np.ndarray:
        """The task command (3,) float32 (the registered fixture pose), as ``Go2Env.command`` is Go2's."""
        return self.fixture_estimate

    def helix_depth_m(self) -> float:
        """Depth the leg tip must be at for the current thread progress (table leg)."""
        th = self.cfg.thread
        return th.engage_depth_m + th.pitch_m * self.thread_progress_rad / (2 * math.pi)

    def _is_success(self, state: dict[str, float]) -> bool:
        if self.cfg.task == "peg":
            return state["depth_m"] >= self.cfg.success_depth_m
        return self.thread_progress_rad >= self.cfg.thread.turns * 2 * math.pi

    def _reward_terms(self, state: dict[str, float]) -> dict[str, float]:
        """Named, weighted reward terms of this step.

        The shaping terms (distance, alignment, insertion, thread) are costs: each is 0 at its goal and
        down to minus its weight away from it, so every step before success costs something and success
        (+``success``) ends the episode. With them as rewards in [0, w] instead (this env until
        2026-11-30), the robot hovering near the hole earned ~0.6 per step forever, more than the
        success that ended the episode: the expert's value labels fell as it inserted (26 in the hole
        vs 41 at 1-10 cm above it) and the planner learned to fly away from the fixture.
        """
        w = self.cfg.reward
        goal_depth = self.cfg.success_depth_m if self.cfg.task == "peg" else (
            self.cfg.thread.engage_depth_m + self.cfg.thread.pitch_m * self.cfg.thread.turns)
        dist = math.sqrt(state["lateral_m"] ** 2 + (state["rel_z_m"] + goal_depth) ** 2)
        yaw_term = 1.0 - abs(state["yaw_err_rad"]) / (math.pi / 4)
        aligned = (1.0 - math.tanh(state["lateral_m"] / w.alignment_scale_m)) * yaw_term  # 1 = aligned
        terms = {
            "distance": -w.distance * math.tanh(dist / w.distance_scale_m),
            "alignment": -w.alignment * (1.0 - aligned),
            "insertion": -w.insertion * (1.0 - min(float(state["depth_m"]) / goal_depth, 1.0)),
            "success": w.success * float(self._success),
            "contact_force": -w.contact_force * min(max(0.0, state["contact_force_n"] - w.force_free_n)
                                                    / w.force_scale_n, 5.0),
        }
        if self.cfg.task == "table_leg":
            turned = min(self.thread_progress_rad / (self.cfg.thread.turns * 2 * math.pi), 1.0)
            terms["thread"] = -w.thread * (1.0 - turned)
        return terms

    # -- observation / privileged ------------------------------------------------------------------
    def sensors(self, *, image: bool = True) -> dict[str, np.ndarray]:
        """Raw sensors (joint_pos, joint_vel, tcp_pos, tcp_quat, wrench, image), see ``UR5eSim.sensors``."""
        return self.sim.sensors(image=image)

    def _obs(self) -> dict[str, np.ndarray]:
        raw = self.sim.sensors(image=True)
        return {"proprio": proprio_from_sensors(raw), "command": self.command.copy(), "image": raw["image"]}

    def privileged_state(self) -> dict[str, np.ndarray]:
        """True state for experts, value labels and probes.

        ``value_features`` (10,) float32: tip position in the fixture frame relative to the hole top
        (x, y, z) / 5 cm, yaw error (rad, square peg: modulo a quarter turn), depth / success depth,
        lateral error / 1 cm, part contact force / 50 N (capped at 5), thread progress fraction,
        success flag, elapsed fraction of the episode. ``probe`` = ``tcp_pos`` (3,) in the base frame.
        """
        state = self._state()
        raw = self.sim.sensors(image=False)
        turns_frac = self.thread_progress_rad / (self.cfg.thread.turns * 2 * math.pi)
        features = np.array([state["rel_x_m"] / 0.05, state["rel_y_m"] / 0.05, state["rel_z_m"] / 0.05,
                             state["yaw_err_rad"], state["depth_m"] / self.cfg.success_depth_m,
                             state["lateral_m"] / 0.01, min(state["contact_force_n"] / 50.0, 5.0), turns_frac,
                             float(self._success), self.steps / self.max_steps], dtype=np.float32)  # (10,)
        return {
            "tcp_pos": raw["tcp_pos"], "tcp_quat": raw["tcp_quat"], "tcp_yaw": np.array(state["yaw_rad"]),
            "fixture_pos": self.fixture_pos.copy(), "fixture_yaw": np.array(self.fixture_yaw),
            "fixture_estimate": self.fixture_estimate.copy(),
            "insertion_depth": np.array(state["depth_m"]), "lateral_error": np.array(state["lateral_m"]),
            "yaw_error": np.array(state["yaw_err_rad"]), "contact_force": np.array(state["contact_force_n"]),
            "thread_progress": np.array(turns_frac), "target_pos": self.sim.lowlevel.target_pos.copy(),
            "probe": raw["tcp_pos"].astype(np.float32), "value_features": features,
        }

    def metrics(self) -> dict[str, float]:
        """Episode metrics: success, insertion_depth_m (deepest so far), duration_s, thread_turns, funnel.

        The funnel: stages reached, 0 or 1 each (see the class docstring).
        """
        return {"success": bool(self._success), "insertion_depth_m": float(self._max_depth_m),
                "duration_s": self.steps * UR5E.control_dt,
                "thread_turns": self.thread_progress_rad / (2 * math.pi),
                **{k: float(v or self._success) for k, v in self._funnel.items()}}

    def close(self) -> None:
        """Release the renderer."""
        self.sim.close()
