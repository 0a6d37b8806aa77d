"""The robots' coordinate frames (a ROS TF tree) computed from the MuJoCo model the simulator compiles.

One ``RobotFrames`` per robot holds a compiled model that contains the robot (the simulated robot passes its
env's own model; drivers use ``robot_frames``: Go2 the Menagerie ``go2.xml``, UR5e the insertion scene with
its gripper, welded part and camera, ``ur5e_scene.build_ur5e_model``) and turns joint positions into
parent -> child transforms with MuJoCo's own forward kinematics, so the TF tree, the URDF
(``simdist_core.sim.urdf``) and the simulation share one kinematic description.

Frames (REP 105 / REP 103), per robot:
    Go2   ``odom`` -> ``base_link`` (base pose estimate) -> ``FL_hip`` -> ``FL_thigh`` -> ``FL_calf`` ... and
          ``base_link`` -> ``imu``; ``odom`` -> ``base_yaw``: at the base position, turned by the base heading
          only (the frame of the height map and of the planner's predicted base paths).
    UR5e  ``base`` -> ``shoulder_link`` -> ... -> ``wrist_3_link`` -> ``tool0`` (flange) and -> ``gripper_base_mount``
          -> ``gripper_base`` -> fingers, ``part`` -> ``tcp`` (tip of the held part, the ``odom`` child frame);
          ``base`` -> ``camera_optical_frame`` (the scene camera; x right, y down, z forward, as images are).

A link is a body of the model; MuJoCo body names with ``/`` (the attached gripper) get ``_`` instead. A joint
that turns about a point off its body's origin (the 2F-85 followers) gets a frame of its own there,
``<link>_joint``: a URDF joint turns about its child's origin, and the TF tree matches the URDF frame for frame.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import mujoco
import numpy as np

ODOM_FRAME = "odom"
YAW_FRAME = "base_yaw"
"""Go2: the base position with the base heading only (roll and pitch removed)."""
CAMERA_FRAME = "camera_optical_frame"
"""UR5e scene camera, optical convention (z along the view, x right, y down)."""

_CAM_TO_OPTICAL = np.array([0.0, 1.0, 0.0, 0.0])
"""MuJoCo cameras look along -z with y up; the optical frame is the camera frame turned 180 deg about x."""


@dataclass(frozen=True)
class FrameTransform:
    """Pose of ``child`` in ``parent``: translation (3,) metres and rotation quaternion (w, x, y, z)."""

    parent: str
    child: str
    translation: np.ndarray
    quat_wxyz: np.ndarray


@dataclass(frozen=True, kw_only=True)
class FrameLayout:
    """Which part of a compiled model is the robot, and what its frames are called."""

    robot: str
    root_body: str
    """Body whose subtree is the robot."""
    root_frame: str
    """Frame name of the root body (``base_link`` for the Go2, as REP 105 names a mobile base)."""
    joint_names: tuple[str, ...]
    """Joints in the order of the driver's joint positions (``JointState``); other joints stay at ``qpos0``."""
    site_frames: dict[str, str] = field(default_factory=dict)
    """Model site -> frame name (fixed frames on a link)."""
    camera_frames: dict[str, str] = field(default_factory=dict)
    """Model camera -> optical frame name (a world camera hangs from the root frame)."""
    floating: bool = False
    """The root moves in ``odom`` (Go2); else the root is the world (UR5e base)."""


@dataclass(frozen=True)
class Link:
    """One body of the robot as a URDF link / TF frame."""

    name: str
    parent: str | None
    body_id: int
    joint_id: int | None
    """The body's hinge or slide joint (None: rigidly fixed to its parent, or the root)."""
    joint_frame: str | None = None
    """Frame at the joint's anchor when it is off the body origin (between parent and link), else None."""


