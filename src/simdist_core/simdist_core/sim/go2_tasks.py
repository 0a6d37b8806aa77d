"""Registry of the Go2 tasks: one table maps a task id to its default ``Go2EnvConfig``.

=====================  =================================================================================
``go2/flat``           rigid flat ground, foot friction 0.8 (nominal)
``go2/slope``          rigid 10 deg incline (uphill along +x), friction 0.8 (nominal slope)
``go2/rough``          rigid random bumps (+-3 cm, wavelengths 0.8-2.4 m), friction 0.8
``go2/ptfe_slope``     "real world" PTFE sheet: rigid 8 deg incline with foot friction 0.22 (notes: standing
                       needs mu >= tan 8 deg = 0.14; pretraining never goes below 0.4)
``go2/foam``           "real world" memory foam: soft, critically damped floor contact (feet sink 2-4.5 cm)
``go2/pretrain``       mixture of flat / slope (-12..12 deg) / rough with domain randomisation
=====================  =================================================================================

Every field can be overridden: ``make_env("go2/ptfe_slope", {"terrain.friction": "0.2"})``.

Expert (skill 1) on each task, 3 episodes x 20 s, vx ~U(0.3, 1.0) (``simdist bench generate --robot go2``):
progress per episode / falls per minute -- flat 12.6 m / 0; slope 12.5 m / 0; rough 10.9 m / 0;
ptfe_slope 11.6 m / 0 (speed capped at 0.71 m/s; 3.3 m / 5.1 before the expert respected the friction limit);
foam 12.7 m / 0 (foot slip is higher on foam: compliant shear, see ``terrains``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from simdist_core.config import apply_overrides
from simdist_core.sim.base import register_task
from simdist_core.sim.go2 import Go2Env
from simdist_core.sim.go2_config import Go2EnvConfig, RandomizationConfig
from simdist_core.sim.terrains import TerrainConfig

GO2_TASKS: dict[str, Callable[[], Go2EnvConfig]] = {
    "go2/flat": lambda: Go2EnvConfig(terrain=TerrainConfig(kind="flat")),
    "go2/slope": lambda: Go2EnvConfig(terrain=TerrainConfig(kind="slope", slope_deg=10.0)),
    "go2/rough": lambda: Go2EnvConfig(terrain=TerrainConfig(kind="rough")),
    "go2/ptfe_slope": lambda: Go2EnvConfig(terrain=TerrainConfig(kind="slope", slope_deg=8.0, friction=0.22)),
    "go2/foam": lambda: Go2EnvConfig(terrain=TerrainConfig(kind="foam")),
    "go2/pretrain": lambda: Go2EnvConfig(randomization=RandomizationConfig(enabled=True)),
}
"""Task id -> default config builder (a fresh config per call)."""


def go2_task_config(task_id: str, overrides: Mapping[str, str] | None = None) -> Go2EnvConfig:
    """The config of ``task_id`` with dotted string overrides applied.

    Raises:
        KeyError: unknown task (lists the valid ones).
        ValueError: unknown override key or invalid value (from ``apply_overrides`` / ``__post_init__``).
    """
    if task_id not in GO2_TASKS:
        raise KeyError(f"unknown Go2 task {task_id!r}; valid: {sorted(GO2_TASKS)}")
    return apply_overrides(GO2_TASKS[task_id](), dict(overrides or {}))


def make_go2_env(task_id: str, overrides: Mapping[str, str] | None = None) -> Go2Env:
    """Build the Go2 env of ``task_id`` (see ``go2_task_config``)."""
    return Go2Env(task_id, go2_task_config(task_id, overrides))


def _builder(task_id: str) -> Callable[[Mapping[str, str] | None], Go2Env]:
    return lambda overrides: make_go2_env(task_id, overrides)


for _task_id in GO2_TASKS:
    register_task(_task_id, _builder(_task_id), GO2_TASKS[_task_id])
