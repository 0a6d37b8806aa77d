"""The policy protocol every expert (and weaker variant) implements."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Policy(Protocol):
    """A controller acting on a ``RobotEnv`` at the robot's control rate.

    Experts may read ``env.privileged_state()`` (and other privileged env methods); the action is always
    the normalised action the env executes, so what a dataset records is exactly what was applied.
    """

    def reset(self, env: Any, rng: np.random.Generator) -> None:  # noqa: ANN401  (any RobotEnv)
        """Clear internal state at the start of an episode (call after ``env.reset``)."""

    def act(self, env: Any) -> np.ndarray:  # noqa: ANN401  (any RobotEnv)
        """Action (A,) float32 in [-1, 1] for the env's current state."""