class RobotFrames:
    """Forward kinematics of one robot as frame transforms (not thread-safe: one scratch ``MjData``)."""

    def __init__(self, model: mujoco.MjModel, layout: FrameLayout) -> None:
        self.model, self.layout = model, layout
        self.data = mujoco.MjData(model)
        root = model.body(layout.root_body).id
        self.links: list[Link] = []
        names = {root: layout.root_frame}
        for body in range(root, model.nbody):  # MuJoCo numbers bodies depth-first: a subtree is contiguous
            if body != root and model.body_parentid[body] not in names:
                continue
            names[body] = layout.root_frame if body == root else frame_name(model.body(body).name)
            joint = _single_joint(model, body) if body != root else None
            offset = joint is not None and bool(np.any(model.jnt_pos[joint] != 0.0))
            self.links.append(Link(names[body], None if body == root else names[model.body_parentid[body]], body,
                                   joint, f"{names[body]}_joint" if offset else None))  # fmt: skip
        missing = [j for j in layout.joint_names if model.joint(j).bodyid[0] not in names]
        if missing:
            raise ValueError(f"{layout.robot}: joints {missing} are not in the subtree of {layout.root_body!r}")
        self.qpos_adr = np.array([model.jnt_qposadr[model.joint(j).id] for j in layout.joint_names])
        self.site_links = {frame: (model.site(site).id, names[model.site_bodyid[model.site(site).id]])
                           for site, frame in layout.site_frames.items()}  # fmt: skip

    # ---- transforms --------------------------------------------------------------------------------
    def joint_transforms(self, joint_pos: np.ndarray) -> list[FrameTransform]:
        """Transforms of every link with a joint from its parent, at ``joint_pos`` (the layout's joint order)."""
        self._kinematics(joint_pos)
        out = []
        for link in self.links:
            if link.parent is None or link.joint_id is None:
                continue
            if link.joint_frame is None:
                out.append(self._relative(link.parent, link.name, link.body_id))
            else:  # the joint frame: at the joint's anchor, oriented as the body
                anchor = self.data.xanchor[link.joint_id]
                out.append(self._relative(link.parent, link.joint_frame, link.body_id, anchor))
        return out

    def static_transforms(self) -> list[FrameTransform]:
        """Transforms that never change: fixed links, sites, cameras (for ``/tf_static``)."""
        self._kinematics(np.zeros(len(self.layout.joint_names)))
        out = [self._relative(link.parent, link.name, link.body_id) for link in self.links
               if link.parent is not None and link.joint_id is None]  # fmt: skip
        identity = np.array([1.0, 0.0, 0.0, 0.0])
        out += [FrameTransform(link.joint_frame, link.name, -self.model.jnt_pos[link.joint_id], identity)
                for link in self.links if link.joint_frame is not None]  # fmt: skip
        for frame, (site, parent) in self.site_links.items():
            pos, quat = self.site_pose(site)
            out.append(FrameTransform(parent, frame, pos, quat))
        for cam, frame in self.layout.camera_frames.items():
            cid = self.model.camera(cam).id
            if self.model.cam_bodyid[cid] != 0:
                raise ValueError(f"camera {cam!r} must be a world camera (fixed in the root frame)")
            quat = np.zeros(4)
            mujoco.mju_mulQuat(quat, self.model.cam_quat[cid], _CAM_TO_OPTICAL)
            out.append(FrameTransform(self.layout.root_frame, frame, self.model.cam_pos[cid].copy(), quat))
        return out

    def site_pose(self, site_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Pose of a site in its body's frame (position, quaternion wxyz)."""
        return self.model.site_pos[site_id].copy(), self.model.site_quat[site_id].copy()

    def base_transforms(self, base_pos: np.ndarray, base_quat_wxyz: np.ndarray) -> list[FrameTransform]:
        """Floating robots: ``odom`` -> root (the base pose estimate) and ``odom`` -> ``base_yaw``."""
        if not self.layout.floating:
            raise ValueError(f"{self.layout.robot} has a fixed base: no odom transforms")
        pos = np.asarray(base_pos, np.float64).copy()
        quat = np.asarray(base_quat_wxyz, np.float64).copy()
        yaw = yaw_of(quat)
        yaw_quat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        return [FrameTransform(ODOM_FRAME, self.layout.root_frame, pos, quat),
                FrameTransform(ODOM_FRAME, YAW_FRAME, pos.copy(), yaw_quat)]  # fmt: skip

    def all_frames(self) -> set[str]:
        """Every frame this robot's transforms name (for checks)."""
        frames = {link.name for link in self.links} | set(self.site_links) | set(self.layout.camera_frames.values())
        frames |= {link.joint_frame for link in self.links if link.joint_frame is not None}
        return frames | ({ODOM_FRAME, YAW_FRAME} if self.layout.floating else set())

    def _kinematics(self, joint_pos: np.ndarray) -> None:
        joint_pos = np.asarray(joint_pos, np.float64).reshape(-1)
        if joint_pos.shape != self.qpos_adr.shape or not np.all(np.isfinite(joint_pos)):
            raise ValueError(f"{self.layout.robot}: need {self.qpos_adr.size} finite joint positions, got {joint_pos}")
        self.data.qpos[:] = self.model.qpos0
        self.data.qpos[self.qpos_adr] = joint_pos
        mujoco.mj_kinematics(self.model, self.data)

    def _relative(self, parent: str, child: str, body: int, origin: np.ndarray | None = None) -> FrameTransform:
        """Pose of ``body`` in its parent body from the last ``mj_kinematics``; ``origin``: a world point instead."""
        d, up = self.data, self.model.body_parentid[body]
        inv = np.zeros(4)
        mujoco.mju_negQuat(inv, d.xquat[up])
        pos, quat = np.zeros(3), np.zeros(4)
        mujoco.mju_rotVecQuat(pos, (d.xpos[body] if origin is None else origin) - d.xpos[up], inv)
        mujoco.mju_mulQuat(quat, inv, d.xquat[body])
        return FrameTransform(parent, child, pos, quat / np.linalg.norm(quat))


def frame_name(body_name: str) -> str:
    """TF frame of a model body (``/`` of attached models becomes ``_``)."""
    return body_name.replace("/", "_")


def yaw_of(quat_wxyz: np.ndarray) -> float:
    """Heading (rad) of a rotation: the angle of its x axis projected on the ground plane."""
    w, x, y, z = np.asarray(quat_wxyz, np.float64)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _single_joint(model: mujoco.MjModel, body: int) -> int | None:
    """The body's one hinge/slide joint, None if welded; other joint layouts are not robot links here."""
    count = int(model.body_jntnum[body])
    if count == 0:
        return None
    joint = int(model.body_jntadr[body])
    kinds = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    if count > 1 or int(model.jnt_type[joint]) not in kinds:
        raise ValueError(f"body {model.body(body).name!r}: only one hinge or slide joint per link is supported")
    return joint


def layout(robot: str) -> FrameLayout:
    """The frame layout of ``robot`` (``go2`` or ``ur5e``)."""
    if robot == "go2":
        from simdist_core.sim import go2_constants as go2

        return FrameLayout(robot="go2", root_body=go2.ROOT_BODY_NAME, root_frame="base_link",
                           joint_names=go2.JOINT_NAMES, site_frames={go2.IMU_SITE_NAME: "imu"}, floating=True)
    if robot == "ur5e":
        from simdist_core.sim import ur5e_constants as ur5e

        return FrameLayout(robot="ur5e", root_body=ur5e.BASE_BODY, root_frame="base", joint_names=ur5e.ARM_JOINTS,
                           site_frames={"attachment_site": "tool0", ur5e.TCP_SITE: "tcp"},
                           camera_frames={ur5e.SCENE_CAMERA: CAMERA_FRAME})  # fmt: skip
    raise KeyError(f"no frame layout for robot {robot!r}; valid: ['go2', 'ur5e']")


def compiled_model(robot: str) -> mujoco.MjModel:
    """The model the simulator compiles for ``robot`` (its robot part: no terrain for the Go2)."""
    if robot == "go2":
        from simdist_core.sim.assets import go2_xml_path

        return mujoco.MjModel.from_xml_path(str(go2_xml_path()))
    if robot == "ur5e":
        from simdist_core.sim.ur5e_scene import SceneConfig, build_ur5e_model

        return build_ur5e_model(SceneConfig(hide_out_of_view_links=False))  # every link drawn
    raise KeyError(f"no model for robot {robot!r}; valid: ['go2', 'ur5e']")


@functools.cache
def robot_frames(robot: str) -> RobotFrames:
    """``RobotFrames`` of ``robot`` from the model the simulator compiles (cached; one per process)."""
    return RobotFrames(compiled_model(robot), layout(robot))
