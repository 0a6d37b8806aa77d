"""Videos of evaluation episodes: the robot, the path its plan predicted, and the path it really took.

Rendering stays off the control path. While an episode runs, ``EpisodeRecorder`` only copies the
simulator state (every ``stride``-th control step) and the plan's predicted path; frames are rendered
after the episode from those copies, into a copy of the model and a ``MjData`` of their own, so an
evaluation gives the same numbers with and without a video (a test checks it).

Drawn into the scene: the predicted path of the plan executed at that step (blue, dots at each
predicted step: the probe head's decoding of the planned latents, ``planning/probe.py``), the path
the robot really took over the same horizon (orange), and its recent trail (grey). Go2: the base;
UR5e: the tool tip.
"""

from __future__ import annotations

import copy
import math
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from simdist_core.planning.probe import probe_to_world
from simdist_core.sim.base import RobotEnv, StepResult
from simdist_core.sim.render import Marker, SceneRenderer

PREDICTED_RGBA = (0.1, 0.55, 1.0, 1.0)
ACTUAL_RGBA = (1.0, 0.55, 0.1, 1.0)
TRAIL_RGBA = (0.85, 0.85, 0.85, 0.8)
GRID_RGBA = (0.45, 0.45, 0.45, 1.0)
LEGEND = "blue: predicted by the plan   orange: what happened   grey: trail"


@dataclass(frozen=True, kw_only=True)
class VideoConfig:
    """What ``--video`` renders."""

    width: int = 640
    """Frame width in pixels (even: H.264 in yuv420p needs it)."""
    height: int = 360
    """Frame height in pixels (even)."""
    fps: float = 25.0
    """Target frame rate; frames are every ``round(control_hz / fps)``-th control step."""
    episodes: int = 1
    """Episodes recorded (the first ones of the evaluation)."""
    trail_s: float = 3.0
    """Seconds of past path drawn behind the robot."""

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if value < 16 or value % 2:
                raise ValueError(f"{name} must be an even number >= 16, got {value}")
        if not 0 < self.fps <= 100:
            raise ValueError(f"fps must be in (0, 100], got {self.fps=}")
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes=}")
        if self.trail_s < 0:
            raise ValueError(f"trail_s must be >= 0, got {self.trail_s=}")

    def stride(self, control_hz: float) -> int:
        """Control steps per frame."""
        return max(1, round(control_hz / self.fps))


@dataclass
class EpisodeRecording:
    """What one episode needs to be rendered later: the scene, states at frame steps, paths."""

    model: mujoco.MjModel
    """A copy of the model as configured for the episode (terrain, fixture, randomised domain)."""
    probe_kind: str
    """``RobotSpec.probe`` of the robot."""
    control_dt_s: float
    """Seconds per control step."""
    label: str
    """Shown in the frame's top-left corner."""
    frame_steps: list[int] = field(default_factory=list)
    """Control step of each frame."""
    states: list[np.ndarray] = field(default_factory=list)
    """Full physics state (``mjSTATE_FULLPHYSICS``) at each frame step, before its action."""
    predicted_m: list[np.ndarray | None] = field(default_factory=list)
    """(H + 1, 3) world path predicted by the plan of each frame step (None: the planner fell back)."""
    tracked_m: list[np.ndarray] = field(default_factory=list)
    """(3,) the base (Go2) or tool tip (UR5e) after every control step; index 0 = after reset."""
    ground: GroundGrid | None = None
    """Terrain heights around the start (legged robots): paths are drawn on the ground, with a grid."""


@dataclass(frozen=True)
class GroundGrid:
    """Terrain heights sampled on a square lattice, to draw on uneven ground without the simulator."""

    origin_m: np.ndarray
    """(2,) world x, y of sample [0, 0]."""
    spacing_m: float
    """Lattice spacing."""
    heights_m: np.ndarray
    """(nx, ny) terrain height at ``origin + spacing * (i, j)``."""

    @classmethod
    def sample(cls, height_fn: Callable[[np.ndarray, np.ndarray], np.ndarray], centre_m: np.ndarray,
               half_width_m: float = 12.0, spacing_m: float = 0.25) -> GroundGrid:  # fmt: skip
        """Sample ``height_fn(x, y)`` on a lattice centred on ``centre_m`` (2,)."""
        n = int(round(2 * half_width_m / spacing_m)) + 1
        origin = np.asarray(centre_m[:2], np.float64) - half_width_m
        gx, gy = np.meshgrid(origin[0] + spacing_m * np.arange(n), origin[1] + spacing_m * np.arange(n), indexing="ij")
        heights = np.asarray(height_fn(gx.ravel(), gy.ravel()), np.float64).reshape(n, n)
        return cls(origin_m=origin, spacing_m=spacing_m, heights_m=heights)

    def height(self, xy_m: np.ndarray) -> np.ndarray:
        """Terrain height (K,) at points (K, 2), nearest sample (clamped at the lattice's edge)."""
        idx = np.rint((np.asarray(xy_m)[:, :2] - self.origin_m) / self.spacing_m).astype(int)
        idx = np.clip(idx, 0, np.array(self.heights_m.shape) - 1)
        return self.heights_m[idx[:, 0], idx[:, 1]]

    def on_ground(self, points_m: np.ndarray, lift_m: float = 0.03) -> np.ndarray:
        """``points_m`` (K, 3) moved down (or up) to ``lift_m`` above the terrain."""
        out = np.array(points_m, np.float64).reshape(-1, 3)
        out[:, 2] = self.height(out) + lift_m
        return out

    def lines(self, centre_m: np.ndarray, half_width_m: float = 3.0, every_m: float = 0.5) -> list[np.ndarray]:
        """Grid lines (each (K, 3)) on the terrain around ``centre_m``: the floor's motion cue."""
        c = np.rint(np.asarray(centre_m[:2]) / every_m) * every_m
        ticks = np.arange(-half_width_m, half_width_m + 1e-9, every_m)
        along = np.arange(-half_width_m, half_width_m + 1e-9, self.spacing_m)
        out = []
        for t in ticks:
            for pts in (np.stack([c[0] + along, np.full_like(along, c[1] + t)], 1),
                        np.stack([np.full_like(along, c[0] + t), c[1] + along], 1)):  # fmt: skip
                out.append(self.on_ground(np.column_stack([pts, np.zeros(len(pts))]), lift_m=0.004))
        return out


