"""Online observation history: turns a stream of (observation, action) into model input.

Used by closed-loop evaluation and by the ROS encoder node, so the model sees exactly the
window layout the dataset sampler produces offline (see ``simdist_core.robots``).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import torch

from simdist_core.robots import RobotSpec


class ObservationHistory:
    """Fixed-length history of proprio rows and the actions that preceded them.

    Memory is bounded by ``spec.history`` rows. At reset the first observation is repeated to
    fill the window and previous actions are zero, matching the offline sampler's padding.
    """

    def __init__(self, spec: RobotSpec) -> None:
        self.spec = spec
        self._proprio: deque[np.ndarray] = deque(maxlen=spec.history)
        self._actions: deque[np.ndarray] = deque(maxlen=spec.history)
        self._latest: dict[str, np.ndarray] | None = None
        self._pending_action = np.zeros(spec.action_dim, np.float32)

    def reset(self, obs: dict[str, np.ndarray]) -> None:
        """Start a new episode from ``obs`` (fills the window with it)."""
        self._check(obs)
        self._proprio.clear()
        self._actions.clear()
        for _ in range(self.spec.history):
            self._proprio.append(obs["proprio"].astype(np.float32))
            self._actions.append(np.zeros(self.spec.action_dim, np.float32))
        self._latest = obs
        self._pending_action = np.zeros(self.spec.action_dim, np.float32)

    def record_action(self, action: np.ndarray) -> None:
        """Remember the action just sent; it precedes the next observation."""
        action = np.asarray(action, np.float32)
        if action.shape != (self.spec.action_dim,):
            raise ValueError(f"action has shape {action.shape}, expected ({self.spec.action_dim},)")
        self._pending_action = action

    def push(self, obs: dict[str, np.ndarray]) -> None:
        """Append the observation that followed the last recorded action."""
        if self._latest is None:
            self.reset(obs)
            return
        self._check(obs)
        self._proprio.append(obs["proprio"].astype(np.float32))
        self._actions.append(self._pending_action)
        self._latest = obs

    @property
    def ready(self) -> bool:
        """True once at least one observation has been seen."""
        return self._latest is not None

    def model_input(self, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
        """The window as a batch of one, in the layout described in ``simdist_core.robots``."""
        if self._latest is None:
            raise RuntimeError("ObservationHistory.model_input() before any observation was pushed")
        out = {
            "proprio": torch.from_numpy(np.stack(self._proprio))[None],  # (1, T, P)
            "prev_actions": torch.from_numpy(np.stack(self._actions))[None],  # (1, T, A)
        }
        if self.spec.command_dim:
            out["command"] = torch.from_numpy(self._latest["command"].astype(np.float32))[None]
        if self.spec.height_map_shape:
            out["height_map"] = torch.from_numpy(self._latest["height_map"].astype(np.float32))[None]
        if self.spec.image_shape:
            out["image"] = torch.from_numpy(np.ascontiguousarray(self._latest["image"].transpose(2, 0, 1)))[None]
        return {k: v.to(device) for k, v in out.items()}

    def _check(self, obs: dict[str, np.ndarray]) -> None:
        proprio = obs.get("proprio")
        if proprio is None or proprio.shape != (self.spec.proprio_dim,):
            got = None if proprio is None else proprio.shape
            raise ValueError(f"proprio has shape {got}, expected ({self.spec.proprio_dim},)")
        if not np.all(np.isfinite(proprio)):
            raise ValueError("proprio contains non-finite values")
