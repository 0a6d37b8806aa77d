"""Message <-> array conversion for the SimDist graph (standard message types only).

Anything on DDS can publish, so every ``*_to_*array`` function treats its message as untrusted:
it checks sizes, dtypes, encodings and finiteness and raises ``MessageError`` (a ``ValueError``)
that names the field, what it got and what was expected. Callers skip the message, log throttled and
count it in diagnostics; they never act on it. The ``make_*`` builders are the inverse and are used by
the simulated robot, the planner and the tests. Pure functions: no node, no graph.

Latent wire format (``std_msgs/Float32MultiArray`` on ``topics.LATENT``):
    ``layout.dim[0]``  label ``"stamp"``: ``size`` = observation stamp seconds, ``stride`` = nanoseconds
                       (uint32 each: exact, unlike a float32 in ``data``).
    ``layout.dim[1:]`` one per named block, label ``"<name>[d0,d1,...]"`` (the block's shape),
                       ``size`` = number of elements, ``stride`` = 0 (unused). Blocks are concatenated
                       row-major in ``data`` in dim order, e.g. ``z[64]`` then ``context[51,64]``.

Observation wire format (``topics.OBSERVATION``, encoder -> replay buffer): the latent layout with the blocks
of :func:`observation_shapes`.

Command wire format (``std_msgs/Float64MultiArray`` on ``topics.COMMAND``): ``data`` = the normalised
action, as any forward-command publisher sends it. The planner adds ``layout.dim[0]`` labelled
``"stamp"`` (same encoding as the latent) = the stamp of the observation the command was computed from,
so the robot can measure the observation-to-actuation delay; a command without the stamp (a teleop tool,
``ros2 topic pub``) is just as valid. With its ``send_plan`` parameter on, the planner also sends its plan:
``layout.dim[1]`` labelled ``"plan"``, ``size`` = K rows, ``stride`` = A, and ``data`` = the action followed by
K x A values, row k the action for k periods after the stamp (``read_command``). A robot that applies a command
late applies the row its delay points at instead of repeating the action (``simdist_core.planning.in_flight``);
a consumer that reads ``data`` as one action (a plain forward-command controller) needs ``send_plan`` off.
"""

from __future__ import annotations

import array
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
from builtin_interfaces.msg import Duration as DurationMsg
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PoseStamped, Twist, WrenchStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, Imu, JointState
from simdist_core.data.observed_steps import ObservedStep
from simdist_core.planning.probe import probe_to_positions as probe_to_positions  # re-exported for the nodes
from simdist_core.robots import RobotSpec
from std_msgs.msg import Float32MultiArray, Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from simdist_ros import topics


class MessageError(ValueError):
    """An incoming message is malformed; the text names the field, the value and the expectation."""


# --------------------------------------------------------------------------------------------- helpers
def _finite(name: str, arr: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise MessageError(f"{name} has {bad} non-finite value(s) (NaN/inf); message dropped")
    return arr


def _vector(name: str, values: Sequence[float], size: int, dtype: type = np.float64) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype)
    if arr.shape != (size,):
        raise MessageError(f"{name} has {arr.size} element(s), expected {size}")
    return _finite(name, arr)


