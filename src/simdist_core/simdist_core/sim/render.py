"""Offscreen rendering of any task's scene from a free camera, with extra geoms and a text overlay.

Used for videos (``simdist eval --video``), never on the control path: frames are rendered from saved
simulator states into their own ``MjData``. Like ``ur5e_render.OffscreenCamera`` it makes its own GL
context (EGL unless ``MUJOCO_GL`` names another backend), so it works headless whatever backend mujoco
picked at import. Shadows, reflections and multisampling are off: ~30 FPS for the Go2 at 640x360 on a CPU
instead of 4-5.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np


@dataclass(frozen=True, kw_only=True)
class Marker:
    """A polyline (or a single sphere) drawn into the scene."""

    points_m: np.ndarray
    """(K, 3) world points; consecutive points are joined by capsules of ``radius_m``."""
    rgba: tuple[float, float, float, float]
    """Colour and opacity."""
    radius_m: float = 0.01
    """Capsule radius; the points themselves get spheres of 1.5x this radius when ``dots``."""
    dots: bool = False
    """Also draw a sphere at every point."""
    line: bool = False
    """Draw one-pixel lines instead of capsules (cheap: floor grids)."""


def _gl_context(width: int, height: int) -> object:
    backend = os.environ.get("MUJOCO_GL", "egl").lower() or "egl"
    if backend == "osmesa":
        from mujoco.osmesa import GLContext
    elif backend == "glfw":
        from mujoco.glfw import GLContext
    else:  # egl also works headless on a CPU (software EGL)
        from mujoco.egl import GLContext
    return GLContext(width, height)


class SceneRenderer:
    """Renders ``model`` from a free camera to (h, w, 3) uint8 frames; reuse it for every frame."""

    def __init__(self, model: mujoco.MjModel, height: int, width: int, max_extra_geoms: int = 2000) -> None:
        # The offscreen buffer is sized by the model's visual settings: grow it if the frame is larger.
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        model.vis.quality.offsamples = 0
        self._model = model
        self._gl = _gl_context(width, height)
        self._gl.make_current()
        self._context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._context)
        self._scene = mujoco.MjvScene(model, maxgeom=model.ngeom + max_extra_geoms)
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self._option = mujoco.MjvOption()
        self.camera = mujoco.MjvCamera()
        """Free camera: set ``lookat``, ``distance``, ``azimuth``, ``elevation`` before ``render``."""
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._rgb = np.zeros((height, width, 3), dtype=np.uint8)

    def render(self, data: mujoco.MjData, markers: Sequence[Marker] = (), text: str = "",
               footer: str = "") -> np.ndarray:  # fmt: skip
        """RGB image (h, w, 3) uint8 of ``data`` (kinematics already computed) with markers.

        ``text`` is a caption in the top-left corner, ``footer`` one line in the bottom-left one.
        """
        self._gl.make_current()
        mujoco.mjv_updateScene(self._model, data, self._option, None, self.camera, mujoco.mjtCatBit.mjCAT_ALL,
                               self._scene)
        for marker in markers:
            self._add(marker)
        mujoco.mjr_render(self._rect, self._scene, self._context)
        for grid, words in ((mujoco.mjtGridPos.mjGRID_TOPLEFT, text), (mujoco.mjtGridPos.mjGRID_BOTTOMLEFT, footer)):
            if words:
                mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL, grid, self._rect, words, "", self._context)
        mujoco.mjr_readPixels(self._rgb, None, self._rect, self._context)
        return np.flipud(self._rgb).copy()  # OpenGL rows start at the bottom

    def _add(self, marker: Marker) -> None:
        pts = np.asarray(marker.points_m, np.float64).reshape(-1, 3)
        rgba = np.asarray(marker.rgba, np.float32)
        for i in range(len(pts)):
            if (marker.dots or len(pts) == 1) and not marker.line:
                self._geom(mujoco.mjtGeom.mjGEOM_SPHERE, rgba, pos=pts[i], radius=1.5 * marker.radius_m)
            if i and np.linalg.norm(pts[i] - pts[i - 1]) > 1e-6:  # a zero-length capsule has no direction
                kind = mujoco.mjtGeom.mjGEOM_LINE if marker.line else mujoco.mjtGeom.mjGEOM_CAPSULE
                self._geom(kind, rgba, ends=(pts[i - 1], pts[i]), radius=1.0 if marker.line else marker.radius_m)

    def _geom(self, kind: int, rgba: np.ndarray, *, radius: float, pos: np.ndarray | None = None,
              ends: tuple[np.ndarray, np.ndarray] | None = None) -> None:  # fmt: skip
        scene = self._scene
        if scene.ngeom >= scene.maxgeom:  # a full scene drops the rest of the markers rather than failing
            return
        geom = scene.geoms[scene.ngeom]
        mujoco.mjv_initGeom(geom, kind, np.array([radius, radius, radius]), np.zeros(3) if pos is None else pos,
                            np.eye(3).reshape(-1), rgba)
        if ends is not None:
            mujoco.mjv_connector(geom, kind, radius, ends[0], ends[1])
        geom.emission = 0.7  # markers keep their colour in the shade of the robot
        geom.category = mujoco.mjtCatBit.mjCAT_DECOR
        scene.ngeom += 1

    def close(self) -> None:
        """Free the GL resources (safe to call twice)."""
        if self._gl is not None:
            self._gl.make_current()
            self._context.free()
            self._gl.free()
            self._gl = None
