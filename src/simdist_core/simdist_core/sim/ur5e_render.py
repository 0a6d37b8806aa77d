"""Offscreen camera for the UR5e scene that works whatever GL backend mujoco picked at import.

``mujoco.Renderer`` takes its GL backend from ``MUJOCO_GL`` once, when mujoco is first imported.
``make_env`` imports the Go2 tasks (and mujoco) before the UR5e ones, so a process without
``MUJOCO_GL=egl`` in its environment got GLFW, which fails without a display. This camera creates
its own EGL context (software EGL works headless), so rendering
does not depend on import order. Shadows and reflections are off and multisampling is 0: ~60-80 FPS
at 64x64 on this CPU instead of 4-5.
"""

from __future__ import annotations

import os

import numpy as np

from simdist_core.sim.ur5e_scene import mujoco


class OffscreenCamera:
    """Renders one fixed camera of ``model`` to an (h, w, 3) uint8 array; reuse it for every frame."""

    def __init__(self, model: mujoco.MjModel, camera: str, height: int, width: int) -> None:
        backend = os.environ.get("MUJOCO_GL", "egl").lower() or "egl"
        if backend != "egl":  # the user chose another backend (osmesa, glfw): mujoco's own renderer uses it
            self._renderer: mujoco.Renderer | None = mujoco.Renderer(model, height, width)
            self._camera = camera
            self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
            self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
            return
        from mujoco.egl import GLContext

        self._renderer = None
        self._model = model
        self._gl = GLContext(width, height)
        self._gl.make_current()
        self._context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._context)
        self._scene = mujoco.MjvScene(model, maxgeom=1000)
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self._option = mujoco.MjvOption()
        self._cam = mujoco.MjvCamera()
        self._cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._cam.fixedcamid = model.camera(camera).id
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._rgb = np.zeros((height, width, 3), dtype=np.uint8)

    def render(self, data: mujoco.MjData) -> np.ndarray:
        """RGB image (h, w, 3) uint8 of the current state."""
        if self._renderer is not None:
            self._renderer.update_scene(data, camera=self._camera)
            return self._renderer.render().copy()
        self._gl.make_current()  # several envs in one process each own a context
        mujoco.mjv_updateScene(self._model, data, self._option, None, self._cam, mujoco.mjtCatBit.mjCAT_ALL,
                               self._scene)
        mujoco.mjr_render(self._rect, self._scene, self._context)
        mujoco.mjr_readPixels(self._rgb, None, self._rect, self._context)
        return np.flipud(self._rgb).copy()  # OpenGL rows start at the bottom

    def close(self) -> None:
        """Free the GL resources."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        elif getattr(self, "_gl", None) is not None:
            self._context.free()
            self._gl.free()
            self._gl = None
