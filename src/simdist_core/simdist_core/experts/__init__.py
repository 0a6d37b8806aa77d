"""Privileged experts per robot, and the registry that builds one for an env.

``make_policy(env, skill, rng)`` looks up ``env.spec.name`` in ``POLICIES`` (one table: robot name ->
"module:factory"); the factory has the signature ``(env, skill, rng, overrides=None) -> Policy``
(``experts.base``; ``overrides``: its config's fields as strings).
``skill`` = 1 is the expert, lower values are its systematically weaker variants (each robot's expert
module documents what degrades). Modules are imported lazily so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from simdist_core.experts.base import Policy

POLICIES: dict[str, str] = {
    "go2": "simdist_core.experts.go2_expert:make_go2_expert",
    "ur5e": "simdist_core.experts.ur5e_expert:make_ur5e_expert",
}
"""Robot name -> ``"module:factory"`` of its expert."""


def make_policy(env: Any, skill: float, rng: np.random.Generator,  # noqa: ANN401  (any RobotEnv)
                overrides: Mapping[str, str] | None = None) -> Policy:
    """The expert (``skill=1``) or a weaker variant for ``env``'s robot, reset on ``env``.

    ``overrides``: fields of the robot's expert config as strings (e.g. ``{"accel_friction_cap": "0.25"}``).

    Raises:
        KeyError: no expert for the robot; the message lists the robots that have one.
        ValueError: ``skill`` outside [0, 1], or an override the robot's expert config does not have or cannot take.
    """
    if not 0.0 <= skill <= 1.0:
        raise ValueError(f"skill must be in [0, 1], got {skill=}")
    robot = env.spec.name
    policy = _factory(robot)(env, skill, rng, overrides=overrides)
    policy.reset(env, rng)
    return policy


def check_overrides(robot: str, overrides: Mapping[str, str]) -> None:
    """Build ``robot``'s expert config with ``overrides`` (no env needed), so a bad key fails before any run.

    Raises:
        KeyError: no expert for the robot.
        ValueError: an override the robot's expert config does not have or cannot take.
    """
    _factory(robot)(None, 1.0, None, overrides=overrides)


def _factory(robot: str) -> Any:  # noqa: ANN401  (the robot's expert factory)
    """``robot``'s expert factory, imported on first use; KeyError (listing the robots that have one) if none."""
    if robot not in POLICIES:
        raise KeyError(f"no expert registered for robot {robot!r}; robots with experts: {sorted(POLICIES)}")
    module_name, factory = POLICIES[robot].split(":")
    return getattr(importlib.import_module(module_name), factory)


__all__ = ["POLICIES", "Policy", "check_overrides", "make_policy"]