def stamp_to_ns(stamp: Time) -> int:
    """``builtin_interfaces/Time`` -> integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def ns_to_stamp(t_ns: int) -> Time:
    """Integer nanoseconds -> ``builtin_interfaces/Time`` (t_ns >= 0)."""
    if t_ns < 0:
        raise ValueError(f"t_ns must be >= 0, got {t_ns}")
    return Time(sec=int(t_ns // 1_000_000_000), nanosec=int(t_ns % 1_000_000_000))


def make_clock(t_ns: int) -> Clock:
    """``rosgraph_msgs/Clock`` for simulated time."""
    return Clock(clock=ns_to_stamp(t_ns))


# ----------------------------------------------------------------------------------------- JointState
def make_joint_state(
    names: Sequence[str], pos_rad: np.ndarray, vel_rad_s: np.ndarray, effort_nm: np.ndarray, t_ns: int
) -> JointState:
    """Build a JointState (absolute positions, MuJoCo joint order)."""
    msg = JointState()
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.name = list(names)
    msg.position = [float(v) for v in pos_rad]
    msg.velocity = [float(v) for v in vel_rad_s]
    msg.effort = [float(v) for v in effort_nm]
    return msg


def joint_state_to_arrays(msg: JointState, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, velocities and efforts in the order of ``names`` (reordered by name if needed).

    Returns:
        ``(pos (J,), vel (J,), effort (J,))`` float64; effort is zeros when the message has none.

    Raises:
        MessageError: missing joints, length mismatch, or non-finite values.
    """
    j = len(names)
    if len(msg.name) != len(msg.position) or len(msg.velocity) != len(msg.position):
        raise MessageError(
            f"joint_states: {len(msg.name)} names, {len(msg.position)} positions, {len(msg.velocity)} velocities; "
            "all three must have the same length"
        )
    index = {n: i for i, n in enumerate(msg.name)}
    missing = [n for n in names if n not in index]
    if missing:
        raise MessageError(f"joint_states lacks joints {missing}; got {list(msg.name)}")
    order = [index[n] for n in names]
    pos = _finite("joint_states.position", np.asarray(msg.position, np.float64)[order])
    vel = _finite("joint_states.velocity", np.asarray(msg.velocity, np.float64)[order])
    if len(msg.effort) == 0:
        effort = np.zeros(j)
    elif len(msg.effort) != len(msg.position):
        raise MessageError(f"joint_states.effort has {len(msg.effort)} values, expected 0 or {len(msg.position)}")
    else:
        effort = _finite("joint_states.effort", np.asarray(msg.effort, np.float64)[order])
    return pos, vel, effort


# ---------------------------------------------------------------------------------------- Imu / Odom
def make_imu(quat_wxyz: np.ndarray, ang_vel_rad_s: np.ndarray, lin_acc_m_s2: np.ndarray, t_ns: int, frame: str) -> Imu:
    """Build an Imu message (orientation as w, x, y, z in core; ROS stores x, y, z, w)."""
    msg = Imu()
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.header.frame_id = frame
    w, x, y, z = (float(v) for v in quat_wxyz)
    msg.orientation.w, msg.orientation.x, msg.orientation.y, msg.orientation.z = w, x, y, z
    msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = (float(v) for v in ang_vel_rad_s)
    msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = (float(v) for v in lin_acc_m_s2)
    return msg


def _quat_wxyz(name: str, q: object) -> np.ndarray:
    quat = _vector(name, [q.w, q.x, q.y, q.z], 4)  # type: ignore[attr-defined]
    norm = float(np.linalg.norm(quat))
    if not 0.9 < norm < 1.1:
        raise MessageError(f"{name} has norm {norm:.3f}, expected a unit quaternion")
    return quat / norm