def _tracked_point(env: RobotEnv) -> np.ndarray:
    """Where the probe's path lives: the tool tip for a ``tcp_position`` probe, else the floating base."""
    data = env.data  # type: ignore[attr-defined]
    if env.spec.probe == "tcp_position":
        return data.site_xpos[env.sim.lowlevel.site_id].copy()  # type: ignore[attr-defined]
    return data.qpos[0:3].copy()


def _yaw(quat_wxyz: np.ndarray) -> float:
    w, x, y, z = quat_wxyz
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


class EpisodeRecorder:
    """Collects ``EpisodeRecording``s through ``run_episode``'s callbacks; reads the simulator, never writes it."""

    def __init__(self, cfg: VideoConfig, label: str = "") -> None:
        self.cfg = cfg
        self.label = label
        """First words of each frame's caption, e.g. the task and the model; the seed is added."""
        self.recordings: list[EpisodeRecording] = []

    def wants(self, episode: int) -> bool:
        """Whether episode ``episode`` (0-based) of an evaluation is to be recorded."""
        return episode < self.cfg.episodes

    def hooks(self, env: RobotEnv, seed: int) -> dict[str, Callable[..., None]]:
        """``on_reset``, ``on_plan`` and ``on_step`` callbacks for one ``run_episode`` of ``env`` on ``seed``."""
        label = f"{self.label}  seed {seed}".strip()
        model, data = env.model, env.data  # type: ignore[attr-defined]
        control_dt_s = 1.0 / env.spec.control_hz
        stride = self.cfg.stride(env.spec.control_hz)
        state_size = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        rec: EpisodeRecording | None = None

        def on_reset(_obs: dict[str, np.ndarray]) -> None:
            nonlocal rec
            start = _tracked_point(env)
            height_fn = getattr(env, "terrain_height", None)
            rec = EpisodeRecording(model=copy.deepcopy(model), probe_kind=env.spec.probe, control_dt_s=control_dt_s,
                                   label=label, tracked_m=[start],
                                   ground=GroundGrid.sample(height_fn, start) if height_fn is not None else None)
            self.recordings.append(rec)

        def on_plan(plan_out: Any) -> None:  # noqa: ANN401  (PlanResult, or whatever the planner returns)
            step = len(rec.tracked_m) - 1
            if step % stride:
                return
            state = np.empty(state_size)
            mujoco.mj_getState(model, data, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
            rec.frame_steps.append(step)
            rec.states.append(state)
            probe = getattr(plan_out, "probe", None)
            if probe is None or getattr(plan_out, "fallback", None):
                rec.predicted_m.append(None)
            else:
                rec.predicted_m.append(probe_to_world(probe, env.spec.probe, control_dt_s, _tracked_point(env),
                                                      _yaw(data.qpos[3:7])))

        def on_step(_obs: dict[str, np.ndarray], _action: np.ndarray, _result: StepResult) -> None:
            rec.tracked_m.append(_tracked_point(env))

        return {"on_reset": on_reset, "on_plan": on_plan, "on_step": on_step}


def _camera(renderer: SceneRenderer, rec: EpisodeRecording, point: np.ndarray) -> None:
    cam = renderer.camera
    if rec.probe_kind == "tcp_position":  # the arm: a fixed view of its workspace, centred on the start
        cam.lookat[:] = rec.tracked_m[0]
        cam.distance, cam.azimuth, cam.elevation = 1.5, 145.0, -25.0
    else:  # the legged base: follow it from behind and to the side
        cam.lookat[:] = (point[0], point[1], 0.25)
        cam.distance, cam.azimuth, cam.elevation = 2.1, 150.0, -28.0


def render_recording(rec: EpisodeRecording, cfg: VideoConfig) -> list[np.ndarray]:
    """Frames (h, w, 3) uint8 of one recorded episode, in order."""
    renderer = SceneRenderer(rec.model, cfg.height, cfg.width)
    data = mujoco.MjData(rec.model)
    tracked = np.asarray(rec.tracked_m)  # (steps + 1, 3)
    trail = max(1, round(cfg.trail_s / rec.control_dt_s))
    frames = []
    try:
        for step, state, predicted in zip(rec.frame_steps, rec.states, rec.predicted_m, strict=True):
            mujoco.mj_setState(rec.model, data, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
            mujoco.mj_forward(rec.model, data)
            place = rec.ground.on_ground if rec.ground is not None else np.asarray
            markers = [Marker(points_m=line, rgba=GRID_RGBA, line=True) for line in
                       (rec.ground.lines(tracked[step]) if rec.ground is not None else [])]
            markers.append(Marker(points_m=place(tracked[max(0, step - trail): step + 1]), rgba=TRAIL_RGBA,
                                  radius_m=0.006))
            if predicted is not None:
                horizon = len(predicted) - 1
                markers.append(Marker(points_m=place(tracked[step: step + horizon + 1]), rgba=ACTUAL_RGBA,
                                      radius_m=0.012))
                markers.append(Marker(points_m=place(predicted), rgba=PREDICTED_RGBA, radius_m=0.012, dots=True))
            _camera(renderer, rec, tracked[step])
            text = f"{rec.label}\nt {step * rec.control_dt_s:4.1f} s"
            frames.append(renderer.render(data, markers, text, LEGEND if cfg.width >= 480 else ""))
    finally:
        renderer.close()
    return frames


def side_by_side(left: Sequence[np.ndarray], right: Sequence[np.ndarray], gap_px: int = 4) -> list[np.ndarray]:
    """Frames of two episodes next to each other; the shorter one holds its last frame (a fall ends early)."""
    if not left or not right:
        raise ValueError(f"side_by_side needs frames on both sides, got {len(left)} and {len(right)}")
    gap = np.zeros((left[0].shape[0], gap_px, 3), np.uint8)
    n = max(len(left), len(right))
    return [np.hstack([left[min(i, len(left) - 1)], gap, right[min(i, len(right) - 1)]]) for i in range(n)]


def write_side_by_side(path: Path, left: EpisodeRecording, right: EpisodeRecording, cfg: VideoConfig) -> Path:
    """Render two recorded episodes (e.g. shipped and adapted model, same seed) next to each other into ``path``."""
    if left.control_dt_s != right.control_dt_s:
        raise ValueError(f"side by side needs one control rate, got {left.control_dt_s} and {right.control_dt_s}")
    fps = 1.0 / (cfg.stride(1.0 / left.control_dt_s) * left.control_dt_s)  # real time
    return write_video(path, side_by_side(render_recording(left, cfg), render_recording(right, cfg)), fps)


def write_video(path: Path, frames: Sequence[np.ndarray], fps: float) -> Path:
    """Write ``frames`` (h, w, 3) uint8 as H.264 ``.mp4`` (plays in browsers) or as an animated ``.gif``.

    Raises:
        ValueError: no frames, frames of different sizes, odd sizes, or another file extension.
    """
    import imageio_ffmpeg

    suffix = path.suffix.lower()
    if suffix not in (".mp4", ".gif"):
        raise ValueError(f"video path must end in .mp4 or .gif, got {str(path)!r}")
    if not frames:
        raise ValueError("write_video: no frames")
    h, w = frames[0].shape[:2]
    if h % 2 or w % 2 or any(f.shape != (h, w, 3) for f in frames):
        raise ValueError(f"write_video: frames must all be (h, w, 3) with even h and w, first is {frames[0].shape}")
    path.parent.mkdir(parents=True, exist_ok=True)
    mp4 = path if suffix == ".mp4" else Path(tempfile.mkdtemp()) / "frames.mp4"
    writer = imageio_ffmpeg.write_frames(str(mp4), (w, h), fps=fps, codec="libx264", pix_fmt_out="yuv420p",
                                         macro_block_size=2, output_params=["-movflags", "+faststart"])
    writer.send(None)  # the generator starts ffmpeg on its first send
    for frame in frames:
        writer.send(np.ascontiguousarray(frame))
    writer.close()
    if suffix == ".gif":  # one palette for the whole clip keeps a GIF small and its colours right
        palette = "split[a][b];[a]palettegen=max_colors=64[p];[b][p]paletteuse=dither=bayer"
        subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-i", str(mp4),
                        "-vf", palette, str(path)], check=True)  # fmt: skip
        mp4.unlink()
        mp4.parent.rmdir()
    return path


def read_video(path: Path) -> tuple[dict[str, Any], list[np.ndarray]]:
    """(ffmpeg's metadata, frames (h, w, 3) uint8) of a video file: how the tests check what was written."""
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    w, h = meta["size"]
    return meta, [np.frombuffer(buf, np.uint8).reshape(h, w, 3) for buf in reader]
