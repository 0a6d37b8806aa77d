"""Go2 terrains: scene geometry, contact parameters and an exact, cheap height query.

Terrain kinds (registry ``TERRAIN_KINDS``):
    ``flat``   rigid plane, z = 0.
    ``slope``  rigid plane tilted about the world y axis, uphill towards +x: z = x tan(slope).
    ``rough``  rigid height field of smooth random bumps (regenerated each episode); heights are read
               from the same triangles MuJoCo collides with (each cell split along its (r, c)-(r+1, c+1)
               diagonal; matches ``mj_ray`` to 2e-9 m), so no ray casting is needed. The grid is 0.2 m:
               a foot sphere then straddles fewer cell edges, which cuts the contacts per foot and
               makes rough-terrain physics ~1.3x faster than at 0.1 m (measured with the expert).
    ``foam``   memory-foam stand-in: a flat floor with a soft, critically damped contact (the floor has
               contact priority 2 over the feet, ``solref = (-stiffness, -damping)``): feet and body
               sink several cm and do not rebound. Chosen over the spring-tile bed of the notes because
               it is stable at dt 2 ms, ~3x faster, and keeps the walking problem comparable to flat
               ground, so the difference between sim-flat and foam is the contact dynamics (sinking,
               energy loss, delayed support), which is what the dynamics finetuning must learn. It has no
               lasting memory of footprints (documented limitation). The compliance also applies to the contact's
               friction rows, so feet shear a few cm sideways in the foam while loaded (``foot_slip_m`` is higher
               than on rigid ground even though the friction coefficient is the same).

Foot friction is set on the foot geoms (they have contact priority 1 in the Menagerie MJCF, so the
floor's friction is ignored on rigid terrain); on foam the floor's priority 2 wins and its friction is
set to the same value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np

from simdist_core.sim.go2_constants import FLOOR_GEOM_NAME

TerrainKind = Literal["flat", "slope", "rough", "foam"]
TERRAIN_KINDS: tuple[str, ...] = ("flat", "slope", "rough", "foam")

_FLOOR_HALF_SIZE_M = 40.0
TERRAIN_BODY_NAME = "terrain"
_RIGID_SOLREF = (0.02, 1.0)


@dataclass(frozen=True, kw_only=True)
class TerrainConfig:
    """Geometry and contact of one terrain."""

    kind: TerrainKind = "flat"
    """Floor type: rigid ``flat``, rigid ``slope``, rigid ``rough`` bumps or soft ``foam``."""
    slope_deg: float = 0.0
    """Incline of ``slope`` terrain (uphill towards +x); ignored by other kinds."""
    friction: float = 0.8
    """Sliding friction coefficient of foot-ground contacts (Menagerie default 0.8)."""
    restitution_damping_ratio: float = 1.0
    """Damping ratio of rigid foot contacts (MuJoCo solref[1]); < 1 makes them bouncier."""
    rough_amplitude_m: float = 0.03
    """Peak height of the rough terrain's bumps (heights lie in [-amp, +amp])."""
    rough_wavelength_m: float = 0.8
    """Shortest wavelength of the rough terrain's random sinusoids."""
    rough_size_m: float = 44.0
    """Side length of the square rough patch (centred on the origin): 20 s at 1 m/s stays on it."""
    rough_grid_m: float = 0.2
    """Height-field grid spacing. 0.2 m keeps >= 4 cells per shortest wavelength; each halving of the grid
    adds foot-terrain contacts (measured: 0.1 m runs the expert 1.3x slower, 0.05 m another 1.4x)."""
    foam_stiffness: float = 100.0
    """Foam contact stiffness (MuJoCo direct solref, acceleration per metre of penetration)."""
    foam_damping: float = 20.0
    """Foam contact damping (MuJoCo direct solref, acceleration per m/s). 2 sqrt(stiffness) = critically damped:
    no rebound; with the defaults stance feet sink ~2-4.5 cm within one 0.18 s stance while walking."""

    def __post_init__(self) -> None:
        if self.kind not in TERRAIN_KINDS:
            raise ValueError(f"kind must be one of {TERRAIN_KINDS}, got {self.kind=}")
        if not -25.0 <= self.slope_deg <= 25.0:
            raise ValueError(f"slope_deg must be in [-25, 25], got {self.slope_deg=}")
        if not 0.0 < self.friction <= 3.0:
            raise ValueError(f"friction must be in (0, 3], got {self.friction=}")
        if not 0.1 <= self.restitution_damping_ratio <= 2.0:
            raise ValueError(f"restitution_damping_ratio must be in [0.1, 2], got {self.restitution_damping_ratio=}")
        if not 0.0 <= self.rough_amplitude_m <= 0.2:
            raise ValueError(f"rough_amplitude_m must be in [0, 0.2], got {self.rough_amplitude_m=}")
        if not self.rough_wavelength_m >= 4 * self.rough_grid_m:
            raise ValueError(f"rough_wavelength_m must be >= 4 grid cells, got {self.rough_wavelength_m=}")
        if not 4.0 <= self.rough_size_m <= 80.0 or not 0.01 <= self.rough_grid_m <= 0.2:
            raise ValueError(f"bad rough grid: {self.rough_size_m=}, {self.rough_grid_m=}")
        if not self.foam_stiffness > 0 or not self.foam_damping > 0:
            raise ValueError(f"foam stiffness/damping must be > 0, got {self.foam_stiffness=}, {self.foam_damping=}")


