"""Frames and URDF: the TF tree composed from ``RobotFrames`` puts every link where the running simulator has it,
and the generated URDF's own forward kinematics agrees with both (so the URDF cannot drift from the MJCF)."""

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest
from simdist_core.sim.base import make_env
from simdist_core.sim.robot_frames import CAMERA_FRAME, ODOM_FRAME, YAW_FRAME, RobotFrames, robot_frames, yaw_of
from simdist_core.sim.urdf import quat_to_rpy, robot_urdf


def _mat(quat):
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat, np.float64))
    return out.reshape(3, 3)


def compose(transforms, root):
    """{frame: (position, rotation matrix)} in ``root`` from a list of parent -> child transforms (a tree)."""
    poses = {root: (np.zeros(3), np.eye(3))}
    pending = list(transforms)
    while pending:
        progress = [t for t in pending if t.parent in poses]
        assert progress, f"frames not connected to {root}: {[(t.parent, t.child) for t in pending]}"
        for t in progress:
            p, r = poses[t.parent]
            poses[t.child] = (p + r @ t.translation, r @ _mat(t.quat_wxyz))
            pending.remove(t)
    return poses


def _rpy_mat(rpy):
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis_angle(axis, angle):
    quat = np.zeros(4)
    mujoco.mju_axisAngle2Quat(quat, np.asarray(axis, np.float64), angle)
    return _mat(quat)


def urdf_poses(urdf, joint_pos, root):
    """Forward kinematics of a URDF text at ``joint_pos`` {joint name: position}: {link: (position, rotation)}."""
    tree = ET.fromstring(urdf)
    joints = {j.find("child").get("link"): j for j in tree.findall("joint")}
    poses = {}

    def pose(link):
        if link == root:
            return np.zeros(3), np.eye(3)
        if link not in poses:
            j = joints[link]
            p, r = pose(j.find("parent").get("link"))
            origin = j.find("origin")
            t = np.array([float(v) for v in origin.get("xyz").split()])
            rot = _rpy_mat([float(v) for v in origin.get("rpy").split()])
            q = joint_pos.get(j.get("name"), 0.0)
            if j.get("type") in ("revolute", "continuous"):
                rot = rot @ _axis_angle([float(v) for v in j.find("axis").get("xyz").split()], q)
            poses[link] = (p + r @ t, r @ rot)
        return poses[link]

    return {link.get("name"): pose(link.get("name")) for link in tree.findall("link")}


def _assert_pose(got, want_pos, want_rot, what):
    np.testing.assert_allclose(got[0], want_pos, atol=1e-6, err_msg=f"{what} position")
    np.testing.assert_allclose(got[1], want_rot, atol=1e-6, err_msg=f"{what} rotation")