def imu_to_arrays(msg: Imu) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(quat_wxyz (4,), ang_vel_rad_s (3,), lin_acc_m_s2 (3,))``; raises ``MessageError`` on bad input."""
    av, la = msg.angular_velocity, msg.linear_acceleration
    return (
        _quat_wxyz("imu.orientation", msg.orientation),
        _vector("imu.angular_velocity", [av.x, av.y, av.z], 3),
        _vector("imu.linear_acceleration", [la.x, la.y, la.z], 3),
    )


def make_odom(
    pos_m: np.ndarray,
    quat_wxyz: np.ndarray,
    lin_vel_m_s: np.ndarray,
    ang_vel_rad_s: np.ndarray,
    t_ns: int,
    frame: str = "odom",
    child_frame: str = "base_link",
) -> Odometry:
    """Build an Odometry message (twist in the base frame, as a state estimator reports it)."""
    msg = Odometry()
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.header.frame_id, msg.child_frame_id = frame, child_frame
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = (float(v) for v in pos_m)
    o.w, o.x, o.y, o.z = (float(v) for v in quat_wxyz)
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = (float(v) for v in lin_vel_m_s)
    t.angular.x, t.angular.y, t.angular.z = (float(v) for v in ang_vel_rad_s)
    return msg


def odom_to_arrays(msg: Odometry) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(pos_m (3,), quat_wxyz (4,), lin_vel_m_s (3,), ang_vel_rad_s (3,))``, twist in the base frame."""
    p, t = msg.pose.pose.position, msg.twist.twist
    return (
        _vector("odom.pose.position", [p.x, p.y, p.z], 3),
        _quat_wxyz("odom.pose.orientation", msg.pose.pose.orientation),
        _vector("odom.twist.linear", [t.linear.x, t.linear.y, t.linear.z], 3),
        _vector("odom.twist.angular", [t.angular.x, t.angular.y, t.angular.z], 3),
    )


def make_wrench(force_n: np.ndarray, torque_nm: np.ndarray, t_ns: int, frame: str = "tool0") -> WrenchStamped:
    """Build a WrenchStamped at the tool flange."""
    msg = WrenchStamped()
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.header.frame_id = frame
    f, tq = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z = (float(v) for v in force_n)
    tq.x, tq.y, tq.z = (float(v) for v in torque_nm)
    return msg


def wrench_to_array(msg: WrenchStamped) -> np.ndarray:
    """``(6,)`` force (N) then torque (N m); raises ``MessageError`` on non-finite values."""
    f, t = msg.wrench.force, msg.wrench.torque
    return _vector("wrench", [f.x, f.y, f.z, t.x, t.y, t.z], 6)


def make_fixture_pose(command: Sequence[float], t_ns: int, frame_id: str = "base") -> PoseStamped:
    """PoseStamped of a UR5e task command (x m, y m, yaw rad); z = 0 (the table top)."""
    x, y, yaw = (float(v) for v in command)
    msg = PoseStamped()
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.header.frame_id = frame_id
    msg.pose.position.x, msg.pose.position.y = x, y
    msg.pose.orientation.w, msg.pose.orientation.z = math.cos(yaw / 2), math.sin(yaw / 2)
    return msg


def make_twist_command(command: Sequence[float]) -> Twist:
    """Twist of a Go2 velocity command (vx, vy, yaw rate)."""
    twist = Twist()
    twist.linear.x, twist.linear.y, twist.angular.z = (float(v) for v in command)
    return twist


TASK_COMMAND_TOPICS: dict[str, tuple[str, type]] = {
    "go2": (topics.TASK_COMMAND, Twist),
    "ur5e": (topics.FIXTURE_POSE, PoseStamped),
}
"""Robot -> (topic, message type) of its task command."""


def task_command_to_array(robot: str, msg: Twist | PoseStamped) -> np.ndarray:
    """The robot's task command ``(C,)`` float32 from its command message (see ``TASK_COMMAND_TOPICS``).

    Go2 ``cmd_vel``: vx (m/s), vy (m/s), yaw rate (rad/s). UR5e ``fixture_pose``: hole x, y (m, base frame),
    yaw (rad). The same extractors as recorded bags and the replay buffer use (``simdist_core.data.transitions``).
    """
    from simdist_core.data.transitions import COMMAND_SENSOR, EXTRACTORS, SensorError

    kind = COMMAND_SENSOR[robot]
    try:
        return EXTRACTORS[kind](msg, None)["command"]  # the command extractors do not read the spec
    except (SensorError, AttributeError, TypeError) as exc:
        raise MessageError(f"{kind}: {exc}") from exc