def add_terrain(spec: mujoco.MjSpec, config: TerrainConfig) -> None:
    """Add the floor of ``config.kind`` (named ``FLOOR_GEOM_NAME``) and a light to ``spec``."""
    spec.worldbody.add_light(pos=[0.0, 0.0, 4.0], dir=[0.0, 0.0, -1.0], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    if config.kind == "rough":
        n = _rough_cells(config)
        spec.add_hfield(
            name="rough",
            nrow=n,
            ncol=n,
            size=[config.rough_size_m / 2, config.rough_size_m / 2, 2 * _rough_amp(config), 0.1],
            userdata=np.zeros(n * n).tolist(),
        )
        spec.worldbody.add_geom(
            name=FLOOR_GEOM_NAME, type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="rough", pos=[0, 0, -_rough_amp(config)]
        )
        # A plane under the patch keeps a robot that walks off it from falling forever.
        spec.worldbody.add_geom(
            name="outer_floor",
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[_FLOOR_HALF_SIZE_M] * 2 + [0.1],
            pos=[0, 0, -0.2],
        )
        return
    # Slopes are set per episode by rotating a mocap body: MuJoCo does not re-pose world-body geoms at
    # runtime, so a rotated world plane would keep colliding as if flat.
    frame = spec.worldbody.add_body(name=TERRAIN_BODY_NAME, mocap=True)
    floor = frame.add_geom(
        name=FLOOR_GEOM_NAME, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[_FLOOR_HALF_SIZE_M, _FLOOR_HALF_SIZE_M, 0.1]
    )
    floor.friction = [config.friction, 0.02, 0.01]
    if config.kind == "foam":
        floor.priority = 2
        floor.solref = [-config.foam_stiffness, -config.foam_damping]
        floor.solimp = [0.9, 0.95, 0.001, 0.5, 2.0]


def _rough_amp(config: TerrainConfig) -> float:
    return max(config.rough_amplitude_m, 1e-3)


def _rough_cells(config: TerrainConfig) -> int:
    return int(round(config.rough_size_m / config.rough_grid_m)) + 1


class TerrainState:
    """Runtime terrain of one compiled model: per-episode parameters and the height query."""

    def __init__(self, model: mujoco.MjModel, config: TerrainConfig) -> None:
        self.config = config
        self.kind = config.kind
        self.floor_geom_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, FLOOR_GEOM_NAME)
        self._body_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, TERRAIN_BODY_NAME)
        self.slope_deg = 0.0
        self._tan_slope = 0.0
        self._heights: np.ndarray | None = None  # (n, n) metres, rough only
        self._hfield_id = (
            mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_HFIELD, "rough") if config.kind == "rough" else -1
        )

    def configure(self, model: mujoco.MjModel, rng: np.random.Generator, slope_deg: float) -> None:
        """Set this episode's geometry: slope angle, or a new rough height field drawn from ``rng``.

        Takes effect in ``MjData`` at the next ``mj_resetData`` (which copies the mocap body pose).
        """
        if self.kind == "slope":
            self.slope_deg = slope_deg
            self._tan_slope = math.tan(math.radians(slope_deg))
            # Rotate the plane about y by -slope so its height is z = x tan(slope).
            half = -0.5 * math.radians(slope_deg)
            model.body_quat[self._body_id] = [math.cos(half), 0.0, math.sin(half), 0.0]
        elif self.kind == "rough":
            self._heights = _random_bumps(self.config, rng)
            amp = _rough_amp(self.config)
            # MuJoCo stores elevations in [0, 1] scaled by size[2] = 2 amp; the geom sits at z = -amp.
            model.hfield_data[
                model.hfield_adr[self._hfield_id] : model.hfield_adr[self._hfield_id] + self._heights.size
            ] = ((self._heights + amp) / (2 * amp)).ravel()

    def height(self, x_m: np.ndarray | float, y_m: np.ndarray | float) -> np.ndarray:
        """Terrain surface height (m) at world points (any matching shapes; scalars take a fast path)."""
        if np.ndim(x_m) == 0 and np.ndim(y_m) == 0:
            return np.float64(self.height_at(float(x_m), float(y_m)))
        if self.kind == "slope":
            return np.asarray(x_m) * self._tan_slope
        if self.kind == "rough" and self._heights is not None:
            return self._rough_height(np.asarray(x_m), np.asarray(y_m))
        return np.zeros(np.broadcast(x_m, y_m).shape)

    def height_at(self, x_m: float, y_m: float) -> float:
        """Terrain surface height (m) at one world point, without numpy overhead."""
        if self.kind == "slope":
            return x_m * self._tan_slope
        heights = self._heights
        if self.kind != "rough" or heights is None:
            return 0.0
        half = self.config.rough_size_m / 2
        if abs(x_m) >= half or abs(y_m) >= half:
            return -0.2
        n = heights.shape[0]
        col = min((x_m + half) / self.config.rough_grid_m, n - 1.000001)
        row = min((y_m + half) / self.config.rough_grid_m, n - 1.000001)
        c0, r0 = int(col), int(row)
        fc, fr = col - c0, row - r0
        h00 = heights[r0, c0]
        h11 = heights[r0 + 1, c0 + 1]
        if fc >= fr:  # triangle (r0, c0), (r0, c0+1), (r0+1, c0+1)
            return float(h00 + fc * (heights[r0, c0 + 1] - h00) + fr * (h11 - heights[r0, c0 + 1]))
        return float(h00 + fr * (heights[r0 + 1, c0] - h00) + fc * (h11 - heights[r0 + 1, c0]))

    def _rough_height(self, x_m: np.ndarray, y_m: np.ndarray) -> np.ndarray:
        heights = self._heights
        assert heights is not None
        n = heights.shape[0]
        half = self.config.rough_size_m / 2
        # hfield rows run along y, columns along x, both from -half to +half.
        col = np.clip((x_m + half) / self.config.rough_grid_m, 0, n - 1.000001)
        row = np.clip((y_m + half) / self.config.rough_grid_m, 0, n - 1.000001)
        c0 = col.astype(np.int64)
        r0 = row.astype(np.int64)
        fc = col - c0
        fr = row - r0
        h00 = heights[r0, c0]
        h01 = heights[r0, c0 + 1]
        h10 = heights[r0 + 1, c0]
        h11 = heights[r0 + 1, c0 + 1]
        inside = (np.abs(x_m) < half) & (np.abs(y_m) < half)
        # MuJoCo's two triangles per cell (see ``height_at``).
        upper = h00 + fc * (h01 - h00) + fr * (h11 - h01)
        lower = h00 + fr * (h10 - h00) + fc * (h11 - h10)
        value = np.where(fc >= fr, upper, lower)
        return np.where(inside, value, -0.2)

    def params(self) -> dict[str, float]:
        """Scalar terrain parameters for the privileged state."""
        return {
            "terrain_kind_index": float(TERRAIN_KINDS.index(self.kind)),
            "terrain_slope_deg": self.slope_deg,
            "terrain_is_foam": float(self.kind == "foam"),
            "terrain_rough_amplitude_m": self.config.rough_amplitude_m if self.kind == "rough" else 0.0,
        }


