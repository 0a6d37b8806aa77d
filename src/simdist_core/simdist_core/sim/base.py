"""The contract every simulated task implements, and the task registry.

A task is a MuJoCo scene + robot + reward + termination, stepped at the robot's control rate.
Experts may read ``privileged_state()``; learned components only see ``obs``.
"""

from __future__ import annotations

from collections import deque
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

TASK_CONFIGS: dict[str, Callable[[], Any]] = {}
"""Registry: task id -> a fresh default config of the task (the typed dataclass ``--set`` overrides)."""


class DelayLine:
    """Actions that act ``steps`` control periods after they are sent: the robot's command latency.

    The first ``steps`` periods of an episode apply zeros (each robot's "hold the default" action).
    """

    def __init__(self, steps: int, action_dim: int, dtype: np.typing.DTypeLike = np.float64) -> None:
        self.steps = steps
        self._queue = deque(np.zeros(action_dim, dtype) for _ in range(steps))

    def push(self, action: np.ndarray) -> np.ndarray:
        """Send ``action``; returns the one that acts now (``action`` itself when ``steps`` is 0)."""
        self._queue.append(action)
        return self._queue.popleft()


def draw_steps(rng: np.random.Generator, low: int, high: int) -> int:
    """A whole number of steps =U{low..high}; ``low`` without drawing when the range is closed (keeps the stream)."""
    return int(rng.integers(low, high + 1)) if high > low else low


class UnknownTaskError(KeyError):
    """A task id that is not registered; the message lists the valid ones and suggests the closest."""

    def __str__(self) -> str:
        return str(self.args[0])  # KeyError would print the message in quotes


def register_task(task_id: str, builder: EnvBuilder, config: Callable[[], Any]) -> None:
    """Add a task to the registry (called at import time by each robot's task module).

    Args:
        task_id: ``"<robot>/<task>"``.
        builder: builds the env from overrides.
        config: returns the task's default config (what ``simdist config show <task>`` lists).
    """
    if task_id in TASKS:
        raise ValueError(f"task {task_id!r} registered twice")
    TASKS[task_id] = builder
    TASK_CONFIGS[task_id] = config


def task_ids() -> list[str]:
    """Every registered task id, sorted."""
    import simdist_core.sim.tasks  # noqa: F401  (imports every robot's task module)

    return sorted(TASKS)


def check_task(task_id: str) -> str:
    """``task_id`` if it is registered.

    Raises:
        UnknownTaskError: it is not (lists the valid ones, suggests the closest).
    """
    from simdist_core.cliargs import did_you_mean

    valid = task_ids()
    if task_id not in valid:
        raise UnknownTaskError(f"unknown task {task_id!r}; valid tasks: {', '.join(valid)}"
                               f"{did_you_mean(task_id, valid)}")
    return task_id


def task_config(task_id: str, overrides: Mapping[str, str] | None = None) -> Any:  # noqa: ANN401  (per-robot type)
    """The config of a task with ``--set`` overrides applied, without building the simulator.

    Command lines call it to validate ``--task`` and ``--set`` before any work starts.

    Raises:
        UnknownTaskError: unknown task.
        ValueError: unknown override key or invalid value.
    """
    from simdist_core.config import apply_overrides

    return apply_overrides(TASK_CONFIGS[check_task(task_id)](), dict(overrides or {}))


def make_env(task_id: str, overrides: Mapping[str, str] | None = None) -> RobotEnv:
    """Build the task ``"<robot>/<task>"`` with overrides.

    Raises:
        UnknownTaskError: unknown task; the message lists the valid ones.
    """
    return TASKS[check_task(task_id)](overrides)