def make_task_command(robot: str, command: Sequence[float], t_ns: int) -> Twist | PoseStamped:
    """The command message of ``robot`` for a task command array (the inverse of ``task_command_to_array``)."""
    return make_twist_command(command) if robot == "go2" else make_fixture_pose(command, t_ns)


# --------------------------------------------------------------------------------------------- Images
def make_height_map(height_m: np.ndarray, t_ns: int, frame: str = "base_link") -> Image:
    """A 32FC1 Image of a (rows, cols) height map in metres."""
    arr = np.ascontiguousarray(height_m, dtype="<f4")
    if arr.ndim != 2:
        raise ValueError(f"height map must be 2-D (rows, cols), got shape {arr.shape}")
    msg = Image(height=arr.shape[0], width=arr.shape[1], encoding="32FC1", is_bigendian=0, step=arr.shape[1] * 4)
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.header.frame_id = frame
    msg.data = arr.tobytes()
    return msg


def _image_bytes(msg: Image, name: str, encoding: str, shape: tuple[int, int], bytes_per_px: int) -> np.ndarray:
    if msg.encoding != encoding:
        raise MessageError(f"{name}: encoding {msg.encoding!r}, expected {encoding!r}")
    if (msg.height, msg.width) != tuple(shape):
        raise MessageError(f"{name}: size {msg.height}x{msg.width}, expected {shape[0]}x{shape[1]}")
    row = msg.width * bytes_per_px
    if msg.step < row or len(msg.data) != msg.step * msg.height:
        raise MessageError(
            f"{name}: step {msg.step} and {len(msg.data)} data bytes do not fit {msg.height}x{msg.width} "
            f"at {bytes_per_px} B/px (need step >= {row}, data = step * height)"
        )
    raw = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.step)[:, :row]
    return np.ascontiguousarray(raw)


def height_map_to_array(msg: Image, shape: tuple[int, int]) -> np.ndarray:
    """``(rows, cols)`` float32 metres from a 32FC1 Image; raises ``MessageError`` on bad input."""
    raw = _image_bytes(msg, "height_map", "32FC1", shape, 4)
    dtype = ">f4" if msg.is_bigendian else "<f4"
    arr = raw.view(dtype).reshape(shape).astype(np.float32)
    return _finite("height_map", arr)


def make_rgb8(image: np.ndarray, t_ns: int, frame: str = "camera") -> Image:
    """An rgb8 Image from a (h, w, 3) uint8 array."""
    arr = np.ascontiguousarray(image)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"rgb8 image must be (h, w, 3) uint8, got {arr.shape} {arr.dtype}")
    msg = Image(height=arr.shape[0], width=arr.shape[1], encoding="rgb8", is_bigendian=0, step=arr.shape[1] * 3)
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.header.frame_id = frame
    msg.data = arr.tobytes()
    return msg


def rgb8_to_array(msg: Image, shape: tuple[int, int]) -> np.ndarray:
    """``(h, w, 3)`` uint8 from an rgb8 Image of size ``shape``; raises ``MessageError`` on bad input."""
    return _image_bytes(msg, "camera image", "rgb8", shape, 3).reshape(shape[0], shape[1], 3)


# ------------------------------------------------------------------------------------------- Commands
def make_float64_array(values: np.ndarray) -> Float64MultiArray:
    """A flat Float64MultiArray (commands, foot contacts)."""
    return Float64MultiArray(data=[float(v) for v in np.ravel(values)])


MAX_PLAN_ROWS = 64
"""Most plan rows a command may carry (a longer plan is refused as malformed)."""