def _random_bumps(config: TerrainConfig, rng: np.random.Generator) -> np.ndarray:
    """A smooth random (n, n) height grid in [-amp, amp]: a sum of random plane waves, flat near the start."""
    n = _rough_cells(config)
    axis = np.linspace(-config.rough_size_m / 2, config.rough_size_m / 2, n)
    x, y = np.meshgrid(axis, axis)  # rows along y, columns along x (MuJoCo hfield layout)
    field = np.zeros_like(x)
    for _ in range(12):
        wavelength = config.rough_wavelength_m * rng.uniform(1.0, 3.0)  # =U(1, 3) x shortest wavelength
        angle = rng.uniform(0.0, 2 * np.pi)
        phase = rng.uniform(0.0, 2 * np.pi)
        k = 2 * np.pi / wavelength
        field += np.sin(k * (np.cos(angle) * x + np.sin(angle) * y) + phase)
    field *= config.rough_amplitude_m / max(np.abs(field).max(), 1e-9)
    # Fade to flat within 0.5 m of the origin so the robot starts on level ground.
    fade = np.clip((np.hypot(x, y) - 0.5) / 0.5, 0.0, 1.0)
    return field * fade


def contact_solref(config: TerrainConfig) -> tuple[float, float]:
    """Solref of rigid foot contacts (timeconst, damping ratio)."""
    return (_RIGID_SOLREF[0], config.restitution_damping_ratio)
