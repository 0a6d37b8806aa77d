"""The contract every simulated task implements, and the task registry.

A task is a MuJoCo scene + robot + reward + termination, stepped at the robot's control rate.
Experts may read ``privileged_state()``; learned components only see ``obs``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from simdist_core.robots import RobotSpec


@dataclass
class StepResult:
    """What one control step returns."""

    obs: dict[str, np.ndarray]
    """Observation after the step (layout in ``simdist_core.robots``)."""
    reward: float
    """Weighted sum of ``reward_terms``."""
    reward_terms: dict[str, float]
    """Named, already-weighted reward terms (logged as ``reward/<term>``)."""
    terminated: bool
    """Episode ended by failure or success (no bootstrapping past it)."""
    truncated: bool
    """Episode ended by the time limit."""
    info: dict[str, Any] = field(default_factory=dict)


class RobotEnv(Protocol):
    """A simulated task at control rate. Implementations live in ``simdist_core.sim``."""

    spec: RobotSpec
    task: str

    def reset(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Randomise (domain randomisation, initial pose, task parameters) and return obs."""

    def step(self, action: np.ndarray) -> StepResult:
        """Apply a normalised action in [-1, 1]^A for one control period."""

    def privileged_state(self) -> dict[str, np.ndarray]:
        """True simulator state for experts, value labels and probes (e.g. ``base_pos``)."""

    def metrics(self) -> dict[str, float]:
        """Task metric of the episode so far (Go2: forward_progress_m, fell; UR5e: success)."""


EnvBuilder = Callable[[Mapping[str, str] | None], RobotEnv]
"""Builds an env from ``--set key=value`` overrides."""

TASKS: dict[str, EnvBuilder] = {}
"""Registry: task id ``"<robot>/<task>"`` -> builder. Filled by the robot modules on import."""


def register_task(task_id: str, builder: EnvBuilder) -> None:
    """Add a task to the registry (called at import time by each robot's task module)."""
    if task_id in TASKS:
        raise ValueError(f"task {task_id!r} registered twice")
    TASKS[task_id] = builder


def make_env(task_id: str, overrides: Mapping[str, str] | None = None) -> RobotEnv:
    """Build the task ``"<robot>/<task>"`` with overrides.

    Raises:
        KeyError: unknown task; the message lists the valid ones.
    """
    import simdist_core.sim.tasks  # noqa: F401  (imports every robot's task module)

    if task_id not in TASKS:
        raise KeyError(f"unknown task {task_id!r}; valid tasks: {sorted(TASKS)}")
    return TASKS[task_id](overrides)