@pytest.mark.parametrize("task", ["go2/flat", "ur5e/peg"])
def test_tf_tree_matches_the_running_simulator(task):
    """Joint positions from the env's own sensors -> frames -> each link where the simulator's bodies are."""
    robot = task.split("/")[0]
    frames = robot_frames(robot)
    env = make_env(task, {})
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(15):  # move away from the reset pose so every joint is off zero
        env.step(rng.uniform(-1, 1, env.spec.action_dim))
    sensors = env.sensors()
    transforms = frames.joint_transforms(sensors["joint_pos"]) + frames.static_transforms()
    if robot == "go2":  # odom is the simulator's world for a simulated Go2 (state estimate = truth)
        transforms += frames.base_transforms(sensors["base_pos"], sensors["imu_quat"])
        poses = compose(transforms, ODOM_FRAME)
        yaw_pos, yaw_rot = poses[YAW_FRAME]
        np.testing.assert_allclose(yaw_pos, sensors["base_pos"])
        np.testing.assert_allclose(yaw_rot[:, 2], [0, 0, 1], atol=1e-12)  # heading only: z stays up
        assert math.isclose(math.atan2(yaw_rot[1, 0], yaw_rot[0, 0]), yaw_of(sensors["imu_quat"]), abs_tol=1e-9)
    else:  # the UR5e base is the world of its scene
        poses = compose(transforms, "base")
    assert set(poses) == frames.all_frames(), "one tree holding every frame the robot names"
    m, d = env.model, env.data
    mujoco.mj_kinematics(m, d)  # the env's body poses are from before its last integration step
    # The 2F-85 finger joints are not measured (no driver reports them): frames behind them stay at their zero pose.
    unmeasured = set()
    for link in frames.links:
        joint = link.joint_id
        driven = joint is None or frames.model.joint(joint).name in frames.layout.joint_names
        if link.parent in unmeasured or not driven:
            unmeasured.add(link.name)
    for link in frames.links:
        if link.name in unmeasured:
            continue
        body = m.body(frames.model.body(link.body_id).name).id
        _assert_pose(poses[link.name], d.xpos[body], d.xmat[body].reshape(3, 3), link.name)
    for site, frame in frames.layout.site_frames.items():
        sid = m.site(site).id
        _assert_pose(poses[frame], d.site_xpos[sid], d.site_xmat[sid].reshape(3, 3), frame)
    if robot == "ur5e":
        cam = m.camera(next(iter(frames.layout.camera_frames))).id
        pos, rot = poses[CAMERA_FRAME]
        cam_rot = d.cam_xmat[cam].reshape(3, 3)
        np.testing.assert_allclose(pos, d.cam_xpos[cam], atol=1e-9)
        # optical frame: z along the view (MuJoCo's -z), y down (MuJoCo's -y), x unchanged
        np.testing.assert_allclose(rot, cam_rot @ np.diag([1.0, -1.0, -1.0]), atol=1e-9)
    # The simulated robot builds its frames and URDF from this live model; drivers from robot_frames(): the same.
    assert robot_urdf(RobotFrames(env.model, frames.layout)) == robot_urdf(frames)
    close = getattr(env, "close", None)
    if close:
        close()


@pytest.mark.parametrize("robot", ["go2", "ur5e"])
def test_urdf_kinematics_match_the_mjcf(robot, tmp_path):
    """The URDF generated from the compiled MJCF puts every link and fixed frame where MuJoCo does."""
    frames = robot_frames(robot)
    urdf = robot_urdf(frames, tmp_path)
    tree = ET.fromstring(urdf)
    links = [link.get("name") for link in tree.findall("link")]
    assert len(links) == len(set(links)), "link names must be unique"
    children = [j.find("child").get("link") for j in tree.findall("joint")]
    assert sorted(children) == sorted(set(links) - {frames.layout.root_frame}), "a tree rooted at the base"
    meshes = [Path(m.get("filename").removeprefix("file://")) for m in tree.iter("mesh")]
    assert meshes and all(p.is_file() and p.stat().st_size > 84 for p in meshes)
    assert robot_urdf(frames, tmp_path) == urdf, "regenerating reuses the same mesh files"

    rng = np.random.default_rng(1)
    names = frames.layout.joint_names
    for _ in range(3):
        ranges = np.array([frames.model.joint(n).range for n in names])
        q = rng.uniform(np.maximum(ranges[:, 0], -3.0), np.minimum(ranges[:, 1], 3.0))
        want = compose(frames.joint_transforms(q) + frames.static_transforms(), frames.layout.root_frame)
        got = urdf_poses(urdf, dict(zip(names, q, strict=True)), frames.layout.root_frame)
        assert set(want) <= set(got)
        for frame, (pos, rot) in want.items():
            _assert_pose(got[frame], pos, rot, f"{robot} {frame}")


def test_quat_to_rpy_round_trips():
    rng = np.random.default_rng(2)
    for _ in range(50):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        np.testing.assert_allclose(_rpy_mat(quat_to_rpy(quat)), _mat(quat), atol=1e-9)


def test_joint_positions_are_checked():
    with pytest.raises(ValueError, match="12 finite joint positions"):
        robot_frames("go2").joint_transforms(np.zeros(11))
    with pytest.raises(ValueError, match="fixed base"):
        robot_frames("ur5e").base_transforms(np.zeros(3), np.array([1.0, 0, 0, 0]))