def make_command(action: np.ndarray, obs_t_ns: int, plan: np.ndarray | None = None) -> Float64MultiArray:
    """A forward command stamped with the observation it was computed from (see the module docstring).

    ``plan``: (K, A), row k for k periods after that observation, carried after the action (None: the action only).
    """
    action = np.ravel(action)
    rows = None if plan is None else np.asarray(plan, np.float64).reshape(-1, action.size)
    msg = make_float64_array(action if rows is None else np.concatenate([action, rows.ravel()]))
    stamp = ns_to_stamp(obs_t_ns)
    msg.layout.dim.append(MultiArrayDimension(label="stamp", size=stamp.sec, stride=stamp.nanosec))
    if rows is not None:
        msg.layout.dim.append(MultiArrayDimension(label="plan", size=rows.shape[0], stride=action.size))
    return msg


def make_executed(action: np.ndarray, obs_t_ns: int | None) -> Float64MultiArray:
    """``executed_command``: the action a robot applied in the step its next sensors end.

    Stamped with the observation the command it came from answered (``obs_t_ns`` None: a hold, an unstamped
    command), so the encoder can tell the planner the delay each step really had (``compensate_delay``).
    """
    return make_float64_array(action) if obs_t_ns is None else make_command(action, obs_t_ns)


def command_stamp_ns(msg: Float64MultiArray) -> int | None:
    """The observation stamp a command carries, or None for an unstamped (or malformed-stamp) command."""
    dims = list(msg.layout.dim)
    if not dims or dims[0].label != "stamp" or dims[0].stride >= 1_000_000_000:
        return None
    return int(dims[0].size) * 1_000_000_000 + int(dims[0].stride)


def command_to_array(msg: Float64MultiArray, action_dim: int) -> np.ndarray:
    """Normalised action ``(A,)`` float32 from a forward command (``read_command`` without the plan)."""
    return read_command(msg, action_dim)[0]


