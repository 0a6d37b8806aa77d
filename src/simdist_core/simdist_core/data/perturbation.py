"""Contiguous action perturbations: noise bursts separated by clean gaps.

Per episode (the SimDist data recipe):

* with probability ``never_noised_fraction`` (2.5 %) the episode is never perturbed;
* otherwise a per-joint noise std is drawn once, ``std[j] =U(std_min, std_max)`` (0.05–2.5 in
  normalised action units; the executed action is clipped to [-1, 1] *after* the noise is added,
  so large stds mostly produce bang-bang pushes to the joint limits);
* the episode alternates clean gaps and noise bursts, starting with a gap (so the policy reaches
  its steady state before the first push): gap length ``=U{gap_steps_min..gap_steps_max}`` (25–500),
  burst length ``=U{burst_steps_min..burst_steps_max}`` (1–50), both inclusive integer ranges;
* inside a burst the noise is white Gaussian, ``noise[j] ~ N(0, std[j]^2)``, drawn per step.

A schedule is streamed one step at a time because episode lengths are not known in advance
(falls end an episode early). Everything is drawn from the generator handed to ``reset``, so an
episode's perturbations are reproducible from its seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, kw_only=True)
class PerturbationConfig:
    """Parameters of the contiguous perturbation schedule (defaults = the paper's)."""

    burst_steps_min: int = 1
    """Shortest noise burst, control steps (inclusive)."""
    burst_steps_max: int = 50
    """Longest noise burst, control steps (inclusive)."""
    gap_steps_min: int = 25
    """Shortest clean gap between bursts, control steps (inclusive)."""
    gap_steps_max: int = 500
    """Longest clean gap between bursts, control steps (inclusive)."""
    std_min: float = 0.05
    """Smallest per-joint noise std, normalised action units."""
    std_max: float = 2.5
    """Largest per-joint noise std, normalised action units."""
    never_noised_fraction: float = 0.025
    """Probability that an episode gets no perturbation at all."""

    def __post_init__(self) -> None:
        if not 1 <= self.burst_steps_min <= self.burst_steps_max:
            raise ValueError(
                f"need 1 <= burst_steps_min <= burst_steps_max, got {self.burst_steps_min=}, {self.burst_steps_max=}"
            )
        if not 1 <= self.gap_steps_min <= self.gap_steps_max:
            raise ValueError(
                f"need 1 <= gap_steps_min <= gap_steps_max, got {self.gap_steps_min=}, {self.gap_steps_max=}"
            )
        if not 0.0 <= self.std_min <= self.std_max or not np.isfinite(self.std_max):
            raise ValueError(f"need 0 <= std_min <= std_max < inf, got {self.std_min=}, {self.std_max=}")
        if not 0.0 <= self.never_noised_fraction <= 1.0:
            raise ValueError(f"never_noised_fraction must be in [0, 1], got {self.never_noised_fraction=}")


class PerturbationSchedule:
    """Streams (noise, perturbed) for one episode at a time.

    Usage::

        schedule = PerturbationSchedule(PerturbationConfig(), action_dim=12)
        schedule.reset(rng)                       # once per episode
        noise, perturbed = schedule.step()        # once per control step
        executed = np.clip(action + noise, -1, 1)
    """

    def __init__(self, config: PerturbationConfig | None = None, *, action_dim: int) -> None:
        if action_dim < 1:
            raise ValueError(f"action_dim must be >= 1, got {action_dim=}")
        self.config = config if config is not None else PerturbationConfig()
        self.action_dim = action_dim
        self._rng: np.random.Generator | None = None
        self.noised_episode = False
        """Whether the current episode gets any perturbation."""
        self.std = np.zeros(action_dim, np.float32)
        """(A,) per-joint noise std of the current episode (zeros for a never-noised episode)."""
        self._in_burst = False
        self._left = 0  # steps left in the current gap or burst
        self._zero = np.zeros(action_dim, np.float32)

    def reset(self, rng: np.random.Generator) -> None:
        """Start a new episode: decide whether it is noised, draw the stds and the first gap."""
        cfg = self.config
        self._rng = rng
        self.noised_episode = bool(rng.random() >= cfg.never_noised_fraction)
        if self.noised_episode:
            self.std = rng.uniform(cfg.std_min, cfg.std_max, self.action_dim).astype(np.float32)  # =U(0.05, 2.5)
        else:
            self.std = np.zeros(self.action_dim, np.float32)
        self._in_burst = False
        self._left = int(rng.integers(cfg.gap_steps_min, cfg.gap_steps_max + 1))  # =U{25..500}

    def step(self) -> tuple[np.ndarray, bool]:
        """Noise for this control step.

        Returns:
            ``(noise, perturbed)``: noise (A,) float32 to add to the normalised action (zeros
            outside bursts), and whether this step is inside a noise burst.

        Raises:
            RuntimeError: ``step`` before ``reset``.
        """
        if self._rng is None:
            raise RuntimeError("PerturbationSchedule.step() before reset(rng)")
        if not self.noised_episode:
            return self._zero.copy(), False
        if self._left == 0:
            cfg = self.config
            self._in_burst = not self._in_burst
            if self._in_burst:
                self._left = int(self._rng.integers(cfg.burst_steps_min, cfg.burst_steps_max + 1))  # =U{1..50}
            else:
                self._left = int(self._rng.integers(cfg.gap_steps_min, cfg.gap_steps_max + 1))  # =U{25..500}
        self._left -= 1
        if not self._in_burst:
            return self._zero.copy(), False
        noise = (self._rng.standard_normal(self.action_dim) * self.std).astype(np.float32)
        return noise, True


def apply_noise(action: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """The action actually executed: ``clip(action + noise, -1, 1)`` as float32 (A,)."""
    return np.clip(np.asarray(action, np.float32) + noise, -1.0, 1.0).astype(np.float32)