def read_command(msg: Float64MultiArray, action_dim: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A forward command's action ``(A,)`` float32 and the plan it carries (None without one).

    The plan is ``(K, A)`` float32, row k for k periods after the command's stamp. Values outside [-1, 1] are
    returned unclipped: the consumer clamps and logs what it clamped.

    Raises:
        MessageError: wrong length (for the plan it says it carries), a malformed plan dimension, non-finite values
            in the action or the plan.
    """
    rows = _plan_rows(msg, action_dim)
    if rows and len(msg.data) != action_dim * (1 + rows):
        raise MessageError(f"joint_command with a {rows}-row plan has {len(msg.data)} element(s), "
                           f"expected {action_dim * (1 + rows)}")
    action = _vector("joint_command", msg.data[:action_dim] if rows else msg.data, action_dim, np.float32)
    if not rows:
        return action, None
    plan = _finite("joint_command plan", np.asarray(msg.data[action_dim:], np.float32))
    return action, plan.reshape(rows, action_dim)


def _plan_rows(msg: Float64MultiArray, action_dim: int) -> int:
    """Rows of the plan ``layout.dim[1]`` announces (0: none)."""
    dims = list(msg.layout.dim)
    if len(dims) < 2 or dims[1].label != "plan":
        return 0
    if not 1 <= dims[1].size <= MAX_PLAN_ROWS or dims[1].stride != action_dim:
        raise MessageError(f"joint_command plan dimension (size {dims[1].size}, stride {dims[1].stride}): "
                           f"expected 1..{MAX_PLAN_ROWS} rows of {action_dim}")
    return int(dims[1].size)


# ------------------------------------------------------------------------------ Latent and observation
_BLOCK = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\[(\d+(?:,\d+)*)\]$")


def make_blocks(blocks: Mapping[str, np.ndarray], obs_t_ns: int) -> Float32MultiArray:
    """Pack named float32 blocks and the source observation time (the latent layout of the module docstring)."""
    msg = Float32MultiArray()
    stamp = ns_to_stamp(obs_t_ns)
    msg.layout.dim.append(MultiArrayDimension(label="stamp", size=stamp.sec, stride=stamp.nanosec))
    parts = []
    for name, block in blocks.items():
        arr = np.ascontiguousarray(block, np.float32)
        shape = ",".join(str(s) for s in arr.shape) or "1"
        msg.layout.dim.append(MultiArrayDimension(label=f"{name}[{shape}]", size=arr.size, stride=0))
        parts.append(arr.ravel())
    # Through bytes: the generated setter copies an array.array of the right type code as it is, but turns a
    # numpy array into one value at a time (0.6 ms for a 3,300-value Go2 latent on the 2-vCPU VM, 3 us this way).
    data = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    msg.data = array.array("f", data.tobytes())
    return msg


def make_latent(blocks: Mapping[str, np.ndarray], obs_t_ns: int) -> Float32MultiArray:
    """A latent message (``topics.LATENT``) from named blocks and the observation stamp."""
    return make_blocks(blocks, obs_t_ns)


def latent_to_arrays(
    msg: Float32MultiArray, expected: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[dict[str, np.ndarray], int]:
    """Unpack a latent message into ``({name: float32 array}, obs_t_ns)`` (see :func:`blocks_to_arrays`)."""
    return blocks_to_arrays(msg, expected, "latent")


def blocks_to_arrays(
    msg: Float32MultiArray, expected: Mapping[str, tuple[int, ...]] | None = None, what: str = "latent"
) -> tuple[dict[str, np.ndarray], int]:
    """Unpack a block message into ``({name: float32 array}, obs_t_ns)``.

    Args:
        msg: the message.
        expected: block name -> shape the consumer needs; extra blocks are ignored, missing or
            mis-shaped ones are errors. ``None`` accepts whatever is announced.
        what: the topic, for error messages.

    Raises:
        MessageError: no stamp, malformed labels, sizes that do not add up, non-finite data.
    """
    dims = list(msg.layout.dim)
    if not dims or dims[0].label != "stamp":
        raise MessageError(f"{what}: layout.dim[0] must be the 'stamp' dimension (size=sec, stride=nanosec)")
    if dims[0].stride >= 1_000_000_000:
        raise MessageError(f"{what}: stamp nanoseconds {dims[0].stride} >= 1e9")
    obs_t_ns = int(dims[0].size) * 1_000_000_000 + int(dims[0].stride)
    data = np.asarray(msg.data, np.float32)
    out: dict[str, np.ndarray] = {}
    offset = 0
    for dim in dims[1:]:
        match = _BLOCK.match(dim.label)
        if match is None:
            raise MessageError(f"{what}: block label {dim.label!r} is not of the form name[d0,d1,...]")
        shape = tuple(int(s) for s in match.group(2).split(","))
        if math.prod(shape) != dim.size or offset + dim.size > data.size:
            raise MessageError(
                f"{what}: block {dim.label} announces {dim.size} values; shape needs {math.prod(shape)}, "
                f"{data.size - offset} left in data"
            )
        out[match.group(1)] = data[offset : offset + dim.size].reshape(shape)
        offset += dim.size
    if offset != data.size:
        raise MessageError(f"{what}: layout covers {offset} values but data has {data.size}")
    for name, shape in (expected or {}).items():
        if name not in out:
            raise MessageError(f"{what}: block {name!r} missing; got {sorted(out)}")
        if out[name].shape != tuple(shape):
            raise MessageError(f"{what}: block {name!r} has shape {out[name].shape}, expected {tuple(shape)}")
    for name, block in out.items():
        _finite(f"{what}.{name}", block)
    return out, obs_t_ns


def observation_shapes(spec: RobotSpec) -> dict[str, tuple[int, ...]]:
    """Blocks of an ``observation`` message for ``spec`` and their shapes."""
    shapes: dict[str, tuple[int, ...]] = {"proprio": (spec.proprio_dim,)}
    if spec.command_dim:
        shapes["command"] = (spec.command_dim,)
    if spec.height_map_shape:
        shapes["height_map"] = tuple(spec.height_map_shape)
    if spec.image_shape:
        shapes["image"] = (*spec.image_shape, 3)
    return {**shapes, "action_before": (spec.action_dim,), "episode_start": (1,), "episode": (1,)}


def make_observation(obs: Mapping[str, np.ndarray], action_before: np.ndarray, obs_t_ns: int, *,
                     episode_start: bool, episode: int) -> Float32MultiArray:
    """An ``observation`` message (``topics.OBSERVATION``): what the encoder appended to the model's history.

    Blocks: the observation arrays (``proprio``, ``command``, ``height_map`` / ``image``: uint8 values are exact
    in float32), ``action_before`` (the executed action that led to it), ``episode_start`` (1 where the
    encoder restarted its history) and ``episode`` (episodes the encoder has started), in the latent layout.
    """
    blocks = {k: np.asarray(v) for k, v in obs.items()}
    blocks.update(action_before=np.asarray(action_before), episode_start=np.array([float(episode_start)]),
                  episode=np.array([float(episode)]))
    return make_blocks(blocks, obs_t_ns)


def observation_to_step(msg: Float32MultiArray, spec: RobotSpec) -> ObservedStep:
    """Decode and check an ``observation`` message (untrusted: any DDS participant may publish one).

    Raises:
        MessageError: a missing or mis-shaped block, non-finite values, an image value that is not a byte,
            a negative or fractional episode counter.
    """
    blocks, t_ns = blocks_to_arrays(msg, observation_shapes(spec), "observation")
    episode = float(blocks["episode"][0])
    if episode < 0 or episode != int(episode):
        raise MessageError(f"observation: episode counter {episode} is not a whole number >= 0")
    obs = {k: blocks[k] for k in ("proprio", "command", "height_map") if k in blocks}
    if "image" in blocks:
        image = blocks["image"]
        if np.any((image < 0) | (image > 255) | (image != np.round(image))):
            raise MessageError("observation: image values must be whole numbers in [0, 255]")
        obs["image"] = image.astype(np.uint8)
    return ObservedStep(obs=obs, action_before=blocks["action_before"], t_ns=t_ns,
                        episode_start=bool(blocks["episode_start"][0] != 0.0), episode=int(episode))


# ------------------------------------------------------------------------------- Plan / visualisation
def make_plan(mean: np.ndarray, names: Sequence[str], dt_s: float, t_ns: int) -> JointTrajectory:
    """A plan ``(H, A)`` as a JointTrajectory, point k at (k+1)·dt.

    Positions as given: joint targets in rad, or normalised actions where the action is not a joint target.
    """
    mean = np.asarray(mean, np.float64)
    if mean.ndim != 2 or mean.shape[1] != len(names):
        raise ValueError(f"plan mean must be (H, {len(names)}), got {mean.shape}")
    msg = JointTrajectory()
    msg.header.stamp = ns_to_stamp(t_ns)
    msg.joint_names = list(names)
    for k, row in enumerate(mean):
        t = (k + 1) * dt_s
        sec = int(t)
        msg.points.append(
            JointTrajectoryPoint(
                positions=[float(v) for v in row],
                time_from_start=DurationMsg(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000),
            )
        )
    return msg


def plan_to_array(msg: JointTrajectory, action_dim: int) -> np.ndarray:
    """``(H, A)`` float64 from a plan message; raises ``MessageError`` on ragged or non-finite points."""
    rows = [p.positions for p in msg.points]
    if any(len(r) != action_dim for r in rows):
        raise MessageError(f"plan: every point needs {action_dim} positions")
    return _finite("plan", np.asarray(rows, np.float64).reshape(len(rows), action_dim))


PLAN_RGBA = (0.1, 0.6, 1.0, 1.0)
"""The plan (MPPI mean) is drawn blue, opaque and twice as wide as the sampled rollouts."""


def return_colors(returns: np.ndarray) -> np.ndarray:
    """(K, 3) RGB per predicted return: red for the lowest of the set, green for the highest (yellow between)."""
    returns = np.asarray(returns, np.float64)
    span = float(returns.max() - returns.min()) if returns.size else 0.0
    t = (returns - returns.min()) / span if span > 0 else np.full(returns.shape, 0.5)
    return np.stack([np.minimum(1.0, 2.0 * (1.0 - t)), np.minimum(1.0, 2.0 * t), np.full(t.shape, 0.1)], axis=1)


def make_rollout_markers(
    paths: Sequence[np.ndarray],
    frame: str,
    t_ns: int,
    returns: Sequence[float] | None = None,
    width_m: float = 0.01,
) -> MarkerArray:
    """A DELETEALL (so rollouts of an earlier, larger set disappear), then one LINE_STRIP per path ``(K, 3)``.

    The first path is the plan (namespace ``plan``); the others are sampled rollouts (namespace
    ``sampled_rollouts``), coloured by their predicted ``returns`` (one per rollout) with ``return_colors``.
    """
    rollouts = len(paths) - 1
    returns = np.asarray(returns if returns is not None else np.zeros(max(rollouts, 0)), np.float64)
    if paths and returns.shape != (rollouts,):
        raise ValueError(f"need one return per sampled rollout ({rollouts}), got {returns.shape}")
    colors = return_colors(returns) if rollouts > 0 else np.zeros((0, 3))
    out = MarkerArray(markers=[Marker(action=Marker.DELETEALL)])
    for i, path in enumerate(paths):
        plan = i == 0
        m = Marker(ns="plan" if plan else "sampled_rollouts", id=i, type=Marker.LINE_STRIP, action=Marker.ADD)
        m.header.stamp = ns_to_stamp(t_ns)
        m.header.frame_id = frame
        m.pose.orientation.w = 1.0
        m.scale.x = 2 * width_m if plan else width_m
        m.color.r, m.color.g, m.color.b = PLAN_RGBA[:3] if plan else (float(c) for c in colors[i - 1])
        m.color.a = PLAN_RGBA[3] if plan else 0.7
        m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in np.asarray(path)]
        out.markers.append(m)
    return out


def markers_to_paths(msg: MarkerArray) -> list[np.ndarray]:
    """Inverse of ``make_rollout_markers``: ``[(K, 3)]`` float64 per drawn marker (plan first)."""
    return [np.asarray([[p.x, p.y, p.z] for p in m.points], np.float64).reshape(-1, 3) for m in msg.markers
            if m.action == Marker.ADD]  # fmt: skip


# -------------------------------------------------------------------------------------------- Diagnostics
_LEVELS = {
    "ok": DiagnosticStatus.OK,
    "warn": DiagnosticStatus.WARN,
    "error": DiagnosticStatus.ERROR,
    "stale": DiagnosticStatus.STALE,
}


def make_status(
    name: str, level: str, message: str, values: Mapping[str, object], hardware_id: str = ""
) -> DiagnosticStatus:
    """A DiagnosticStatus; ``level`` is one of ok, warn, error, stale; floats get 6 significant digits."""
    if level not in _LEVELS:
        raise ValueError(f"unknown diagnostic level {level!r}; valid: {sorted(_LEVELS)}")
    kv = [KeyValue(key=k, value=f"{v:.6g}" if isinstance(v, float) else str(v)) for k, v in values.items()]
    return DiagnosticStatus(level=_LEVELS[level], name=name, message=message, hardware_id=hardware_id, values=kv)


def make_diagnostics(statuses: Sequence[DiagnosticStatus], t_ns: int) -> DiagnosticArray:
    """Wrap statuses in a stamped DiagnosticArray."""
    msg = DiagnosticArray(status=list(statuses))
    msg.header.stamp = ns_to_stamp(t_ns)
    return msg


def status_values(status: DiagnosticStatus) -> dict[str, str]:
    """``{key: value}`` of a DiagnosticStatus (for tests and monitors)."""
    return {kv.key: kv.value for kv in status.values}
